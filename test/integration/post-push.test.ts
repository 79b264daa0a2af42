/**
 * pushToCiServer against real parts: the repository checked out over SSH (fetchRepository),
 * then the tested commit pushed with the repository's key (loaded from PostgreSQL and
 * unsealed) to a second bare repository that the SSH test server serves (git-receive-pack),
 * once the repository's pull URL has said (git-upload-pack, ls-remote) that the commit is still
 * the branch's tip there.
 *
 * Each activity run is one attempt under Temporal's retry policy: the tests run attempt 1, 2,
 * ... as a worker would (runAttempts), each in an activity context whose info.attempt says
 * which, with the policy's maximumAttempts in info.retryPolicy.
 */
import { createServer, type AddressInfo } from 'node:net';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { scratchBase } from '../../src/steps/checkout/scmProcess';
import { fetchTree, treeDir } from '../../src/steps/checkout/tree';
import { FAILURE_TYPES } from '../../src/activities/failures';
import { createPostActivities } from '../../src/activities/post/activities';
import type { Config } from '../../src/config';
import { generateRepoKeyPair, type RepoKeyPair } from '../../src/ssh/keys';
import { runAttempts, type TestRetryPolicy } from '../support/activityContext';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { createBareRepo, git, pushCommit, revParse } from '../support/gitRepo';
import { createHgRepo, hg, hgCommit, hgNode } from '../support/hgRepo';
import { insertPostSession, postBuildSteps, postTestConfig, type PostSession } from '../support/postSession';
import { startSshGitServer, type SshGitServer } from '../support/sshGitServer';
import { pgBuildRecords } from '../../src/db/buildRecords';

let db: TestDatabase;
let config: Config;
let server: SshGitServer;
let key: RepoKeyPair;
let tmp: string;
let source: string;
let count = 0;
/** Run after all tests: servers a test started. */
const afterCleanups: (() => Promise<void>)[] = [];

/** Three attempts, 50 ms apart: the shape of the default policy, shorter. */
const POLICY: TestRetryPolicy = { maximumAttempts: 3, initialInterval: 50, backoffCoefficient: 1 };

/** pushToCiServer as a worker runs it: attempts until one returns (or throws for good). */
const activities = () => {
  const a = createPostActivities({ config, pool: db.pool });
  return {
    pushToCiServer: async (input: Parameters<typeof a.pushToCiServer>[0]) => (await runAttempts(() => a.pushToCiServer(input), POLICY)).result,
    attempts: (input: Parameters<typeof a.pushToCiServer>[0]) => runAttempts(() => a.pushToCiServer(input), POLICY),
  };
};

/** Our push scratch directories (the key file lives in one), in this file's own TMPDIR (scratchBase reads it). */
const pushDirs = async () => (await readdir(scratchBase())).filter((n) => n.startsWith('sluice-push-'));
const savedTmpdir = process.env.TMPDIR;

/** An empty bare repository for the CI server. */
async function ciRepo(): Promise<string> {
  const dir = join(tmp, `ci-${++count}.git`);
  await git(dir, ['init', '--quiet', '--bare', '--initial-branch=master']);
  return dir;
}

/**
 * The session's checkout on this runner, as the checkout activity leaves it; the push reuses
 * it (a runner without it fetches the commit again: see the last test).
 */
async function checkout(s: PostSession, head = 'HEAD'): Promise<{ workdir: string; commitId: string }> {
  const workdir = treeDir(config.workspaceDir, s.sessionId);
  const got = await fetchTree({ records: pgBuildRecords(db.pool, config.secretKey), workspaceDir: config.workspaceDir }, { sessionId: s.sessionId, repoId: s.repoId, branch: 'master', head }, workdir, undefined);
  return { workdir, commitId: got.commitId };
}

/** What pushToCiServer takes: the session's tree, by commit. */
const tree = (s: PostSession, commitId: string, branch = 'master') => ({ sessionId: s.sessionId, repoId: s.repoId, commitId, branch });

async function session(ciPushUrl: string | null, opts: { scm?: 'git' | 'hg'; key?: RepoKeyPair; pullUrl?: string } = {}): Promise<PostSession> {
  return insertPostSession(db.pool, config.secretKey, { key: opts.key ?? key, ciPushUrl, scm: opts.scm, pullUrl: opts.pullUrl ?? server.url(source) });
}

/** A source repository of the test's own, for tests that move or delete its branches. */
async function ownSource(): Promise<string> {
  const dir = join(tmp, `source-${++count}.git`);
  await createBareRepo(dir, { 'test/a_test.sh': { content: '#!/bin/sh\nexit 0\n', mode: 0o755 } }, 'first');
  return dir;
}

/** Points `refs/heads/<branch>` of the source at `commitId`, as a push to the pull URL would. */
async function setBranch(branch: string, commitId: string): Promise<void> {
  await git(source, ['update-ref', `refs/heads/${branch}`, commitId]);
}

async function refOf(bare: string, ref: string): Promise<string | null> {
  return revParse(bare, ref).catch(() => null);
}

beforeAll(async () => {
  db = await createTestDatabase();
  tmp = await mkdtemp(join(tmpdir(), 'sluice-post-push-'));
  // A directory of this file's own, so pushes of other test files can't come and go while we count.
  await mkdir(join(tmp, 'scratch'));
  process.env.TMPDIR = join(tmp, 'scratch');
  config = postTestConfig(db.url, { workspaceDir: join(tmp, 'workspaces') });
  key = generateRepoKeyPair('sluice:test/push');
  server = await startSshGitServer({ authorizedKeys: [key.publicKey] });
  source = join(tmp, 'source.git');
  await createBareRepo(source, { 'test/a_test.sh': { content: '#!/bin/sh\nexit 0\n', mode: 0o755 } }, 'first');
});

afterAll(async () => {
  for (const cleanup of afterCleanups) await cleanup();
  if (savedTmpdir === undefined) delete process.env.TMPDIR;
  else process.env.TMPDIR = savedTmpdir;
  await server.close();
  await db.drop();
  await rm(tmp, { recursive: true, force: true });
});

describe('pushToCiServer', () => {
  it('pushes the tested commit to refs/heads/<branch> of the CI server, and records it', async () => {
    const ci = await ciRepo();
    const s = await session(server.url(ci));
    const { commitId } = await checkout(s);
    const before = await pushDirs();
    const commandsBefore = server.commands.length;

    const result = await activities().pushToCiServer(tree(s, commitId, 'master'));

    expect(result).toEqual({ pushed: true, detail: `refs/heads/master pushed ${commitId} on ${server.url(ci)}` });
    expect(await refOf(ci, 'refs/heads/master')).toBe(commitId);
    // First the pull URL was asked for master's tip (ls-remote), then the CI server was pushed to.
    expect(server.commands.slice(commandsBefore)).toEqual([`git-upload-pack '${source}'`, `git-receive-pack '${ci}'`]);
    expect(await postBuildSteps(db.pool, s.sessionId)).toEqual([{ step: 'push', ok: true, detail: result.detail }]);
    // The key's scratch directory is gone.
    expect(await pushDirs()).toEqual(before);
  });

  it('pushes a later commit as a fast-forward, to any branch name, and says when it is already there', async () => {
    const ci = await ciRepo();
    const s = await session(server.url(ci));
    const first = await checkout(s);
    const a = activities();
    // Pushed only as the tip of release/1.x at the pull URL too.
    await setBranch('release/1.x', first.commitId);
    expect((await a.pushToCiServer(tree(s, first.commitId, 'release/1.x'))).pushed).toBe(true);

    const next = await pushCommit(source, { 'test/b_test.sh': { content: '#!/bin/sh\nexit 0\n', mode: 0o755 } }, 'second');
    const second = await checkout(s);
    expect(second.commitId).toBe(next);
    await setBranch('release/1.x', next);
    const r2 = await a.pushToCiServer(tree(s, second.commitId, 'release/1.x'));
    expect(r2).toEqual({ pushed: true, detail: `refs/heads/release/1.x pushed ${next} on ${server.url(ci)}` });
    expect(await refOf(ci, 'refs/heads/release/1.x')).toBe(next);

    const r3 = await a.pushToCiServer(tree(s, second.commitId, 'release/1.x'));
    expect(r3).toEqual({ pushed: true, detail: `refs/heads/release/1.x already at ${next} on ${server.url(ci)}` });
    expect((await postBuildSteps(db.pool, s.sessionId)).map((r) => r.ok)).toEqual([true, true, true]);
  });

  it('never force-pushes: a CI branch with other commits is left alone, and the step says why', async () => {
    const ci = join(tmp, `ci-diverged-${++count}.git`);
    const theirs = await createBareRepo(ci, { 'other.txt': { content: 'not ours\n' } }, 'someone else');
    const s = await session(server.url(ci));
    const { commitId } = await checkout(s);

    const result = await activities().pushToCiServer(tree(s, commitId, 'master'));

    expect(result.pushed).toBe(false);
    expect(result.detail).toMatch(/^could not push to ssh:\/\/.*: refs\/heads\/master \[rejected\] \((non-fast-forward|fetch first)\)/);
    expect(result.detail).toContain('Sluice never force-pushes');
    expect(await refOf(ci, 'refs/heads/master')).toBe(theirs);
    expect(await postBuildSteps(db.pool, s.sessionId)).toEqual([{ step: 'push', ok: false, detail: result.detail }]);
  });

  it('a key the CI server does not know fails clearly, and never shows the key', async () => {
    const ci = await ciRepo();
    const stranger = generateRepoKeyPair('stranger');
    // The repository's key is `stranger`'s, which the CI server does not authorize; its pull
    // URL (another server, serving the same source) does, so the check of the tip passes.
    const pullServer = await startSshGitServer({ authorizedKeys: [stranger.publicKey] });
    afterCleanups.push(() => pullServer.close());
    const s = await session(server.url(ci), { key: stranger, pullUrl: pullServer.url(source) });
    // The runner holds the session's checkout (made here with a key the server knows), so only
    // the push uses the repository's key.
    const helper = await checkout(await session(null));
    const { commitId } = helper;
    await rename(helper.workdir, treeDir(config.workspaceDir, s.sessionId));
    await rename(`${helper.workdir}.json`, `${treeDir(config.workspaceDir, s.sessionId)}.json`);
    const before = await pushDirs();

    const result = await activities().pushToCiServer(tree(s, commitId, 'master'));

    expect(result.pushed).toBe(false);
    expect(result.detail).toMatch(/^could not push to ssh:\/\/git@127\.0\.0\.1:\d+\/.*\.git: .*Permission denied \(publickey\)/);
    expect(result.detail).not.toMatch(/attempts\)$/); // not worth retrying
    const [row] = await postBuildSteps(db.pool, s.sessionId);
    for (const text of [result.detail, row!.detail]) {
      expect(text).not.toContain('PRIVATE KEY');
      expect(text).not.toContain('sluice-push-');
      for (const line of stranger.privateKey.split('\n').filter((l) => l && !l.startsWith('-----'))) {
        expect(text).not.toContain(line);
        expect(text).not.toContain(line.slice(0, 16));
      }
    }
    expect(row!.ok).toBe(false);
    expect(await refOf(ci, 'refs/heads/master')).toBeNull();
    expect(await pushDirs()).toEqual(before);
    expect(pullServer.commands).toEqual([`git-upload-pack '${source}'`]);
  });

  it("ignores configuration the build's tests planted in the checkout (pushInsteadOf)", async () => {
    const ci = await ciRepo();
    const decoy = await ciRepo();
    const s = await session(server.url(ci));
    const { workdir, commitId } = await checkout(s);
    // A test rewrote where pushes to the CI server go.
    await git(join(workdir, '.git'), ['config', `url.${server.url(decoy)}.pushInsteadOf`, server.url(ci)]);
    await git(join(workdir, '.git'), ['config', 'remote.pushDefault', 'nowhere']);

    const result = await activities().pushToCiServer(tree(s, commitId, 'master'));

    expect(result.pushed).toBe(true);
    expect(await refOf(ci, 'refs/heads/master')).toBe(commitId);
    expect(await refOf(decoy, 'refs/heads/master')).toBeNull();
    expect(server.commands).not.toContain(`git-receive-pack '${decoy}'`);
  });

  it('retries an unreachable CI server a few times, then records the failure', async () => {
    const port = await closedPort();
    const s = await session(`ssh://git@127.0.0.1:${port}/nowhere.git`);
    const { commitId } = await checkout(s);

    const run = await activities().attempts(tree(s, commitId, 'master'));
    const result = run.result;

    expect(result.pushed).toBe(false);
    expect(result.detail).toMatch(/^could not push to ssh:\/\/git@127\.0\.0\.1:\d+\/nowhere\.git: .*Connection refused.*\(3 attempts\)$/);
    expect(await postBuildSteps(db.pool, s.sessionId)).toEqual([{ step: 'push', ok: false, detail: result.detail }]);
    // Attempts 1 and 2 left the next one to Temporal's retry policy, recording nothing.
    expect(run.failures).toHaveLength(2);
    for (const f of run.failures) expect(f).toMatchObject({ type: FAILURE_TYPES.pushRetrying, nonRetryable: false });
    expect((run.failures[0] as Error).message).toMatch(/^push attempt 1 of 3 failed, to be retried: could not push to .*Connection refused/);
  });

  it('a commit that is not in the checkout', async () => {
    const ci = await ciRepo();
    const s = await session(server.url(ci));
    await checkout(s);
    const missing = 'f'.repeat(40);
    const result = await activities().pushToCiServer(tree(s, missing));
    // Not in the session's checkout, so the runner fetches it, and the repository has no such commit.
    expect(result).toEqual({ pushed: false, detail: `could not pull from ${server.url(source)}: head '${missing}' not found` });
  });

  it('refuses what is not a commit id or a branch name, before connecting', async () => {
    const s = await session('ssh://git@127.0.0.1:1/x.git');
    const { commitId } = await checkout(s);
    const a = activities();
    expect((await a.pushToCiServer(tree(s, 'HEAD'))).detail).toBe(
      'could not push to ssh://git@127.0.0.1:1/x.git: "HEAD" is not a full commit id',
    );
    expect((await a.pushToCiServer(tree(s, commitId, '--force'))).detail).toBe(
      'could not push to ssh://git@127.0.0.1:1/x.git: invalid branch name "--force"',
    );
    const local = await session('/srv/git/x.git');
    expect((await a.pushToCiServer(tree(local, commitId))).detail).toBe(
      'could not push to /srv/git/x.git: not an SSH URL (ssh://host/path or user@host:path)',
    );
  });

  it('does nothing, and records nothing, without a CI push URL', async () => {
    const s = await session(null);
    const { commitId } = await checkout(s);
    expect(await activities().pushToCiServer(tree(s, commitId, 'master'))).toEqual({
      pushed: false,
      detail: 'no CI push URL configured',
    });
    expect(await postBuildSteps(db.pool, s.sessionId)).toEqual([]);
  });
});

describe('pushToCiServer: Mercurial', () => {
  const hgScratch = async () => (await readdir(scratchBase())).filter((n) => n.startsWith('sluice-hg-push-'));
  /** An hg source repository with one changeset on default, and an empty one for the CI server. */
  async function hgRepos(): Promise<{ source: string; ci: string; tip: string }> {
    const source = join(tmp, `hg-source-${++count}`);
    const tip = await createHgRepo(source, { 'test/a_test.sh': { content: '#!/bin/sh\nexit 0\n', mode: 0o755 } }, 'first');
    const ci = join(tmp, `hg-ci-${count}`);
    await mkdir(ci);
    await hg(ci, ['init']);
    return { source, ci, tip };
  }
  const hgSession = (source: string, ci: string) => session(server.hgUrl(ci), { scm: 'hg', pullUrl: server.hgUrl(source) });

  it('pushes the tested changeset to the branch on the CI server, says when it is there already, and keeps no key', async () => {
    const { source, ci, tip } = await hgRepos();
    const s = await hgSession(source, ci);
    const before = await hgScratch();
    const a = activities();

    const result = await a.pushToCiServer(tree(s, tip, 'default'));
    expect(result).toEqual({ pushed: true, detail: `branch default pushed ${tip} on ${server.hgUrl(ci)}` });
    expect(await hgNode(ci, 'default')).toBe(tip);
    expect(await a.pushToCiServer(tree(s, tip, 'default'))).toEqual({ pushed: true, detail: `branch default already at ${tip} on ${server.hgUrl(ci)}` });

    // A named branch the CI server does not have yet is created there.
    const feature = await hgCommit(source, { 'test/b_test.sh': { content: '#!/bin/sh\nexit 0\n', mode: 0o755 } }, 'on feature', { branch: 'feature' });
    expect(await a.pushToCiServer(tree(s, feature, 'feature'))).toMatchObject({ pushed: true });
    expect(await hgNode(ci, 'feature')).toBe(feature);
    expect((await postBuildSteps(db.pool, s.sessionId)).map((r) => r.ok)).toEqual([true, true, true]);
    expect(await hgScratch()).toEqual(before);
  });

  it('pushes only the tip of the branch at the pull URL', async () => {
    const { source, ci, tip } = await hgRepos();
    const s = await hgSession(source, ci);
    const newer = await hgCommit(source, { 'test/c_test.sh': { content: '#!/bin/sh\nexit 0\n', mode: 0o755 } }, 'newer');
    const result = await activities().pushToCiServer(tree(s, tip, 'default'));
    expect(result).toEqual({
      pushed: false,
      detail: `not pushed: ${tip.slice(0, 12)} is not the tip of default on ${server.hgUrl(source)} (the tip is ${newer.slice(0, 12)})`,
    });
    expect(await hg(ci, ['log', '-T', '{node}'])).toBe('');
  });

  it('never forces: a CI server whose branch has other changesets is left alone, and the step says why', async () => {
    const { source, ci: _empty } = await hgRepos();
    // The CI server has the first changeset and one of its own after it; the tested one is another child.
    const ci = join(tmp, `hg-ci-diverged-${++count}`);
    await hg(tmp, ['clone', '--quiet', source, ci]);
    await hgCommit(ci, { 'other.txt': { content: 'not ours\n' } }, 'someone else');
    const tip = await hgCommit(source, { 'test/d_test.sh': { content: '#!/bin/sh\nexit 0\n', mode: 0o755 } }, 'ours');
    const s = await hgSession(source, ci);
    const { attempts, result } = await activities().attempts(tree(s, tip, 'default'));
    expect(attempts).toBe(1); // a refusal is not retried
    expect(result.pushed).toBe(false);
    expect(result.detail).toContain(`could not push to ${server.hgUrl(ci)}`);
    expect(result.detail).toContain('new remote head');
    expect(result.detail).toContain('Sluice never forces a push');
    expect(await postBuildSteps(db.pool, s.sessionId)).toEqual([{ step: 'push', ok: false, detail: result.detail }]);
    expect(await hg(ci, ['log', '-r', tip, '-T', '{node}']).catch(() => 'absent')).toBe('absent');
  });

  it("refuses a pull URL that is not ssh:// before running hg: a local repository's hooks never run", async () => {
    const { source, ci, tip } = await hgRepos();
    // hg reads the .hg/hgrc of a repository it pulls from by path, and runs its hooks.
    const ran = join(tmp, `hook-ran-${count}`);
    await writeFile(join(source, '.hg', 'hgrc'), `[hooks]\npreoutgoing = touch ${ran}\n`);
    const s = await session(server.hgUrl(ci), { scm: 'hg', pullUrl: source });
    const result = await activities().pushToCiServer(tree(s, tip, 'default'));
    expect(result).toEqual({
      pushed: false,
      detail: `could not push to ${server.hgUrl(ci)}: the pull URL ${source} is not an SSH URL (Mercurial takes ssh://host/path or ssh://host//abs/path)`,
    });
    expect(existsSync(ran)).toBe(false);
    expect(await hg(ci, ['log', '-T', '{node}'])).toBe('');
    expect(await postBuildSteps(db.pool, s.sessionId)).toEqual([{ step: 'push', ok: false, detail: result.detail }]);
  });
});

describe('pushToCiServer: only the tip of the branch at the pull URL', () => {
  it('is not pushed when the branch moved on after the checkout; the step says so, as ok', async () => {
    const ci = await ciRepo();
    const own = await ownSource();
    const s = await session(server.url(ci), { pullUrl: server.url(own) });
    const { commitId } = await checkout(s);
    // Someone pushed to master during the build.
    const newer = await pushCommit(own, { 'test/b_test.sh': { content: '#!/bin/sh\nexit 0\n', mode: 0o755 } }, 'newer');

    const result = await activities().pushToCiServer(tree(s, commitId, 'master'));

    const detail = `not pushed: ${commitId.slice(0, 12)} is not the tip of master on ${server.url(own)} (the tip is ${newer.slice(0, 12)})`;
    expect(result).toEqual({ pushed: false, detail });
    expect(await postBuildSteps(db.pool, s.sessionId)).toEqual([{ step: 'push', ok: true, detail }]);
    expect(await refOf(ci, 'refs/heads/master')).toBeNull();
    expect(server.commands).not.toContain(`git-receive-pack '${ci}'`);
  });

  it('is not pushed when the branch no longer exists at the pull URL', async () => {
    const ci = await ciRepo();
    const own = await ownSource();
    const s = await session(server.url(ci), { pullUrl: server.url(own) });
    const { commitId } = await checkout(s);
    await git(own, ['update-ref', '-d', 'refs/heads/master']);
    // Another branch whose name ends like master's ref (ls-remote's patterns match ref tails) is not master.
    await git(own, ['update-ref', 'refs/heads/old/refs/heads/master', commitId]);

    const result = await activities().pushToCiServer(tree(s, commitId, 'master'));

    const detail = `not pushed: branch master no longer exists on ${server.url(own)}`;
    expect(result).toEqual({ pushed: false, detail });
    expect(await postBuildSteps(db.pool, s.sessionId)).toEqual([{ step: 'push', ok: true, detail }]);
    expect(await refOf(ci, 'refs/heads/master')).toBeNull();
    expect(server.commands).not.toContain(`git-receive-pack '${ci}'`);
  });

  it("a trigger's head that is not the branch's tip (a pull-request ref) is not pushed to that branch", async () => {
    const ci = await ciRepo();
    const own = await ownSource();
    const tip = await revParse(own, 'refs/heads/master');
    // A commit only a pull-request ref names, built as `head` of a build of master.
    const pr = await pushCommit(own, { 'test/a_test.sh': { content: '#!/bin/sh\necho pr\n', mode: 0o755 } }, 'pr work', 'pr-source');
    await git(own, ['update-ref', 'refs/pull/1/head', pr]);
    await git(own, ['update-ref', '-d', 'refs/heads/pr-source']);
    const s = await session(server.url(ci), { pullUrl: server.url(own) });
    const { commitId } = await checkout(s, 'refs/pull/1/head');
    expect(commitId).toBe(pr);

    const result = await activities().pushToCiServer(tree(s, commitId, 'master'));

    expect(result).toEqual({
      pushed: false,
      detail: `not pushed: ${pr.slice(0, 12)} is not the tip of master on ${server.url(own)} (the tip is ${tip.slice(0, 12)})`,
    });
    expect(await refOf(ci, 'refs/heads/master')).toBeNull();
  });

  it('a pull URL that cannot be reached is retried like an unreachable server, then recorded as failed; nothing is pushed', async () => {
    const ci = await ciRepo();
    const s = await session(server.url(ci));
    const { commitId } = await checkout(s);
    // The pull URL goes away after the checkout.
    const port = await closedPort();
    await db.pool.query('UPDATE repos SET pull_url = $2 WHERE id = $1', [s.repoId, `ssh://git@127.0.0.1:${port}/gone.git`]);

    const run = await activities().attempts(tree(s, commitId, 'master'));

    expect(run.result.pushed).toBe(false);
    expect(run.result.detail).toMatch(/^could not ask ssh:\/\/git@127\.0\.0\.1:\d+\/gone\.git for the tip of master: .*Connection refused.*\(3 attempts\)$/);
    expect(await postBuildSteps(db.pool, s.sessionId)).toEqual([{ step: 'push', ok: false, detail: run.result.detail }]);
    expect(run.failures).toHaveLength(2);
    for (const f of run.failures) expect(f).toMatchObject({ type: FAILURE_TYPES.pushRetrying, nonRetryable: false });
    expect(await refOf(ci, 'refs/heads/master')).toBeNull();
    expect(server.commands).not.toContain(`git-receive-pack '${ci}'`);
  });
});

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}
