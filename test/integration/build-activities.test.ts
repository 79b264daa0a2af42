/**
 * The build activities themselves (checkout, queueTests, runLane and its JUnit collection) against real parts: a
 * real PostgreSQL behind the real API (repositories, suites, secrets and sessions are made
 * the way a user makes them), a real SSH server serving real git and hg repositories, real
 * test processes. Only the Temporal worker is replaced, by an activity context of our own
 * (test/support/activityContext.ts); the e2e project runs them in a real worker.
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { createBuildActivities } from '../../src/activities/steps/activities';
import { collectJUnitResults } from '../../src/steps/tests/junit';
import { enqueueTests } from '../../src/db/testQueue';
import { seal } from '../../src/crypto/sealed';
import { startApiHarness, type ApiHarness } from '../support/apiApp';
import { runActivity } from '../support/activityContext';
import { createBareRepo } from '../support/gitRepo';
import { createHgRepo, hgCommit } from '../support/hgRepo';
import { startSshGitServer, type SshGitServer } from '../support/sshGitServer';
import { reportPath } from '../support/reports';
import { pgBuildRecords } from '../../src/db/buildRecords';

const TOKEN = 'tok_9f8e7d6c5b4a-deploy';
const SHARED_SECRET = 'from-the-secret-store';
const script = (body: string) => ({ content: `#!/bin/sh\n${body}\n`, mode: 0o755 });

// A JUnit report as pytest would write it, with a secret in a failure message.
const JUNIT = `<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="tests.test_api" name="test_ok" time="0.01"/>
<testcase classname="tests.test_api" name="test_deploy" time="0.20"><failure message="deploy refused for token $DEPLOY_TOKEN">AssertionError: token $DEPLOY_TOKEN rejected</failure></testcase>
<testcase classname="tests.test_api" name="test_db" time="0.00"><error message="no database">ConnectionError</error></testcase>
<testcase classname="tests.test_api" name="test_later" time="0"><skipped message="later"/></testcase>
</testsuite></testsuites>`;

let h: ApiHarness;
let server: SshGitServer;
let tmp: string;
let activities: ReturnType<typeof createBuildActivities>;
const repos: Record<'git' | 'hg', { id: number; key: string; suiteId: number; head: string }> = {} as never;

async function makeRepo(scm: 'git' | 'hg', name: string, pullUrl: string, branch: string): Promise<{ id: number; key: string; suiteId: number }> {
  const res = await h.admin('POST', '/api/v1/orgs/acme/repos', { name, scm, pull_url: pullUrl });
  if (res.statusCode !== 201) throw new Error(res.body);
  const repo = res.json();
  const suite = await h.admin('POST', `/api/v1/repos/${repo.id}/suites`, { branch, test_pattern: 'tests/*.sh' });
  return { id: repo.id, key: repo.key, suiteId: suite.json().id };
}

/** A session for the repository, made by a real trigger. */
async function newSession(scm: 'git' | 'hg', body: Record<string, unknown> = {}): Promise<number> {
  h.enqueued.length = 0;
  const res = await h.request({ method: 'POST', url: `/1/builds/${repos[scm].key}`, payload: body });
  if (res.statusCode !== 200) throw new Error(`${res.statusCode} ${res.body}`);
  return h.enqueued[0]!.sessionId;
}

async function checkout(scm: 'git' | 'hg', sessionId: number, branch: string, head: string) {
  return runActivity(() => activities.checkout({ sessionId, repoId: repos[scm].id, branch, head })).result;
}

/** Runs `path` in a lane of `session`, as the only file of its list; the stored result. */
async function runFile(
  scm: 'git' | 'hg',
  session: number,
  path: string,
  opts: { env?: Record<string, string>; junitPattern?: string | null; branch?: string; secrets?: boolean } = {},
): Promise<{ status: string; exit_code: number | null; runner: string }> {
  await h.db.pool.query('DELETE FROM test_queue WHERE session_id = $1', [session]);
  await enqueueTests(h.db.pool, session, [{ path, estimateMs: null }]);
  const tree = { sessionId: session, repoId: repos[scm].id, branch: opts.branch ?? 'master', commitId: repos[scm].head };
  const lane = await runActivity(() =>
    activities.runLane({
      tree,
      lane: 0,
      workflowId: `session-${session}`,
      command: null,
      env: opts.env ?? {},
      secrets: opts.secrets ?? true,
      timeoutMs: 10_000,
      junitPattern: opts.junitPattern ?? null,
    }),
  ).result;
  expect(lane).toMatchObject({ ran: 1, runner: 'runner-under-test', setupFailure: null });
  const { rows } = await h.db.pool.query('SELECT status, exit_code, runner FROM test_results WHERE session_id = $1 AND path = $2', [session, path]);
  return rows[0];
}

async function storedOutput(sessionId: number, path: string): Promise<string> {
  const { rows } = await h.db.pool.query<{ output: string }>('SELECT output FROM test_results WHERE session_id = $1 AND path = $2', [sessionId, path]);
  return rows[0]!.output;
}

const failureOf = async (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error('expected a failure');
    },
    (e: unknown) => e,
  );

beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'sluice-build-activities-'));
  h = await startApiHarness({ config: { workspaceDir: join(tmp, 'workspaces') } });
  await mkdir(h.config.workspaceDir);
  activities = createBuildActivities({ config: h.config, records: pgBuildRecords(h.db.pool, h.config.secretKey), runner: 'runner-under-test' });
  server = await startSshGitServer({ authorizedKeys: [] });
  await h.admin('POST', '/api/v1/orgs', { name: 'acme', email: 'ci@acme.test' });

  const files = {
    'tests/env.sh': script('env | sort'),
    // The secret, then exactly 64 KiB minus 3 bytes: the kept tail starts with its last 3 characters.
    'tests/long.sh': script(`printf '%s' "$DEPLOY_TOKEN"\nhead -c ${64 * 1024 - 3} /dev/zero | tr '\\000' x`),
    'tests/junit.sh': script(`mkdir -p reports\ncat > reports/pytest.xml <<EOF\n${JUNIT}\nEOF\necho '<html>not junit</html>' > reports/garbage.xml\nln -sf /etc/passwd reports/linked.xml\nexit 1`),
  };
  const bare = join(tmp, 'app.git');
  const gitHead = await createBareRepo(bare, files, 'first');
  const hgDir = join(tmp, 'app-hg');
  await createHgRepo(hgDir, files, 'first');
  const hgHead = await hgCommit(hgDir, { 'README': { content: 'hg\n' } }, 'second', { author: { name: 'Hg Dev', email: 'hgdev@acme.test' } });

  repos.git = { ...(await makeRepo('git', 'app', server.url(bare), 'master')), head: gitHead };
  repos.hg = { ...(await makeRepo('hg', 'app-hg', server.hgUrl(hgDir), 'default')), head: hgHead };
  const keys = await h.db.pool.query<{ ssh_public_key: string }>('SELECT ssh_public_key FROM repos');
  server.setAuthorizedKeys(keys.rows.map((r) => r.ssh_public_key));

  for (const scm of ['git', 'hg'] as const) {
    await h.admin('PUT', `/api/v1/repos/${repos[scm].id}/secrets/DEPLOY_TOKEN`, { value: TOKEN });
    await h.admin('PUT', `/api/v1/repos/${repos[scm].id}/secrets/SHARED`, { value: SHARED_SECRET });
    await h.admin('PUT', `/api/v1/repos/${repos[scm].id}/secrets/TINY`, { value: 'abc' });
  }
});

afterAll(async () => {
  await server.close();
  await h.close();
  await rm(tmp, { recursive: true, force: true });
});

describe('queueTests', () => {
  it("writes the session's list of matching files, and refuses more than a build may run", async () => {
    const session = await newSession('git');
    await checkout('git', session, 'master', 'HEAD');
    const input = {
      tree: { sessionId: session, repoId: repos.git.id, branch: 'master', commitId: repos.git.head },
      suiteId: repos.git.suiteId,
      profileName: 'default',
      pattern: 'tests/*.sh',
    };
    const capped = createBuildActivities({ config: { ...h.config, maxTestFiles: 2 }, records: pgBuildRecords(h.db.pool, h.config.secretKey), runner: 'runner-under-test' });
    const error = await failureOf(runActivity(() => capped.queueTests(input)).result);
    expect(error).toMatchObject({
      type: 'TooManyTestFiles',
      nonRetryable: true,
      message: '3 files match the test pattern "tests/*.sh"; a build runs at most 2 (SLUICE_MAX_TEST_FILES)',
    });
    expect(await runActivity(() => activities.queueTests(input)).result).toEqual({ total: 3 });
    const { rows } = await h.db.pool.query('SELECT path, state FROM test_queue WHERE session_id = $1 ORDER BY position', [session]);
    expect(rows).toEqual(['tests/env.sh', 'tests/junit.sh', 'tests/long.sh'].map((path) => ({ path, state: 'pending' })));
  });
});

describe('checkout', () => {
  const listOf = async (session: number) =>
    (await h.db.pool.query<{ path: string }>('SELECT path FROM test_queue WHERE session_id = $1 ORDER BY position', [session])).rows.map((r) => r.path);

  it("lists the files of the profile it is told about when the repository has no sluice.yml, sparing queueTests", async () => {
    const session = await newSession('git');
    const list = { suiteId: repos.git.suiteId, profileName: 'default', pattern: 'tests/*.sh', unlessCommit: null };
    const got = await runActivity(() => activities.checkout({ sessionId: session, repoId: repos.git.id, branch: 'master', head: 'HEAD', list })).result;
    expect(got).toMatchObject({ repoConfig: { config: null }, listed: { profileName: 'default', pattern: 'tests/*.sh', total: 3 } });
    expect(await listOf(session)).toEqual(['tests/env.sh', 'tests/junit.sh', 'tests/long.sh']);
  });

  it('lists nothing for a commit already built, or when the list cannot be made (queueTests then says why)', async () => {
    const built = await newSession('git');
    const list = { suiteId: repos.git.suiteId, profileName: 'default', pattern: 'tests/*.sh', unlessCommit: repos.git.head };
    const got = await runActivity(() => activities.checkout({ sessionId: built, repoId: repos.git.id, branch: 'master', head: 'HEAD', list })).result;
    expect(got.listed).toBeUndefined();
    expect(await listOf(built)).toEqual([]);

    const capped = createBuildActivities({ config: { ...h.config, maxTestFiles: 2 }, records: pgBuildRecords(h.db.pool, h.config.secretKey), runner: 'runner-under-test' });
    const tooMany = await newSession('git');
    const again = await runActivity(() =>
      capped.checkout({ sessionId: tooMany, repoId: repos.git.id, branch: 'master', head: 'HEAD', list: { ...list, unlessCommit: null } }),
    ).result;
    expect(again).toMatchObject({ commitId: repos.git.head });
    expect(again.listed).toBeUndefined();
    expect(await listOf(tooMany)).toEqual([]);
  });

  it('pulls an hg repository over SSH with its key, by the repository scm', async () => {
    const session = await newSession('hg', { branch: 'default' });
    const { rows } = await h.db.pool.query<{ head: string }>('SELECT head FROM sessions WHERE id = $1', [session]);
    expect(rows[0]!.head).toBe('tip');
    const run = runActivity(() => activities.checkout({ sessionId: session, repoId: repos.hg.id, branch: 'default', head: 'tip' }));
    const result = await run.result;
    expect(result).toEqual({ commitId: repos.hg.head, committers: ['hgdev@acme.test'], message: 'second', repoConfig: { config: null } });
    expect(run.heartbeats()).toBeGreaterThan(0);
    expect(server.commands.some((c) => c.startsWith('hg -R '))).toBe(true);
  });

  it('still pulls git repositories with git', async () => {
    const session = await newSession('git');
    expect((await checkout('git', session, 'master', 'HEAD')).commitId).toBe(repos.git.head);
  });

  it('fails without retrying for what retrying cannot mend, with a safe message', async () => {
    const session = await newSession('hg', { branch: 'default' });
    const error = await failureOf(checkout('hg', session, 'master', 'tip'));
    expect(error).toBeInstanceOf(ApplicationFailure);
    expect(error).toMatchObject({ type: 'CheckoutFailed', nonRetryable: true, message: expect.stringMatching(/branch 'master' not found/) });
  });
});

describe('runLane', () => {
  let session: number;
  const saved: Record<string, string | undefined> = {};
  const WORKER_ENV = {
    DATABASE_URL: 'postgres://sluice:worker-db-password@db.internal/sluice',
    SLUICE_SECRET_KEY: 'd29ya2VyLXNlY3JldC1rZXktbm90LWZvci10ZXN0cw==',
    SLUICE_ADMIN_TOKEN: 'worker-admin-token-0123456789',
  };

  beforeAll(async () => {
    session = await newSession('git');
    await checkout('git', session, 'master', 'HEAD');
    // What a worker process has in its environment, and a test must never see.
    for (const [k, v] of Object.entries(WORKER_ENV)) {
      saved[k] = process.env[k];
      process.env[k] = v;
    }
  });

  afterAll(() => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });

  const run = (path = 'tests/env.sh', secrets = true) =>
    runFile('git', session, path, { env: { FROM_TRIGGER: 'trigger-value', SHARED: 'trigger-shared-value' }, secrets });

  it("gives a pull request's tests none of the repository's secrets", async () => {
    expect((await run('tests/env.sh', false)).status).toBe('passed');
    const output = await storedOutput(session, 'tests/env.sh');
    expect(output).toContain('FROM_TRIGGER=trigger-value\n');
    expect(output).toContain('SHARED=trigger-shared-value\n');
    expect(output).not.toMatch(/^(DEPLOY_TOKEN|TINY)=/m);
    expect(output).not.toContain(TOKEN);
  });

  it('gives the test its secrets as environment variables, masked in the stored output', async () => {
    const result = await run();
    expect(result).toEqual({ status: 'passed', exit_code: 0, runner: 'runner-under-test' });
    const output = await storedOutput(session, 'tests/env.sh');
    expect(output).toContain('DEPLOY_TOKEN=****\n');
    expect(output).not.toContain(TOKEN);
    // The trigger's env arrives too; for a name both set, the secret wins.
    expect(output).toContain('FROM_TRIGGER=trigger-value\n');
    expect(output).toContain('SHARED=****\n');
    expect(output).not.toContain('trigger-shared-value');
    // Too short to mask (and said so by the API), so shown as is.
    expect(output).toContain('TINY=abc\n');
  });

  it("passes nothing of the worker's environment: no database URL, no keys, no tokens", async () => {
    await run();
    const output = await storedOutput(session, 'tests/env.sh');
    const names = output
      .split('\n')
      .filter((l) => /^[A-Za-z_][A-Za-z0-9_]*=/.test(l))
      .map((l) => l.slice(0, l.indexOf('=')));
    expect(names).toEqual(expect.arrayContaining(['CI', 'DEPLOY_TOKEN', 'FROM_TRIGGER', 'HOME', 'LANG', 'PATH', 'SHARED', 'SLUICE', 'TINY']));
    for (const [name, value] of Object.entries(WORKER_ENV)) {
      expect(names).not.toContain(name);
      expect(output).not.toContain(value);
    }
    // Only the clean base, the trigger's env, the secrets and the worker's number (sh adds PWD, SHLVL and _).
    expect(names.filter((n) => !['PWD', 'SHLVL', '_', 'OLDPWD'].includes(n)).sort()).toEqual(
      ['CI', 'DEPLOY_TOKEN', 'FROM_TRIGGER', 'HOME', 'LANG', 'PATH', 'SHARED', 'SLUICE', 'SLUICE_WORKER_COUNT', 'SLUICE_WORKER_ID', 'TINY'].sort(),
    );
  });

  it('masks a secret cut in half where long output was truncated at the front', async () => {
    await run('tests/long.sh');
    const output = await storedOutput(session, 'tests/long.sh');
    expect(output).toMatch(/^\[sluice\] output truncated: the first \d+ bytes were dropped\n\*\*\*\*xxx/);
    expect(output).not.toContain(TOKEN.slice(-3) + 'x');
  });

  it('leaves out a secret that no longer unseals, says so, and still runs the test', async () => {
    const other = Buffer.alloc(32, 7);
    await h.db.pool.query('INSERT INTO repo_secrets (repo_id, name, value_sealed) VALUES ($1, $2, $3)', [repos.git.id, 'STALE', seal(other, 'stale-value')]);
    try {
      expect((await run()).status).toBe('passed');
      const output = await storedOutput(session, 'tests/env.sh');
      expect(output).not.toContain('STALE=');
      expect(output).toContain('[sluice] secret STALE could not be decrypted (was SLUICE_SECRET_KEY changed?); it was not set\n');
    } finally {
      await h.db.pool.query('DELETE FROM repo_secrets WHERE name = $1', ['STALE']);
    }
  });
});

describe('JUnit results', () => {
  let session: number;
  let workdir: string;

  beforeAll(async () => {
    session = await newSession('hg', { branch: 'default' });
    await checkout('hg', session, 'default', 'tip');
    workdir = join(h.config.workspaceDir, `session-${session}`);
    // The lane collects its checkout's reports once its files ran.
    expect((await runFile('hg', session, 'tests/junit.sh', { branch: 'default', junitPattern: 'reports/pytest.xml' })).status).toBe('failed');
  });

  const collect = (pattern?: string | null) =>
    collectJUnitResults({ records: pgBuildRecords(h.db.pool, h.config.secretKey) }, { sessionId: session, workdir, ...(pattern === undefined ? {} : { pattern }) });

  it('were collected by the lane that ran the tests', async () => {
    const { rows } = await h.db.pool.query('SELECT file, cases FROM junit_files WHERE session_id = $1', [session]);
    expect(rows).toEqual([{ file: 'reports/pytest.xml', cases: 4 }]);
  });

  async function cases() {
    const { rows } = await h.db.pool.query(
      'SELECT file, classname, name, status, time, message, output FROM test_cases WHERE session_id = $1 ORDER BY id',
      [session],
    );
    return rows;
  }

  it('collects nothing without a pattern (the suite has none), and leaves what is stored', async () => {
    expect(await collect()).toEqual({ cases: 0, failed: 0 });
    expect(await collect(null)).toEqual({ cases: 0, failed: 0 });
    expect(await cases()).toHaveLength(4);
  });

  it('stores the test cases of the JUnit reports the tests left, with secrets masked', async () => {
    expect(await collect('reports/*.xml')).toEqual({ cases: 4, failed: 2 });
    expect(await cases()).toEqual([
      { file: 'reports/pytest.xml', classname: 'tests.test_api', name: 'test_ok', status: 'passed', time: 0.01, message: null, output: null },
      {
        file: 'reports/pytest.xml',
        classname: 'tests.test_api',
        name: 'test_deploy',
        status: 'failed',
        time: 0.2,
        message: 'deploy refused for token ****',
        output: 'AssertionError: token **** rejected',
      },
      { file: 'reports/pytest.xml', classname: 'tests.test_api', name: 'test_db', status: 'error', time: 0, message: 'no database', output: 'ConnectionError' },
      { file: 'reports/pytest.xml', classname: 'tests.test_api', name: 'test_later', status: 'skipped', time: 0, message: 'later', output: null },
    ]);
    // The garbage file is noted; the symlink to /etc/passwd was never read.
    const { rows } = await h.db.pool.query('SELECT file, cases, note FROM junit_files WHERE session_id = $1 ORDER BY file', [session]);
    expect(rows).toEqual([
      { file: 'reports/garbage.xml', cases: 0, note: 'not a JUnit report: the root element is <html>, not <testsuites> or <testsuite>' },
      { file: 'reports/pytest.xml', cases: 4, note: null },
    ]);
  });

  it('replaces what an earlier attempt stored (a retried activity)', async () => {
    expect(await collect('reports/*.xml')).toEqual({ cases: 4, failed: 2 });
    expect(await cases()).toHaveLength(4);
  });

  it("uses the suite's junit_pattern when the workflow passes none", async () => {
    await h.admin('PATCH', `/api/v1/repos/${repos.hg.id}/suites/${repos.hg.suiteId}`, { junit_pattern: 'reports/pytest.xml' });
    try {
      expect(await collect()).toEqual({ cases: 4, failed: 2 });
      const { rows } = await h.db.pool.query('SELECT file FROM junit_files WHERE session_id = $1', [session]);
      expect(rows).toEqual([{ file: 'reports/pytest.xml' }]);
    } finally {
      await h.admin('PATCH', `/api/v1/repos/${repos.hg.id}/suites/${repos.hg.suiteId}`, { junit_pattern: null });
    }
  });

  it('notes a pattern it refuses', async () => {
    expect(await collect('../*.xml')).toEqual({ cases: 0, failed: 0 });
    const { rows } = await h.db.pool.query('SELECT note FROM junit_files WHERE session_id = $1', [session]);
    expect(rows).toEqual([{ note: expect.stringMatching(/^invalid JUnit pattern: the pattern must not contain '\.\.'/) }]);
  });

  it('shows the cases on the report page and in the session API', async () => {
    await collect('reports/*.xml');
    const html = (await h.request({ method: 'GET', url: await reportPath(h.db.pool, session) })).body;
    expect(html).toContain('<h2>Test cases</h2>');
    expect(html).toContain('4 test cases from 2 JUnit reports: 1 passed, 1 failed, 1 error, 1 skipped.');
    expect(html).toContain('test_deploy');
    expect(html).toContain('tests.test_api');
    expect(html).toContain('deploy refused for token ****');
    expect(html).toContain('no database');
    expect(html).not.toContain('test_ok');
    expect(html).toContain('reports/garbage.xml: not a JUnit report: the root element is &lt;html&gt;');
    expect(html).not.toContain(TOKEN);

    const json = (await h.request({ method: 'GET', url: await reportPath(h.db.pool, session), headers: { accept: 'application/json' } })).json();
    expect(json.cases).toEqual({ total: 4, passed: 1, failed: 1, error: 1, skipped: 1 });
    expect(json.failing_cases).toEqual([
      {
        file: 'reports/pytest.xml',
        classname: 'tests.test_api',
        name: 'test_deploy',
        status: 'failed',
        time: 0.2,
        message: 'deploy refused for token ****',
        output: 'AssertionError: token **** rejected',
      },
      { file: 'reports/pytest.xml', classname: 'tests.test_api', name: 'test_db', status: 'error', time: 0, message: 'no database', output: 'ConnectionError' },
    ]);

    const api = (await h.admin('GET', `/api/v1/sessions/${session}`)).json();
    expect(api.cases).toEqual({ total: 4, passed: 1, failed: 1, error: 1, skipped: 1 });
    expect(api.failing_cases.map((c: { name: string; output?: string }) => [c.name, c.output])).toEqual([
      ['test_deploy', undefined],
      ['test_db', undefined],
    ]);
    expect(api.junit_files).toHaveLength(2);

    // A session without JUnit reports shows zero counts and no section.
    const plain = await newSession('git');
    expect((await h.admin('GET', `/api/v1/sessions/${plain}`)).json()).toMatchObject({
      cases: { total: 0, passed: 0, failed: 0, error: 0, skipped: 0 },
      failing_cases: [],
      junit_files: [],
    });
    expect((await h.request({ method: 'GET', url: await reportPath(h.db.pool, plain) })).body).not.toContain('Test cases');
  });
});
