/**
 * Runners that hold no keys (issue 23), in the production shape (test/support/cluster.ts: a
 * Temporal server, the API, a worker, runner processes): a runner started with nothing of
 * Sluice's but its token and the API's address builds a repository with secrets end to end
 * (checkout over SSH with the repository's key, two workers meeting at the rendezvous, the
 * secret in the test's environment and masked in its output); revoked, it gets no more work;
 * an organization's token takes that organization's builds and never another's; it pulls a
 * build's private image from the registry itself, with the login that came with the job.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { removeDir } from '../support/removeDir';
import os from 'node:os';
import path from 'node:path';
import { startCluster, type Cluster, type ClusterRepo } from '../support/cluster';
import { startRole, type RoleProcess } from '../support/processes';
import { eventually } from '../support/wait';
import { reportPath } from '../support/reports';
import { script } from '../support/world';
import { cranePath, pushImage, startPrivateRegistry, testImageLayers } from '../support/registry';

jest.setTimeout(300_000);

let c: Cluster;
/** The token runners' own workspaces and cache copies. */
const dirs: string[] = [];
beforeAll(async () => {
  c = await startCluster({ runners: 0 });
});
afterAll(async () => {
  await c?.stop();
  for (const d of dirs) await removeDir(d);
});

interface Token {
  id: number;
  name: string;
  token: string;
}

const makeToken = (name: string, org?: number) => c.admin<Token>('POST', '/api/v1/runner-tokens', { name, ...(org === undefined ? {} : { org }) });

async function tempDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}

/** A runner given only its token and the API's address: no database, no secret key, no admin token, no Temporal. */
async function startTokenRunner(token: string, more: NodeJS.ProcessEnv = {}): Promise<RoleProcess> {
  const runner = startRole('runner', {
    ...more,
    SLUICE_RUNNER_TOKEN: token,
    SLUICE_BASE_URL: c.env.SLUICE_BASE_URL,
    SLUICE_BUILD_QUEUE: c.env.SLUICE_BUILD_QUEUE,
    SLUICE_WORKSPACE_DIR: await tempDir('sluice-token-ws-'),
    SLUICE_CACHE_LOCAL_DIR: await tempDir('sluice-token-cache-'),
    SLUICE_RUNNER_SLOTS: '2',
    // Set blank (unset): nothing to fall back on.
    DATABASE_URL: '',
    SLUICE_SECRET_KEY: '',
    TEMPORAL_ADDRESS: '',
  });
  await runner.waitForOutput(/sluice runner: \S+ serving .* with a runner token and no keys/, 90_000);
  return runner;
}

async function tests(session: number): Promise<{ status: string; tests: Array<{ path: string; status: string; runner: string; output: string }> }> {
  const res = await fetch(`${c.env.SLUICE_BASE_URL}${await reportPath(c.db.pool, session)}`, { headers: { accept: 'application/json' } });
  return (await res.json()) as never;
}

/** The tokens that took the session's jobs. */
async function tokensOf(session: number): Promise<number[]> {
  const { rows } = await c.db.pool.query<{ token_id: number | null }>('SELECT DISTINCT token_id::int AS token_id FROM runner_jobs WHERE session_id = $1', [session]);
  return rows.map((r) => r.token_id!).sort();
}

async function passes(repo: ClusterRepo): Promise<number> {
  const session = await c.build(repo, { branch: 'master', force: true });
  const stop = (await c.eventsOf(session, 120_000)).find((e) => e.event === 'stop')!;
  expect(stop).toMatchObject({ status: 'passed' });
  return session;
}

const SECRET = 'sk_live_token_runner_7f6e5d';

describe('a runner with a token and no keys', () => {
  let installation: Token;
  let runner: RoleProcess;
  let repo: ClusterRepo;

  it('is made in the management API, which shows the token once and lists it without it', async () => {
    installation = await makeToken('edge-1');
    expect(installation.token).toMatch(/^sluice_rt_[A-Za-z0-9_-]{43}$/);
    const { runner_tokens } = await c.admin<{ runner_tokens: Array<Record<string, unknown>> }>('GET', '/api/v1/runner-tokens');
    expect(runner_tokens).toEqual([expect.objectContaining({ id: installation.id, name: 'edge-1', org: null, revoked_at: null, last_seen_at: null, busy: 0 })]);
    expect(JSON.stringify(runner_tokens)).not.toContain(installation.token);
  });

  it('builds a repository with secrets end to end, on two workers', async () => {
    runner = await startTokenRunner(installation.token);
    // Nothing of Sluice's keys in the runner's environment.
    const environ = readFileSync(`/proc/${runner.pid}/environ`, 'utf8');
    for (const key of [c.env.SLUICE_SECRET_KEY!, c.env.SLUICE_ADMIN_TOKEN!, c.db.url]) expect(environ).not.toContain(key);

    // Each worker's setup makes what the cache keeps (vendor/, saved by the first worker); each
    // file checks the secret and leaves an artifact (out/).
    const check = (name: string) =>
      script(
        [
          `[ "$DEPLOY_KEY" = "${SECRET}" ] || { echo "${name}: wrong key: $DEPLOY_KEY"; exit 1; }`,
          `echo "${name} deploys with $DEPLOY_KEY"`,
          'mkdir -p out',
          `echo "report of ${name}" > out/${name}.txt`,
        ].join('\n'),
      );
    repo = await c.makeRepo(
      { 'deps.lock': { content: 'v1\n' }, 'test/a_test.sh': check('a'), 'test/b_test.sh': check('b') },
      {
        branch: 'master',
        test_pattern: 'test/*_test.sh',
        workers: 2,
        hooks: { worker_setup: 'mkdir -p vendor && { [ -e vendor/lib.txt ] || echo built > vendor/lib.txt; }' },
        cache: { key_paths: ['deps.lock'], save_paths: ['vendor'] },
        artifacts: ['out/*'],
      },
    );
    await c.admin('PUT', `/api/v1/repos/${repo.id}/secrets/DEPLOY_KEY`, { value: SECRET });

    const session = await passes(repo);
    const report = await tests(session);
    expect(report.tests.map((t) => [t.path, t.status, t.output])).toEqual([
      ['test/a_test.sh', 'passed', 'a deploys with ****\n'],
      ['test/b_test.sh', 'passed', 'b deploys with ****\n'],
    ]);
    const name = (await runner.waitForOutput(/sluice runner: (\S+) serving/))[1];
    expect(report.tests.every((t) => t.runner === name)).toBe(true);
    expect(await tokensOf(session)).toEqual([installation.id]);

    // The cache entry and the artifacts went to the store through the API.
    const view = await c.admin<{ worker_setup: Array<{ worker: number; runner: string; notes: string[] }> }>('GET', `/api/v1/sessions/${session}`);
    expect(view.worker_setup.map((w) => w.runner)).toEqual([name, name]);
    expect(view.worker_setup.find((w) => w.worker === 1)!.notes.join('\n')).toMatch(/cache saved in master: vendor/);
    const artifacts = await c.admin<Array<{ path: string; url: string }>>('GET', `/api/v1/sessions/${session}/artifacts`);
    expect(artifacts.map((a) => a.path).sort()).toEqual(['out/a.txt', 'out/b.txt']);
    const a = artifacts.find((x) => x.path === 'out/a.txt')!;
    expect(await (await fetch(new URL(a.url, c.env.SLUICE_BASE_URL))).text()).toBe('report of a\n');

    const { runner_tokens } = await c.admin<{ runner_tokens: Array<{ id: number; runner: string; version: string; last_seen_at: string | null }> }>('GET', '/api/v1/runner-tokens');
    expect(runner_tokens.find((t) => t.id === installation.id)).toMatchObject({ runner: name, last_seen_at: expect.any(String) });
  });

  it('gets nothing once its token is revoked', async () => {
    expect((await fetch(`${c.env.SLUICE_BASE_URL}/api/v1/runner-tokens/${installation.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${c.env.SLUICE_ADMIN_TOKEN}` } })).status).toBe(204);
    await runner.waitForOutput(/asking for work failed: .*\(is the token revoked\?\)/, 60_000);
    const session = await c.build(repo, { branch: 'master', force: true });
    // The revoked token's calls are refused, whatever they ask.
    const refused = await fetch(`${c.env.SLUICE_BASE_URL}/api/v1/runner/jobs/next`, {
      method: 'POST',
      headers: { authorization: `Bearer ${installation.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ runner: 'thief', version: '1', queues: [c.env.SLUICE_BUILD_QUEUE], wait_ms: 0 }),
    });
    expect(refused.status).toBe(401);
    // Nothing of the new build went to it.
    expect(await tokensOf(session)).not.toContain(installation.id);

    // A new token's runner takes the build over and it passes.
    const fresh = await makeToken('edge-2');
    const next = await startTokenRunner(fresh.token);
    const stop = (await c.eventsOf(session, 120_000)).find((e) => e.event === 'stop')!;
    expect(stop).toMatchObject({ status: 'passed' });
    expect(await tokensOf(session)).toEqual([fresh.id]);
    // Its runner has no copy of the cache: it came from the store, through the API.
    const view = await c.admin<{ worker_setup: Array<{ worker: number; notes: string[] }> }>('GET', `/api/v1/sessions/${session}`);
    expect(view.worker_setup.find((w) => w.worker === 1)!.notes.join('\n')).toMatch(/cache restored vendor \(this key, branch master, from the store(, mounted: its changes stay in this build)?\)/);
    next.kill('SIGKILL');
    await next.exited;
  });
});

describe("an organization's runner", () => {
  it("takes its organization's builds and never another's", async () => {
    const other = await c.admin<{ id: number }>('POST', '/api/v1/orgs', { name: 'other-org', email: 'ops@other.test' });
    await c.admin('POST', `/api/v1/orgs/${other.id}/webhooks`, { url: c.receiver.url });
    const theirs = await makeToken('other-edge', other.id);
    const theirRunner = await startTokenRunner(theirs.token);
    const { runner_tokens } = await c.admin<{ runner_tokens: Array<{ id: number; org: unknown }> }>('GET', '/api/v1/runner-tokens');
    expect(runner_tokens.find((t) => t.id === theirs.id)!.org).toEqual({ id: other.id, name: 'other-org' });

    // A build of the cluster's organization waits: the only live runner is the other organization's.
    const ours = await c.makeRepo({ 'test/ok_test.sh': script('exit 0') }, { branch: 'master', test_pattern: 'test/*_test.sh' });
    const waiting = await c.build(ours, { branch: 'master' });

    // The other organization's build, of a suite that keeps its builds on its own runners, runs
    // on its runner (which polled all along), while ours still waits, untouched by it.
    const theirRepo = await c.makeRepo({ 'test/theirs_test.sh': script('echo theirs') }, { branch: 'master', test_pattern: 'test/*_test.sh', own_runners: true }, { org: other.id });
    const session = await passes(theirRepo);
    expect(await tokensOf(session)).toEqual([theirs.id]);
    const { rows } = await c.db.pool.query<{ status: string }>('SELECT status FROM sessions WHERE id = $1', [waiting]);
    expect(['queued', 'running']).toContain(rows[0]!.status);
    expect(await tokensOf(waiting)).not.toContain(theirs.id);

    // An installation's runner takes ours.
    const shared = await makeToken('edge-3');
    const sharedRunner = await startTokenRunner(shared.token);
    expect((await c.eventsOf(waiting, 120_000)).find((e) => e.event === 'stop')).toMatchObject({ status: 'passed' });
    expect(await tokensOf(waiting)).toEqual([shared.id]);

    // Their suite's builds stay on their runners whatever queue the trigger names, with the
    // installation's runner polling beside theirs.
    const keptSession = await c.build(theirRepo, { branch: 'master', force: true, queue: c.env.SLUICE_BUILD_QUEUE });
    expect((await c.eventsOf(keptSession, 120_000)).find((e) => e.event === 'stop')).toMatchObject({ status: 'passed' });
    const { rows: keptJobs } = await c.db.pool.query<{ queue: string; own_runners: boolean; token_id: number }>(
      'SELECT DISTINCT queue, own_runners, token_id::int AS token_id FROM runner_jobs WHERE session_id = $1',
      [keptSession],
    );
    expect(keptJobs).toEqual([{ queue: `${c.env.SLUICE_BUILD_QUEUE}-org-${other.id}`, own_runners: true, token_id: theirs.id }]);
    for (const r of [theirRunner, sharedRunner]) {
      r.kill('SIGKILL');
      await r.exited;
    }
  });
});

describe('a stop', () => {
  it("reaches a token runner's running test through the API, which kills it and everything it started", async () => {
    const t = await makeToken('edge-stop');
    const r = await startTokenRunner(t.token);
    // A daemon that leaves the test's process group, and the test itself, both asleep for good.
    const marker = `${700 + Math.floor(Math.random() * 200)}.${process.pid}`;
    const repo = await c.makeRepo({ 'test/slow_test.sh': script(`setsid sleep ${marker} & echo started; sleep ${marker}`) }, { branch: 'master', test_pattern: 'test/*_test.sh' });
    const session = await c.build(repo, { branch: 'master' });
    const running = () => execFileSync('pgrep', ['-f', `sleep ${marker}`], { encoding: 'utf8' }).split('\n').filter(Boolean);
    await eventually('the test and its daemon to run', async () => {
      try {
        return running().length === 2 ? true : undefined;
      } catch {
        return undefined; // pgrep exits 1 while nothing matches
      }
    });
    const res = await fetch(`${c.env.SLUICE_BASE_URL}/api/v1/sessions/${session}/stop`, {
      method: 'POST',
      headers: { authorization: `Bearer ${c.env.SLUICE_ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ stopped_by: 'token-runners.test' }),
    });
    expect(res.status).toBe(202);
    expect((await c.eventsOf(session, 60_000)).find((e) => e.event === 'stop')).toMatchObject({ status: 'stopped', stopped_by: 'token-runners.test' });
    expect(() => running()).toThrow(); // nothing left: pgrep finds none
    const { rows } = await c.db.pool.query<{ state: string }>("SELECT state FROM runner_jobs WHERE session_id = $1 AND kind = 'runLane'", [session]);
    expect(rows.map((x) => x.state)).toEqual(['failed']);
    r.kill('SIGKILL');
    await r.exited;
  });
});

describe('a worker killed while a token runner runs its job', () => {
  it('leaves the job running: the worker started again takes it up, and the build ends with its true result, run once', async () => {
    const t = await makeToken('edge-fault');
    const r = await startTokenRunner(t.token);
    const repo = await c.makeRepo({ 'test/slow_test.sh': script('sleep 8; echo "ran once"') }, { branch: 'master', test_pattern: 'test/*_test.sh' });
    const session = await c.build(repo, { branch: 'master' });
    await eventually('the lane to run on the token runner', async () => {
      const { rows } = await c.db.pool.query("SELECT 1 FROM runner_jobs WHERE session_id = $1 AND kind = 'runLane' AND state = 'running'", [session]);
      return rows.length === 1 ? true : undefined;
    });
    c.worker.kill('SIGKILL');
    await c.worker.exited;
    // Workers get no admin token (as the cluster starts them).
    const { SLUICE_ADMIN_TOKEN: _admin, ...workerEnv } = c.env;
    c.worker = startRole('worker', workerEnv);
    await c.worker.waitForOutput(/sluice worker: serving /, 90_000);

    expect((await c.eventsOf(session, 120_000)).find((e) => e.event === 'stop')).toMatchObject({ status: 'passed' });
    expect((await tests(session)).tests.map((x) => [x.path, x.status, x.output])).toEqual([['test/slow_test.sh', 'passed', 'ran once\n']]);
    const { rows } = await c.db.pool.query<{ state: string }>("SELECT state FROM runner_jobs WHERE session_id = $1 AND kind = 'runLane'", [session]);
    expect(rows).toEqual([{ state: 'done' }]);
    r.kill('SIGKILL');
    await r.exited;
  });
});

describe('a runner with a token and a private image', () => {
  it('resolves and pulls the image itself, with the registry login that came with the job, and runs in it', async () => {
    const login = { username: 'edge-bot', password: `pw-${Date.now().toString(36)}-token-runner` };
    const registry = await startPrivateRegistry(login);
    try {
      const layers = await testImageLayers();
      const image = await pushImage(registry.host, 'team/node:22', { layers: [layers.debian, layers.node], auth: login });
      const org = await c.admin<{ id: number }>('POST', '/api/v1/orgs', { name: 'image-org', email: 'ops@image.test' });
      await c.admin('POST', `/api/v1/orgs/${org.id}/webhooks`, { url: c.receiver.url });
      const t = await makeToken('image-edge', org.id);
      // Its own store, under /tmp where the build user may pass; crane where `.ci/run` built it.
      const r = await startTokenRunner(t.token, { SLUICE_IMAGE_DIR: await mkdtemp(path.join(os.tmpdir(), 'sluice-token-images-')), SLUICE_CRANE: cranePath() });
      try {
        const repo = await c.makeRepo(
          { 'test/node_test.sh': script('node --version; test "$(node -p "process.versions.node.split(\'.\')[0]")" = 22') },
          { branch: 'master', test_pattern: 'test/*_test.sh', image: `${registry.host}/team/node:22`, own_runners: true },
          { org: org.id },
        );
        await c.admin('PUT', `/api/v1/repos/${repo.id}/registries/${registry.host}`, login);
        const session = await passes(repo);
        expect((await tests(session)).tests.map((x) => [x.path, x.status, x.output])).toEqual([['test/node_test.sh', 'passed', 'v22.12.0\n']]);
        // Every job of it, the image's resolution among them, was the token runner's.
        const { rows } = await c.db.pool.query<{ kind: string; token_id: number }>('SELECT kind, token_id::int AS token_id FROM runner_jobs WHERE session_id = $1 ORDER BY id', [session]);
        expect(rows.map((j) => j.kind)).toEqual(expect.arrayContaining(['checkout', 'resolveImage', 'runLane']));
        expect(new Set(rows.map((j) => j.token_id))).toEqual(new Set([t.id]));
        const view = await c.admin<{ image: { digest: string }; hooks: Array<{ name: string; runner: string; detail: string }> }>('GET', `/api/v1/sessions/${session}`);
        expect(view.image.digest).toBe(image.digest);
        const name = (await r.waitForOutput(/sluice runner: (\S+) serving/))[1];
        expect(view.hooks.filter((h) => h.name === 'image')).toEqual([expect.objectContaining({ runner: name, detail: expect.stringMatching(/^pulled: 2 layers/) })]);
        // The login reached it with the job, never through its environment.
        expect(readFileSync(`/proc/${r.pid}/environ`, 'utf8')).not.toContain(login.password);
      } finally {
        r.kill('SIGKILL');
        await r.exited;
      }
    } finally {
      await registry.stop();
    }
  });
});
