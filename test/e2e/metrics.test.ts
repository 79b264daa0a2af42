/**
 * /metrics on every role of a running installation (test/support/cluster.ts: the API, a worker
 * and a runner, each `node dist/<role>/main.js`, each with SLUICE_METRICS_PORT=0 and so a
 * listener of its own on a free loopback port), scraped after a real build: what an operator's
 * Prometheus would see moved. And `npm start` (every role in one process): one registry, one
 * endpoint, with every role's series in it.
 */
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startCluster, type Cluster } from '../support/cluster';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { startRole, type RoleProcess } from '../support/processes';
import { freePort } from '../support/sluice';
import { scrape, total, type Sample } from '../support/metrics';
import { eventually } from '../support/wait';
import { script } from '../support/world';
import { removeDir } from '../support/removeDir';

let c: Cluster;
const urls: { api: string; worker: string; runner: string } = { api: '', worker: '', runner: '' };

/** The URL a role said it serves its metrics at. */
async function metricsUrl(role: { waitForOutput(p: RegExp, t?: number): Promise<RegExpMatchArray> }): Promise<string> {
  return (await role.waitForOutput(/metrics at (http:\/\/127\.0\.0\.1:\d+\/metrics)/, 90_000))[1]!;
}

beforeAll(async () => {
  c = await startCluster({ runners: 1, env: { SLUICE_SANDBOX: 'none', SLUICE_METRICS_PORT: '0' } });
  [urls.api, urls.worker, urls.runner] = await Promise.all([metricsUrl(c.api), metricsUrl(c.worker), metricsUrl(c.runners[0]!)]);
}, 300_000);

afterAll(async () => {
  await c?.stop();
});

describe('metrics after a real build', () => {
  let session: number;
  let suite: string;
  let api: Sample[];
  let worker: Sample[];
  let runner: Sample[];

  beforeAll(async () => {
    const repo = await c.makeRepo(
      { 'test/a_test.sh': script('echo fine'), 'test/b_test.sh': script('echo broken; exit 1') },
      { branch: 'master', test_pattern: 'test/*_test.sh' },
    );
    session = await c.build(repo);
    const events = await c.eventsOf(session);
    expect(events.at(-1)).toMatchObject({ event: 'stop', status: 'failed' });
    suite = String((await c.db.pool.query<{ suite_id: string }>('SELECT suite_id FROM sessions WHERE id = $1', [session])).rows[0]!.suite_id);
    // The `stop` the receiver has is logged (and counted) once its answer is back: wait for that state.
    worker = await eventually('the worker to count the delivered stop', async () => {
      const s = await scrape(urls.worker);
      return (total(s, 'sluice_webhook_deliveries_total', { event: 'stop', outcome: 'delivered' }) ?? 0) >= 1 && s;
    });
    [api, runner] = await Promise.all([scrape(urls.api), scrape(urls.runner)]);
  }, 300_000);

  it('the API counts the trigger, its HTTP request by route pattern, and reads the queue and runners', () => {
    expect(total(api, 'sluice_triggers_total', { provider: 'builds', decision: 'build', reason: '' })).toBe(1);
    expect(
      total(api, 'http_server_request_duration_seconds_count', { http_request_method: 'POST', http_route: '/1/:provider/:key', http_response_status_code: '200' }),
    ).toBe(1);
    expect(total(api, 'http_server_request_duration_seconds_count', { http_request_method: 'POST', http_route: '/api/v1/orgs', http_response_status_code: '201' })).toBe(1);
    // No raw URL is a label: the repository's key is in the trigger's path.
    expect(api.some((s) => Object.values(s.labels).some((v) => v.includes('/1/builds/')))).toBe(false);
    expect(total(api, 'sluice_runners_connected', { kind: 'keyed' })).toBe(1);
    expect(total(api, 'cicd_pipeline_run_active', { cicd_pipeline_name: suite })).toBeUndefined(); // nothing queued or running now
  });

  it('the worker counts the build by suite and result, with its phases and queue wait', () => {
    expect(total(worker, 'sluice_builds_total', { suite, status: 'failed' })).toBe(1);
    for (const state of ['pending', 'executing']) {
      expect(total(worker, 'cicd_pipeline_run_duration_seconds_count', { cicd_pipeline_name: suite, cicd_pipeline_run_state: state, cicd_pipeline_result: 'failure' })).toBe(1);
    }
    for (const phase of ['setup', 'exec', 'post_build', 'done']) {
      expect([phase, total(worker, 'sluice_build_phase_duration_seconds_count', { phase })]).toEqual([phase, 1]);
    }
    expect(total(worker, 'sluice_build_phase_duration_seconds_sum', { phase: 'post_build' })).toBeGreaterThan(0);
    expect(total(worker, 'sluice_queue_wait_seconds_count', { suite })).toBe(1);
  });

  it('webhook deliveries are counted by event, outcome and attempt, where they were sent', () => {
    const both = [...api, ...worker];
    for (const event of ['received', 'start', 'stop']) {
      expect([event, total(both, 'sluice_webhook_deliveries_total', { event, outcome: 'delivered', attempt: '1' })]).toEqual([event, 1]);
    }
  });

  it('the runner counts the test files by result, and its lanes', () => {
    expect(total(runner, 'sluice_test_files_total', { result: 'passed' })).toBe(1);
    expect(total(runner, 'sluice_test_files_total', { result: 'failed' })).toBe(1);
    expect(total(runner, 'sluice_test_files_flaky_total')).toBe(0);
    // SLUICE_RUNNER_SLOTS=1 in the cluster; the build is over, so its lane is free again.
    expect(total(runner, 'cicd_worker_count', { cicd_worker_state: 'available' })).toBe(1);
    expect(total(runner, 'cicd_worker_count', { cicd_worker_state: 'busy' })).toBe(0);
  });

  it("the worker and the runner serve the Temporal SDK's own metrics too; the API runs no Temporal worker", () => {
    for (const [role, samples] of [['worker', worker], ['runner', runner]] as const) {
      const names = new Set(samples.map((s) => s.name));
      expect([role, ['temporal_worker_task_slots_available', 'temporal_num_pollers'].filter((n) => !names.has(n))]).toEqual([role, []]);
      expect([role, [...names].some((n) => n.startsWith('temporal_activity_schedule_to_start_latency_seconds'))]).toEqual([role, true]);
    }
    expect(api.some((s) => s.name.startsWith('temporal_'))).toBe(false);
  });

  it('every role answers only /metrics there', async () => {
    for (const url of Object.values(urls)) expect((await fetch(url.replace(/\/metrics$/, '/healthz'))).status).toBe(404);
  });
});

describe('npm start: every role in one process', () => {
  let db: TestDatabase;
  let dataDir: string;
  let dev: RoleProcess;
  let url: string;

  beforeAll(async () => {
    db = await createTestDatabase('sluice_metrics_dev');
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'sluice-metrics-dev-'));
    dev = startRole('dev', {
      HOME: dataDir,
      SLUICE_DATA_DIR: dataDir,
      SLUICE_WORKSPACE_DIR: path.join(dataDir, 'workspaces'),
      DATABASE_URL: db.url,
      TEMPORAL_ADDRESS: process.env.SLUICE_TEST_TEMPORAL_ADDRESS!,
      PORT: String(await freePort()),
      SLUICE_METRICS_PORT: '0',
      // Queues of its own on the shared Temporal server: it takes no other test's work.
      SLUICE_TASK_QUEUE: `sluice-${path.basename(dataDir)}`,
      SLUICE_BUILD_QUEUE: `sluice-build-${path.basename(dataDir)}`,
    });
    await dev.waitForOutput(/Sluice is running\./, 120_000);
    url = (await dev.waitForOutput(/Metrics +(http:\/\/127\.0\.0\.1:\d+\/metrics)/))[1]!;
  }, 180_000);

  afterAll(async () => {
    await dev?.stop();
    await db?.drop();
    if (dataDir) await removeDir(dataDir);
  });

  it("serves the API's, the runner's and Temporal's series at one address", async () => {
    expect(dev.output()).not.toMatch(/metrics at /); // one listener, named once, in the banner
    const api = dev.output().match(/API +(http:\S+)/)![1]!;
    expect((await fetch(`${api}/healthz`)).status).toBe(200);
    const samples = await eventually('the runner to be seen in PostgreSQL', async () => {
      const s = await scrape(url);
      return total(s, 'sluice_runners_connected', { kind: 'keyed' }) === 1 && s;
    });
    expect(total(samples, 'http_server_request_duration_seconds_count', { http_route: '/healthz', http_response_status_code: '200' })).toBeGreaterThanOrEqual(1);
    // The runner's lanes (SLUICE_RUNNER_SLOTS' default, 4), all free; the workers' SDK slots.
    expect(total(samples, 'cicd_worker_count', { cicd_worker_state: 'available' })).toBe(4);
    expect(samples.some((s) => s.name === 'temporal_worker_task_slots_available')).toBe(true);
  });
});
