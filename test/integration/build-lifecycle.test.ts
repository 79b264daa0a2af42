/**
 * A worker's lifecycle (steps/lifecycle.ts) on real parts, without Temporal: real hook and test
 * processes in a real directory, the rendezvous and the records in a real PostgreSQL, and a
 * real PostgreSQL service database. It walks the list of steps as GitLab Runner's tests walk
 * its stages: what runs in which order, and, stopped at each step, what is left undone and what
 * is cleaned up anyway (the worker's service database, always).
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { resolveBuildSetup } from '../../src/core/buildSetup';
import { loadInstallation } from '../../src/db/installation';
import { enqueueTests } from '../../src/db/testQueue';
import { runWorker, WORKER_STEPS, type WorkerDeps, type WorkerJob } from '../../src/steps/lifecycle';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { insertPostSession } from '../support/postSession';
import { eventually } from '../support/wait';
import { pgBuildRecords } from '../../src/db/buildRecords';

const PG_ADMIN = 'postgres://postgres@127.0.0.1:5432/postgres';
let db: TestDatabase;
let tmp: string;
let installation: string;
const secretKey = Buffer.alloc(32, 3);

beforeAll(async () => {
  db = await createTestDatabase('sluice_lifecycle');
  tmp = await mkdtemp(join(tmpdir(), 'sluice-lifecycle-'));
  installation = await loadInstallation(db.pool);
});
afterAll(async () => {
  await db?.drop();
  await rm(tmp, { recursive: true, force: true });
});

/** A session with one test file, a checkout whose test writes to `log`, and a worker job for it (each test sets its setup). */
async function worker(): Promise<{ job: WorkerJob; log: string; read: () => Promise<string[]> }> {
  const s = await insertPostSession(db.pool, secretKey);
  const tree = join(tmp, `session-${s.sessionId}`);
  const log = join(tmp, `steps-${s.sessionId}.log`);
  await mkdir(join(tree, 'test'), { recursive: true });
  await writeFile(join(tree, 'test', 'a_test.sh'), `#!/bin/sh\necho "test $PGDATABASE" >> ${log}\n`, { mode: 0o755 });
  await enqueueTests(db.pool, s.sessionId, [{ path: 'test/a_test.sh', estimateMs: null }]);
  const job: WorkerJob = {
    sessionId: s.sessionId,
    repoId: s.repoId,
    worker: 1,
    workers: 1,
    attempt: 1,
    tree,
    home: `${tree}.home`,
    command: null,
    env: {},
    secrets: false,
    timeoutMs: 30_000,
    junitPattern: null,
    setup: resolveBuildSetup(undefined, undefined),
    cache: { readScopes: ['master'], writeScope: null },
    savesCache: true,
    installation,
  };
  const read = async () => (await readFile(log, 'utf8').catch(() => '')).trim().split('\n').filter(Boolean);
  return { job, log, read };
}

function deps(signal?: AbortSignal): WorkerDeps {
  return {
    records: pgBuildRecords(db.pool, secretKey),
    runner: 'runner-under-test',
    hookTimeoutMs: 30_000,
    cache: null,
    artifacts: null,
    services: { postgresql: PG_ADMIN },
    signal,
    firstFailure: async () => undefined,
    testsStarted: async () => undefined,
  };
}

/** Whether the worker's service database of `session` still exists. */
async function serviceDatabase(session: number): Promise<boolean> {
  const pg = new Client({ connectionString: PG_ADMIN });
  await pg.connect();
  try {
    const { rows } = await pg.query('SELECT 1 FROM pg_database WHERE datname = $1', [`sluice_${installation}_${session}_1`]);
    return rows.length > 0;
  } finally {
    await pg.end();
  }
}

const note = (log: string, step: string) => `echo "${step} $PGDATABASE" >> ${log}`;

it('the steps, in the order a worker takes them', () => {
  expect(WORKER_STEPS).toEqual(['image', 'cache restore', 'pre_setup', 'package setup', 'services', 'worker_setup', 'post_setup', 'rendezvous', 'tests', 'post_worker', 'artifacts', 'cache save']);
});

it('runs every hook and the tests in that order, services there from worker_setup on, and gone after', async () => {
  const { job, log, read } = await worker();
  job.setup = resolveBuildSetup(undefined, {
    hooks: { pre_setup: note(log, 'pre_setup'), package_setup: note(log, 'package_setup'), worker_setup: note(log, 'worker_setup'), post_setup: note(log, 'post_setup'), post_worker: note(log, 'post_worker') },
    services: ['postgresql'],
  });
  const out = await runWorker(deps(), job);
  expect(out).toMatchObject({ ran: 1, stopped: false, setupFailure: null });
  const db = `sluice_${installation}_${job.sessionId}_1`;
  expect(await read()).toEqual(['pre_setup ', 'package_setup ', `worker_setup ${db}`, `post_setup ${db}`, `test ${db}`, `post_worker ${db}`]);
  const t = out.timing as Record<string, number>;
  expect(t.package_setup).toBeLessThanOrEqual(t.services_setup!);
  expect(t.services_setup).toBeLessThanOrEqual(t.worker_hooks!);
  expect(t.worker_hooks).toBeLessThanOrEqual(t.setup_hooks!);
  expect(t.setup_hooks).toBeLessThanOrEqual(t.exec!);
  expect(t.post_build).toBeLessThanOrEqual(t.setup_post_hooks!);
  expect(await serviceDatabase(job.sessionId)).toBe(false);
});

describe.each([
  // [the step that is stopped, what ran before it]
  ['pre_setup', []],
  ['package_setup', ['pre_setup']],
  ['worker_setup', ['pre_setup', 'package_setup']],
  ['post_setup', ['pre_setup', 'package_setup', 'worker_setup']],
  ['test', ['pre_setup', 'package_setup', 'worker_setup', 'post_setup']],
  ['post_worker', ['pre_setup', 'package_setup', 'worker_setup', 'post_setup', 'test']],
])('stopped during %s', (stopped, before) => {
  it('runs nothing after it, and drops the worker’s database all the same', async () => {
    const { job, log, read } = await worker();
    const started = join(tmp, `started-${job.sessionId}`);
    // Each step notes itself; the one stopped says it started, then waits to be killed.
    const step = (name: string) => (name === stopped ? `touch ${started}; sleep 30` : `echo ${name} >> ${log}`);
    job.setup = resolveBuildSetup(undefined, {
      hooks: { pre_setup: step('pre_setup'), package_setup: step('package_setup'), worker_setup: step('worker_setup'), post_setup: step('post_setup'), post_worker: step('post_worker') },
      services: ['postgresql'],
    });
    await writeFile(join(job.tree, 'test', 'a_test.sh'), `#!/bin/sh\n${step('test')}\n`, { mode: 0o755 });
    const stop = new AbortController();
    const running = runWorker(deps(stop.signal), job);
    await eventually(`${stopped} to start`, async () => readFile(started).then(() => true, () => false), 20_000);
    stop.abort();
    const out = await running;
    expect(out.stopped).toBe(true);
    expect(await read()).toEqual(before);
    expect(await serviceDatabase(job.sessionId)).toBe(false);
  });
});

it('a failing setup hook is the worker’s failure: no test runs, later steps do not either, the database goes', async () => {
  const { job, log, read } = await worker();
  job.setup = resolveBuildSetup(undefined, {
    hooks: { worker_setup: `echo worker_setup >> ${log}; echo "no schema" >&2; exit 2`, post_setup: `echo post_setup >> ${log}`, post_worker: `echo post_worker >> ${log}` },
    services: ['postgresql'],
  });
  const out = await runWorker(deps(), job);
  expect(out).toMatchObject({ ran: 0, stopped: false, setupFailure: 'the worker_setup hook failed on worker 1 (exit code 2):\nno schema' });
  expect(await read()).toEqual(['worker_setup']);
  expect(await serviceDatabase(job.sessionId)).toBe(false);
});
