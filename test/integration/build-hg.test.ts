/**
 * fetchHgRepository against a real SSH server (ssh2) running the real `hg serve --stdio`, with
 * the real OpenSSH client and hg: keys, clone, pull, the head rules, committers, safe errors,
 * and no repository config or hooks from an earlier build.
 */
import { existsSync, statSync } from 'node:fs';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { mkdir, mkdtemp, readFile, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GitPullError } from '../../src/steps/checkout/git';
import { scratchBase } from '../../src/steps/checkout/scmProcess';
import { fetchHgRepository, isHgSshUrl, isSafeHgName, type FetchHgRepositoryInput } from '../../src/steps/checkout/hg';
import { mirrorPath } from '../../src/steps/checkout/mirror';
import { generateRepoKeyPair, type RepoKeyPair } from '../../src/ssh/keys';
import { createHgRepo, hg, hgBookmark, hgCommit, hgNode, hgTag } from '../support/hgRepo';
import { parseHgCommand, startSshGitServer, type SshGitServer } from '../support/sshGitServer';

const ALICE = { name: 'Alice', email: 'alice@example.test' };
const BOB = { name: 'Bob', email: 'bob@example.test' };

let server: SshGitServer;
let key: RepoKeyPair;
let tmp: string;
let repo: string;
let first: string;
let workdirCount = 0;

const freshWorkdir = () => join(tmp, `work-${++workdirCount}`);
const pull = (overrides: Partial<FetchHgRepositoryInput> = {}) =>
  fetchHgRepository({
    pullUrl: server.hgUrl(repo),
    privateKey: key.privateKey,
    workdir: freshWorkdir(),
    branch: 'default',
    head: 'tip',
    ...overrides,
  });

/** Our scratch dirs (key files live in them), in this file's own TMPDIR (see beforeAll; scratchBase reads it). */
const keyDirs = async () => (await readdir(scratchBase())).filter((n) => n.startsWith('sluice-hg-'));
const savedTmpdir = process.env.TMPDIR;

async function sshProcessesTo(port: number): Promise<string[]> {
  const found: string[] = [];
  for (const pid of (await readdir('/proc')).filter((n) => /^\d+$/.test(n))) {
    const cmdline = (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).split('\0');
    if (cmdline[0] === 'ssh' && cmdline.includes(String(port))) found.push(pid);
  }
  return found;
}

async function expectPullError(promise: Promise<unknown>): Promise<GitPullError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(GitPullError);
  return error as GitPullError;
}

beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'sluice-build-hg-'));
  // fetchHgRepository makes its key directories in os.tmpdir(): a directory of this file's
  // own, so other test runs on the machine can't come and go in it while we count.
  await mkdir(join(tmp, 'tmp'));
  process.env.TMPDIR = join(tmp, 'tmp');
  key = generateRepoKeyPair('sluice:test/hgrepo');
  server = await startSshGitServer({ authorizedKeys: [key.publicKey] });
  repo = join(tmp, 'repo');
  first = await createHgRepo(
    repo,
    {
      'README.md': { content: '# hello\n' },
      'tests/pass.sh': { content: '#!/bin/sh\nexit 0\n', mode: 0o755 },
    },
    'first commit\n\nwith a body',
    { author: ALICE },
  );
});

afterAll(async () => {
  if (savedTmpdir === undefined) delete process.env.TMPDIR;
  else process.env.TMPDIR = savedTmpdir;
  await server.close();
  await rm(tmp, { recursive: true, force: true });
});

describe('the test SSH server speaks hg', () => {
  it('parses what hg asks the remote side to run, and nothing else', () => {
    expect(parseHgCommand('hg -R /srv/repo serve --stdio')).toEqual({ path: '/srv/repo' });
    expect(parseHgCommand(`hg -R '/srv/it'\\''s repo' serve --stdio`)).toEqual({ path: "/srv/it's repo" });
    for (const bad of ['hg -R srv/repo serve --stdio', 'hg -R /srv/repo serve --stdio; id', 'hg -R /x serve', 'hg serve --stdio', 'sh -c id']) {
      expect(parseHgCommand(bad)).toBeNull();
    }
  });
});

describe('fetchHgRepository over SSH', () => {
  it('clones with the authorized key and updates to the tip of the branch', async () => {
    const workdir = freshWorkdir();
    const before = await keyDirs();
    const result = await pull({ workdir });

    expect(result).toEqual({ commitId: first, committers: [ALICE.email], message: 'first commit\n\nwith a body' });
    expect(result.commitId).toMatch(/^[0-9a-f]{40}$/);
    expect(await readFile(join(workdir, 'README.md'), 'utf8')).toBe('# hello\n');
    expect(server.commands).toContain(`hg -R ${repo} serve --stdio`);
    expect(await keyDirs()).toEqual(before);
  });

  it('fails with a clear error for a key the server does not know, and never shows the key', async () => {
    const stranger = generateRepoKeyPair('stranger');
    const before = await keyDirs();
    const error = await expectPullError(pull({ privateKey: stranger.privateKey }));

    expect(error.message).toMatch(/^could not pull from ssh:\/\/hg@127\.0\.0\.1:\d+\/\/.*repo: .*Permission denied \(publickey\)/);
    expect(error.reason).toBe('denied');
    expect(error.retryable).toBe(false);
    const text = `${error.message}\n${error.stack ?? ''}`;
    expect(text).not.toContain('PRIVATE KEY');
    expect(text).not.toContain('sluice-hg-');
    for (const line of stranger.privateKey.split('\n').filter((l) => l && !l.startsWith('-----'))) {
      expect(text).not.toContain(line.slice(0, 16));
    }
    expect(await keyDirs()).toEqual(before);
  });

  it('pulls new changesets into an existing working copy and lists the committers since the last build', async () => {
    const workdir = freshWorkdir();
    const base = await pull({ workdir });
    await hgCommit(repo, { 'b.txt': { content: 'b\n' } }, 'second', { author: BOB });
    const third = await hgCommit(repo, { 'c.txt': { content: 'c\n' }, 'README.md': null }, 'third [no ci]', { author: ALICE });
    await writeFile(join(workdir, 'leftover.tmp'), 'x');
    await writeFile(join(workdir, 'tests', 'pass.sh'), 'modified by a test\n');

    const result = await pull({ workdir, since: base.commitId });

    expect(result.commitId).toBe(third);
    expect(result.message).toBe('third [no ci]');
    expect(result.committers).toEqual([ALICE.email, BOB.email]);
    expect(existsSync(join(workdir, 'b.txt'))).toBe(true);
    expect(existsSync(join(workdir, 'README.md'))).toBe(false);
    // Untracked files are gone, tracked ones are as committed.
    expect(existsSync(join(workdir, 'leftover.tmp'))).toBe(false);
    expect(await readFile(join(workdir, 'tests', 'pass.sh'), 'utf8')).toBe('#!/bin/sh\nexit 0\n');

    // An unknown `since` falls back to the head's author.
    expect((await pull({ workdir, since: 'f'.repeat(40) })).committers).toEqual([ALICE.email]);
  });

  it('checks out a given head: a changeset id, full or short', async () => {
    const workdir = freshWorkdir();
    await pull({ workdir });
    const old = await pull({ workdir, head: first });
    expect(old.commitId).toBe(first);
    expect(await readFile(join(workdir, 'README.md'), 'utf8')).toBe('# hello\n');
    expect((await pull({ workdir, head: first.slice(0, 12) })).commitId).toBe(first);
  });

  it('checks out a given head: a branch, a bookmark, a tag; tip follows the branch', async () => {
    const workdir = freshWorkdir();
    const tip = await pull({ workdir });

    const feature = await hgCommit(repo, { 'f.txt': { content: 'f\n' } }, 'feature work', { author: BOB, branch: 'feature-x' });
    expect((await pull({ workdir, head: 'feature-x' })).commitId).toBe(feature);
    expect(await readFile(join(workdir, 'f.txt'), 'utf8')).toBe('f\n');

    await hgBookmark(repo, 'pinned', first);
    expect((await pull({ workdir, head: 'pinned' })).commitId).toBe(first);

    await hgTag(repo, 'v1', first);
    expect((await pull({ workdir, head: 'v1' })).commitId).toBe(first);

    // `tip` follows the suite's branch, not whatever changeset came last (the feature commit).
    const defaultTip = (await pull({ workdir })).commitId;
    expect(defaultTip).not.toBe(feature);
    expect(await hg(repo, ['log', '-r', defaultTip, '-T', '{branch}'])).toBe('default');
    expect(tip.commitId).not.toBe(defaultTip); // the tag added a changeset on default
    // ... and on the feature branch's suite, `tip` is that branch's tip.
    expect((await pull({ workdir, branch: 'feature-x' })).commitId).toBe(feature);
    // HEAD (a git habit) means the same as tip.
    expect((await pull({ workdir, head: 'HEAD' })).commitId).toBe(defaultTip);
  });

  it('follows a bookmark as the branch when there is one', async () => {
    const workdir = freshWorkdir();
    const side = await hgCommit(repo, { 'side.txt': { content: 's\n' } }, 'on a bookmark', { branch: 'default' });
    await hgBookmark(repo, 'release', side);
    const later = await hgCommit(repo, { 'later.txt': { content: 'l\n' } }, 'later');
    expect((await pull({ workdir, branch: 'release' })).commitId).toBe(side);
    expect((await pull({ workdir })).commitId).toBe(later);
  });

  it('says what is missing: branch, head, repository', async () => {
    const noBranch = await expectPullError(pull({ branch: 'master' }));
    expect(noBranch.message).toMatch(/branch 'master' not found/);
    expect(noBranch.reason).toBe('missing-ref');

    const noHead = await expectPullError(pull({ head: 'e'.repeat(40) }));
    expect(noHead.message).toMatch(/head 'e{40}' not found/);
    expect(noHead.reason).toBe('missing-ref');

    const noRepo = await expectPullError(pull({ pullUrl: server.hgUrl(join(tmp, 'missing')) }));
    expect(noRepo.message).toMatch(/repository .*missing not found/);
    expect(noRepo.reason).toBe('not-found');
  });

  it('reports an unreachable server as retryable', async () => {
    const gone = await startSshGitServer({ authorizedKeys: [] });
    const url = gone.hgUrl(repo);
    await gone.close();
    const error = await expectPullError(pull({ pullUrl: url }));
    expect(error.message).toMatch(/Connection refused/);
    expect(error.retryable).toBe(true);
  });

  it('gives up on a server that never answers after timeoutMs, and stops when aborted', async () => {
    const sockets = new Set<Socket>();
    const silent = createServer((socket) => sockets.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as AddressInfo;
    const pullUrl = `ssh://hg@127.0.0.1:${port}//repo`;
    try {
      const before = await keyDirs();
      let started = Date.now();
      const timedOut = await expectPullError(pull({ pullUrl, timeoutMs: 1000 }));
      expect(Date.now() - started).toBeLessThan(5000);
      expect(timedOut.message).toBe(`could not pull from ${pullUrl}: hg timed out after 1000 ms`);
      expect(timedOut.retryable).toBe(true);

      const controller = new AbortController();
      setTimeout(() => controller.abort(), 300);
      started = Date.now();
      const aborted = await expectPullError(pull({ pullUrl, signal: controller.signal }));
      expect(Date.now() - started).toBeLessThan(5000);
      expect(aborted.reason).toBe('aborted');
      expect(await keyDirs()).toEqual(before);
      await new Promise((r) => setTimeout(r, 100));
      expect(await sshProcessesTo(port)).toEqual([]);
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  it('refuses non-SSH URLs and option-like or quoted names before running hg', async () => {
    expect(isHgSshUrl(server.hgUrl(repo))).toBe(true);
    expect(isSafeHgName('default')).toBe(true);
    const commands = server.commands.length;
    for (const pullUrl of [`file://${repo}`, repo, `git@127.0.0.1:${repo}`, 'ssh://-oProxyCommand=id/x', `http://127.0.0.1/${repo}`]) {
      expect((await expectPullError(pull({ pullUrl }))).reason).toBe('invalid-input');
    }
    for (const name of ['--config=hooks.x=id', 'a"b', "a'b", 'null', '.', 'a b', 'x::y']) {
      expect((await expectPullError(pull({ head: name }))).reason).toBe('invalid-input');
      expect((await expectPullError(pull({ branch: name }))).reason).toBe('invalid-input');
    }
    expect(server.commands.length).toBe(commands);
  });

  it('ignores config and hooks planted in the working copy by an earlier build', async () => {
    const workdir = freshWorkdir();
    await pull({ workdir });
    const marker = join(tmp, 'hook-ran');
    await writeFile(
      join(workdir, '.hg', 'hgrc'),
      `[hooks]\npre-pull = touch '${marker}'\npreupdate = touch '${marker}'\nupdate = touch '${marker}'\n[extensions]\nbroken = /nonexistent/ext.py\n`,
    );
    await hgCommit(repo, { 'd.txt': { content: 'd\n' } }, 'fourth');
    const result = await pull({ workdir });
    expect(result.message).toBe('fourth');
    expect(existsSync(marker)).toBe(false);
    expect(existsSync(join(workdir, '.hg', 'hgrc'))).toBe(false);
  });

  it('refuses subrepositories rather than fetching them', async () => {
    const sub = join(tmp, 'with-sub');
    await createHgRepo(sub, { 'a.txt': { content: 'a\n' } }, 'first');
    await hgCommit(sub, { '.hgsub': { content: `nested = ${join(tmp, 'elsewhere')}\n` }, '.hgsubstate': { content: `${'1'.repeat(40)} nested\n` } }, 'add a subrepo');
    const error = await expectPullError(pull({ pullUrl: server.hgUrl(sub) }));
    expect(error.message).toMatch(/could not update to [0-9a-f]{40}: .*subrepo/);
  });

  it('recovers from a half-made .hg left by an interrupted first pull, and replaces a git checkout', async () => {
    const workdir = freshWorkdir();
    await pull({ workdir });
    await rm(join(workdir, '.hg', 'store'), { recursive: true });
    await rm(join(workdir, '.hg', 'requires'));
    await expect(pull({ workdir })).resolves.toMatchObject({ commitId: expect.stringMatching(/^[0-9a-f]{40}$/) });

    // A .hg replaced by a link to another repository is not followed.
    const other = join(tmp, 'other-hg');
    await createHgRepo(other, { 'other.txt': { content: 'other\n' } }, 'another repository');
    await rm(join(workdir, '.hg'), { recursive: true });
    await symlink(join(other, '.hg'), join(workdir, '.hg'));
    const relinked = await pull({ workdir });
    expect(relinked.message).not.toBe('another repository');
    expect(existsSync(join(other, '.hg', 'store'))).toBe(true);
    expect(existsSync(join(workdir, 'other.txt'))).toBe(false);

    // A repository switched from git to hg: the old .git is untracked, and purged.
    await writeFile(join(workdir, '.git'), 'gitdir: /nowhere\n');
    await pull({ workdir });
    expect(existsSync(join(workdir, '.git'))).toBe(false);
  });
});

describe('through the runner’s mirror (issue 39)', () => {
  let mirrored: string;
  let mirrors: string;
  const serves = () => server.commands.filter((c) => c === `hg -R ${mirrored} serve --stdio`).length;
  const viaMirror = (overrides: Partial<FetchHgRepositoryInput> = {}) =>
    fetchHgRepository({ pullUrl: server.hgUrl(mirrored), privateKey: key.privateKey, workdir: freshWorkdir(), branch: 'default', head: 'tip', mirror: { dir: mirrors, key: '7' }, ...overrides });

  beforeAll(async () => {
    mirrored = join(tmp, 'mirrored');
    mirrors = join(tmp, 'mirrors');
    await createHgRepo(mirrored, { 'a.txt': { content: 'one\n' } }, 'first', { author: ALICE });
    for (let i = 0; i < 5; i++) await hgCommit(mirrored, { [`f${i}.txt`]: { content: `${i}\n` } }, `commit ${i}`, { author: BOB });
  });

  it('asks the server once for a build’s first working copy, then makes four more of its changeset from the mirror, hard-linked', async () => {
    const before = serves();
    const lead = await viaMirror();
    expect(lead.commitId).toBe(await hgNode(mirrored, 'tip'));
    const workdirs = [1, 2, 3, 4].map(() => freshWorkdir());
    const workers = await Promise.all(workdirs.map((workdir) => viaMirror({ workdir, head: lead.commitId })));
    expect(workers.map((w) => w.commitId)).toEqual(Array(4).fill(lead.commitId));
    expect(serves() - before).toBe(1);
    for (const w of workdirs) expect(await readFile(join(w, 'f4.txt'), 'utf8')).toBe('4\n');
    // The working copies' history is the mirror's files, linked; and they name no mirror.
    const mirror = mirrorPath(mirrors, '7', server.hgUrl(mirrored), 'hg');
    expect(statSync(join(mirror, '.hg', 'store', '00changelog.i')).nlink).toBeGreaterThan(1);
    expect(existsSync(join(workdirs[0]!, '.hg', 'hgrc'))).toBe(false);
  });

  it('a later pull into the mirror leaves an earlier working copy whole; the branch’s tip always asks the server', async () => {
    const earlier = freshWorkdir();
    const old = await viaMirror({ workdir: earlier });
    const newer = await hgCommit(mirrored, { 'g.txt': { content: 'new\n' } }, 'newer', { author: ALICE });
    const before = serves();
    const now = await viaMirror();
    expect(now.commitId).toBe(newer);
    expect(serves() - before).toBe(1);
    expect(await hg(earlier, ['log', '--rev', '.', '--template', '{node}'])).toBe(old.commitId);
    expect(await hg(earlier, ['verify', '--quiet'])).toBe('');
  });

  it('makes a mirror whose history cannot be read anew, and throws one whose files are corrupt away: the pull never fails', async () => {
    const mirror = mirrorPath(mirrors, '7', server.hgUrl(mirrored), 'hg');
    const tip = await hgNode(mirrored, 'tip');
    // Its changelog garbage: the mirror is started over, from the server, in the same pull.
    await writeFile(join(mirror, '.hg', 'store', '00changelog.i'), 'not a revlog');
    expect((await viaMirror()).commitId).toBe(tip);
    expect(await hg(mirror, ['verify', '--quiet'])).toBe('');
    // A file's history garbage (hg finds out only when it updates to it): thrown away, the pull goes to the server.
    await writeFile(join(mirror, '.hg', 'store', 'data', 'f4.txt.i'), 'not a revlog either');
    const workdir = freshWorkdir();
    expect((await viaMirror({ workdir })).commitId).toBe(tip);
    expect(await readFile(join(workdir, 'f4.txt'), 'utf8')).toBe('4\n');
    expect(existsSync(mirror)).toBe(false);
    await viaMirror();
    expect(await hg(mirror, ['verify', '--quiet'])).toBe('');
  });
});
