/**
 * fetchRepository against a real SSH git server (ssh2 + the real git binaries) with the real
 * OpenSSH client: keys, clone, fetch, checkout of a given head, and safe errors.
 */
import { existsSync } from 'node:fs';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fetchRepository, GitPullError, type FetchRepositoryInput } from '../../src/steps/checkout/git';
import { scratchBase } from '../../src/steps/checkout/scmProcess';
import { generateRepoKeyPair, type RepoKeyPair } from '../../src/ssh/keys';
import { createBareRepo, git, pushCommit } from '../support/gitRepo';
import { startSshGitServer, type SshGitServer } from '../support/sshGitServer';

const ALICE = { name: 'Alice', email: 'alice@example.test' };
const BOB = { name: 'Bob', email: 'bob@example.test' };

let server: SshGitServer;
let key: RepoKeyPair;
let tmp: string;
let bare: string;
let first: string;
let workdirCount = 0;

const freshWorkdir = () => join(tmp, `work-${++workdirCount}`);
const pull = (overrides: Partial<FetchRepositoryInput> = {}) =>
  fetchRepository({
    pullUrl: server.url(bare),
    privateKey: key.privateKey,
    workdir: freshWorkdir(),
    branch: 'master',
    head: 'HEAD',
    ...overrides,
  });

/** Our scratch dirs (key files live in them), in this file's own TMPDIR (see beforeAll; scratchBase reads it). */
const keyDirs = async () => (await readdir(scratchBase())).filter((n) => n.startsWith('sluice-git-'));
const savedTmpdir = process.env.TMPDIR;

/** Live ssh processes whose command line mentions `port` (zombies don't count). */
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
  tmp = await mkdtemp(join(tmpdir(), 'sluice-build-git-'));
  // fetchRepository makes its key directories in os.tmpdir(): a directory of this file's own,
  // so other test runs on the machine can't come and go in it while we count.
  await mkdir(join(tmp, 'tmp'));
  process.env.TMPDIR = join(tmp, 'tmp');
  key = generateRepoKeyPair('sluice:test/repo');
  server = await startSshGitServer({ authorizedKeys: [key.publicKey] });
  bare = join(tmp, 'repo.git');
  first = await createBareRepo(
    bare,
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

describe('fetchRepository over SSH', () => {
  it('clones with the authorized key and checks out the branch tip', async () => {
    const workdir = freshWorkdir();
    const before = await keyDirs();
    const started = Date.now();
    const result = await pull({ workdir });
    const elapsed = Date.now() - started;

    expect(result).toEqual({ commitId: first, committers: [ALICE.email], message: 'first commit\n\nwith a body' });
    expect(await readFile(join(workdir, 'README.md'), 'utf8')).toBe('# hello\n');
    expect(server.commands).toContain(`git-upload-pack '${bare}'`);
    // The key's temp dir is gone once the call returns.
    expect(await keyDirs()).toEqual(before);
    // A loopback clone takes ~200 ms; this only guards against something pathological.
    expect(elapsed).toBeLessThan(15_000);
  });

  it('fails with a clear error for a key the server does not know, and never shows the key', async () => {
    const stranger = generateRepoKeyPair('stranger');
    const before = await keyDirs();
    const error = await expectPullError(pull({ privateKey: stranger.privateKey }));

    expect(error.message).toMatch(/^could not pull from ssh:\/\/git@127\.0\.0\.1:\d+\/.*repo\.git: .*Permission denied \(publickey\)/);
    expect(error.reason).toBe('denied');
    expect(error.retryable).toBe(false);
    const text = `${error.message}\n${error.stack ?? ''}`;
    expect(text).not.toContain('PRIVATE KEY');
    expect(text).not.toContain('sluice-git-');
    const body = stranger.privateKey.split('\n').filter((l) => l && !l.startsWith('-----'));
    for (const line of body) {
      expect(text).not.toContain(line);
      expect(text).not.toContain(line.slice(0, 16));
    }
    expect(await keyDirs()).toEqual(before);
  });

  it('follows the authorized key list (a key revoked at the SCM stops working)', async () => {
    server.setAuthorizedKeys([]);
    try {
      expect((await expectPullError(pull())).reason).toBe('denied');
    } finally {
      server.setAuthorizedKeys([key.publicKey]);
    }
    await expect(pull()).resolves.toMatchObject({ commitId: expect.any(String) });
  });

  it('fetches a new commit into an existing checkout and lists the committers since the last build', async () => {
    const workdir = freshWorkdir();
    const base = await pull({ workdir });
    const second = await pushCommit(bare, { 'b.txt': { content: 'b\n' } }, 'second', 'master', { author: BOB });
    const third = await pushCommit(bare, { 'c.txt': { content: 'c\n' }, 'README.md': null }, 'third [no ci]', 'master', {
      author: ALICE,
    });
    // Something a previous build left behind must not survive into the next one.
    await writeFile(join(workdir, 'leftover.tmp'), 'x');

    const result = await pull({ workdir, since: base.commitId });

    expect(result.commitId).toBe(third);
    expect(result.message).toBe('third [no ci]');
    expect(result.committers).toEqual([ALICE.email, BOB.email]);
    expect(existsSync(join(workdir, 'b.txt'))).toBe(true);
    expect(existsSync(join(workdir, 'README.md'))).toBe(false);
    expect(existsSync(join(workdir, 'leftover.tmp'))).toBe(false);
    expect(second).not.toBe(third);

    // An unknown or unrelated `since` falls back to the head commit's author.
    const again = await pull({ workdir, since: 'f'.repeat(40) });
    expect(again.committers).toEqual([ALICE.email]);
  });

  it('checks out a given head: a commit id, a branch, a tag, a pull-request ref', async () => {
    const workdir = freshWorkdir();
    const tip = await pull({ workdir });

    const old = await pull({ workdir, head: first });
    expect(old.commitId).toBe(first);
    expect(await readFile(join(workdir, 'README.md'), 'utf8')).toBe('# hello\n');
    expect(existsSync(join(workdir, 'c.txt'))).toBe(false);

    const feature = await pushCommit(bare, { 'f.txt': { content: 'f\n' } }, 'feature work', 'feature/x', { author: BOB });
    expect((await pull({ workdir, head: 'feature/x' })).commitId).toBe(feature);
    expect(await readFile(join(workdir, 'f.txt'), 'utf8')).toBe('f\n');

    await git(bare, ['tag', 'v1', first]);
    expect((await pull({ workdir, head: 'v1' })).commitId).toBe(first);

    // Refs outside heads/tags are not fetched by default: fetched on demand by name.
    const pr = await pushCommit(bare, { 'pr.txt': { content: 'pr\n' } }, 'pull request', 'pr-source', { author: BOB });
    await git(bare, ['update-ref', 'refs/pull/7/head', pr]);
    await git(bare, ['update-ref', '-d', 'refs/heads/pr-source']);
    expect((await pull({ workdir, head: 'refs/pull/7/head' })).commitId).toBe(pr);

    // ... and by id, when the server allows it (git's protocol v2 does for reachable commits).
    const otherWorkdir = freshWorkdir();
    expect((await pull({ workdir: otherWorkdir, head: pr })).commitId).toBe(pr);

    // HEAD again means the tip of the branch.
    expect((await pull({ workdir })).commitId).toBe(tip.commitId);
  });

  it('fetches extra refspecs from the trigger', async () => {
    const workdir = freshWorkdir();
    const change = await pushCommit(bare, { 'cr.txt': { content: 'cr\n' } }, 'review', 'review-source');
    await git(bare, ['update-ref', 'refs/changes/01/1/1', change]);
    const result = await pull({ workdir, head: 'refs/review/1', refspecs: ['+refs/changes/01/1/1:refs/review/1'] });
    expect(result.commitId).toBe(change);
  });

  it('accepts scp-like URLs', async () => {
    const result = await pull({ pullUrl: `git@[127.0.0.1:${server.port}]:${bare}` });
    expect(result.commitId).toMatch(/^[0-9a-f]{40}$/);
  });

  it('says what is missing: branch, head, repository', async () => {
    const noBranch = await expectPullError(pull({ branch: 'nope' }));
    expect(noBranch.message).toMatch(/branch 'nope' not found/);
    expect(noBranch.reason).toBe('missing-ref');

    const noHead = await expectPullError(pull({ head: 'e'.repeat(40) }));
    expect(noHead.message).toMatch(/head 'e{40}' not found/);
    expect(noHead.reason).toBe('missing-ref');

    const noRepo = await expectPullError(pull({ pullUrl: server.url(join(tmp, 'missing.git')) }));
    expect(noRepo.message).toMatch(/does not appear to be a git repository/);
    expect(noRepo.reason).toBe('not-found');
  });

  it('reports an unreachable server as retryable', async () => {
    // A port that was just free: nothing listens there.
    const gone = await startSshGitServer({ authorizedKeys: [] });
    const url = gone.url(bare);
    await gone.close();
    const error = await expectPullError(pull({ pullUrl: url }));
    expect(error.message).toMatch(/Connection refused/);
    expect(error.retryable).toBe(true);
  });

  it('gives up on a server that never answers after timeoutMs, and stops when aborted', async () => {
    // Accepts TCP connections and then says nothing: ssh waits for a banner that never comes.
    const sockets = new Set<Socket>();
    const silent = createServer((socket) => sockets.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as AddressInfo;
    const pullUrl = `ssh://git@127.0.0.1:${port}/repo.git`;
    try {
      const before = await keyDirs();
      let started = Date.now();
      const timedOut = await expectPullError(pull({ pullUrl, timeoutMs: 1000 }));
      expect(Date.now() - started).toBeLessThan(5000);
      expect(timedOut.message).toBe(`could not pull from ${pullUrl}: git timed out after 1000 ms`);
      expect(timedOut.retryable).toBe(true);

      const controller = new AbortController();
      setTimeout(() => controller.abort(), 300);
      started = Date.now();
      const aborted = await expectPullError(pull({ pullUrl, signal: controller.signal }));
      expect(Date.now() - started).toBeLessThan(5000);
      expect(aborted.reason).toBe('aborted');
      expect(await keyDirs()).toEqual(before);
      // The ssh processes git started were killed with it, not left waiting for a banner.
      await new Promise((r) => setTimeout(r, 100));
      expect(await sshProcessesTo(port)).toEqual([]);
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  it('refuses non-SSH URLs and option-like names before running git', async () => {
    const commands = server.commands.length;
    for (const pullUrl of [`file://${bare}`, bare, 'ext::sh -c id', 'ssh://-oProxyCommand=id/x']) {
      expect((await expectPullError(pull({ pullUrl }))).reason).toBe('invalid-input');
    }
    expect((await expectPullError(pull({ branch: '--upload-pack=id' }))).reason).toBe('invalid-input');
    expect((await expectPullError(pull({ head: '-c' }))).reason).toBe('invalid-input');
    expect((await expectPullError(pull({ refspecs: ['--upload-pack=id'] }))).reason).toBe('invalid-input');
    expect(server.commands.length).toBe(commands);
  });

  it('does not run hooks planted in the checkout by an earlier build', async () => {
    const workdir = freshWorkdir();
    await pull({ workdir });
    const marker = join(tmp, 'hook-ran');
    for (const hook of ['reference-transaction', 'post-checkout']) {
      await writeFile(join(workdir, '.git', 'hooks', hook), `#!/bin/sh\ntouch '${marker}'\n`, { mode: 0o755 });
    }
    await pushCommit(bare, { 'd.txt': { content: 'd\n' } }, 'fourth');
    await pull({ workdir });
    expect(existsSync(marker)).toBe(false);
  });

  it('recovers from a half-made .git left by an interrupted first pull', async () => {
    const workdir = freshWorkdir();
    await pull({ workdir });
    await rm(join(workdir, '.git', 'HEAD'));
    await rm(join(workdir, '.git', 'objects'), { recursive: true });
    await expect(pull({ workdir })).resolves.toMatchObject({ commitId: expect.stringMatching(/^[0-9a-f]{40}$/) });
  });
});
