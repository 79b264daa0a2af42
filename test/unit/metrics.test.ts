/**
 * The pure parts of /metrics: what a build's timing keys become, the trigger reason codes (every
 * selection rule's words map to a code, so a changed text fails here), bounded attempt labels,
 * runner lanes, and the listener itself (a real HTTP server on loopback, with a stand-in for
 * the Temporal SDK's own endpoint).
 */
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { loadConfig } from '../../src/config';
import { selectTrigger, type SelectionInput } from '../../src/core/selection';
import { observeBuild, phaseDurations, runStates } from '../../src/metrics/builds';
import { attemptLabel, countDelivery, runnerLanes, withLanes } from '../../src/metrics/counts';
import { registry, setInstallationSource } from '../../src/metrics/registry';
import { serveMetrics } from '../../src/metrics/serve';
import { countTrigger, triggerReasonCode } from '../../src/metrics/triggers';

/** A sample's value in the registry's text, or undefined when there is no such series. */
async function sample(name: string, labels: Record<string, string> = {}): Promise<number | undefined> {
  const text = await registry.metrics();
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const m = /^([^{\s]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const got = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) return Number(m[3]);
  }
  return undefined;
}

describe('build timing as metrics', () => {
  const timing = {
    ci_received_at: 100,
    queue_first_seen_at: 100,
    queue_first_allowed_at: 104,
    workers_assigned_at: 105,
    setup: 110,
    exec: 111,
    post_build: 131,
    done: 132,
    capture_cache: 140,
  };

  it('gives each key the time since the key before it, ties in the spec order', () => {
    expect(phaseDurations(timing)).toEqual([
      { phase: 'queue_first_seen_at', seconds: 0 },
      { phase: 'queue_first_allowed_at', seconds: 4 },
      { phase: 'workers_assigned_at', seconds: 1 },
      { phase: 'setup', seconds: 5 },
      { phase: 'exec', seconds: 1 },
      { phase: 'post_build', seconds: 20 },
      { phase: 'done', seconds: 1 },
      { phase: 'capture_cache', seconds: 8 },
    ]);
  });

  it('leaves out keys no build records (the label stays bounded)', () => {
    expect(phaseDurations({ ci_received_at: 1, 'refs/heads/x': 2, setup: 3 })).toEqual([{ phase: 'setup', seconds: 2 }]);
  });

  it('splits the run into pending, executing and finalizing', () => {
    expect(runStates(timing)).toEqual({ pending: 5, executing: 27, finalizing: 8 });
    // Stopped while queued: it never executed.
    expect(runStates({ ci_received_at: 10, queue_first_seen_at: 10, done: 13 })).toEqual({ pending: 3 });
    expect(runStates({})).toEqual({});
  });

  it('observes an ended build by suite, status, state and phase', async () => {
    const before = (await sample('sluice_builds_total', { suite: '77', status: 'failed' })) ?? 0;
    observeBuild({ suiteId: 77, status: 'failed', timing });
    expect(await sample('sluice_builds_total', { suite: '77', status: 'failed' })).toBe(before + 1);
    expect(
      await sample('cicd_pipeline_run_duration_seconds_sum', { cicd_pipeline_name: '77', cicd_pipeline_run_state: 'executing', cicd_pipeline_result: 'failure' }),
    ).toBe(27);
    expect(await sample('sluice_queue_wait_seconds_sum', { suite: '77' })).toBe(4);
    expect(await sample('sluice_build_phase_duration_seconds_count', { phase: 'post_build' })).toBeGreaterThanOrEqual(1);
  });
});

describe('trigger reason codes', () => {
  const base: SelectionInput = {
    trigger: { branch: 'feature/"is switched off"', head: 'HEAD' },
    repo: { pullRequestOnly: false, branchBlacklist: [] },
    branch: null,
    hasSuite: true,
  };
  const code = (over: Partial<SelectionInput>, trigger: Partial<SelectionInput['trigger']> = {}) =>
    triggerReasonCode(selectTrigger({ ...base, ...over, trigger: { ...base.trigger, ...trigger } }).reason!);

  it('names every rule that skips or drops', () => {
    expect(code({ repo: { pullRequestOnly: false, branchBlacklist: ['feature/*'] } })).toBe('blacklisted');
    expect(code({ branch: { enabled: false, hidden: false, lockedVisible: false } })).toBe('switched-off');
    expect(code({ hasSuite: false })).toBe('no-suite');
    expect(code({ hasSuite: false }, { kind: 'tag' })).toBe('tag-no-suite');
    expect(code({}, { kind: 'tag-delete' })).toBe('tag-deleted');
    expect(code({}, { kind: 'branch-delete' })).toBe('branch-deleted');
    expect(code({ repo: { pullRequestOnly: true, branchBlacklist: [] } })).toBe('pull-request-only');
    expect(code({}, { kind: 'pull-request', action: 'closed' })).toBe('pull-request-closed');
    expect(code({}, { commits: [{ id: 'abc1234', message: 'tidy up [no ci]' }], head: 'abc1234' } as Partial<SelectionInput['trigger']>)).toBe('skip-tag');
  });

  it('reads no code out of a name: words inside quotes do not count', () => {
    // The branch is called `"is switched off"`, but the rule that fired is the missing suite.
    expect(code({ hasSuite: false })).toBe('no-suite');
    expect(triggerReasonCode('something else entirely')).toBe('other');
  });

  it('counts a drop by its code, and a build with no reason', async () => {
    countTrigger('github', 'drop', 'no suite for branch "x"');
    countTrigger('github', 'build', null);
    expect(await sample('sluice_triggers_total', { provider: 'github', decision: 'drop', reason: 'no-suite' })).toBe(1);
    expect(await sample('sluice_triggers_total', { provider: 'github', decision: 'build', reason: '' })).toBe(1);
  });
});

describe('labels that stay bounded', () => {
  it('groups attempt numbers', () => {
    expect([1, 2, 3, 4, 9, 10, 36, 500].map(attemptLabel)).toEqual(['1', '2', '3', '4-9', '4-9', '10+', '10+', '10+']);
  });

  it('counts a delivery by event, outcome, attempt group and origin', async () => {
    countDelivery({ event: 'stop', outcome: 'retrying', attempt: 12, origin: 'event', durationMs: 250 });
    expect(await sample('sluice_webhook_deliveries_total', { event: 'stop', outcome: 'retrying', attempt: '10+', origin: 'event' })).toBe(1);
  });
});

describe('runner lanes', () => {
  it('are available until taken, busy while an activity runs, and gone when the runner closes', async () => {
    const busy = () => sample('cicd_worker_count', { cicd_worker_state: 'busy' });
    const available = () => sample('cicd_worker_count', { cicd_worker_state: 'available' });
    const [b0, a0] = [(await busy()) ?? 0, (await available()) ?? 0];
    const lanes = runnerLanes(2);
    expect(await available()).toBe(a0 + 2);

    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const activities = withLanes({ run: async (n: number) => (await held, n * 2) }, lanes);
    const running = [activities.run(1), activities.run(2), activities.run(3)];
    expect(await busy()).toBe(b0 + 3);
    expect(await available()).toBe(a0); // never below none: three at once on two slots
    release();
    expect(await Promise.all(running)).toEqual([2, 4, 6]);
    expect(await busy()).toBe(b0);
    expect(await available()).toBe(a0 + 2);
    lanes.close();
    expect(await available()).toBe(a0);
  });
});

describe('the /metrics listener', () => {
  let sdk: http.Server;
  let sdkUrl: string;
  beforeAll(async () => {
    // Stands in for the Temporal SDK's own Prometheus endpoint.
    sdk = http.createServer((_req, res) => res.end('# TYPE temporal_worker_task_slots_available gauge\ntemporal_worker_task_slots_available{worker_type="ActivityWorker"} 4\n'));
    await new Promise<void>((resolve) => sdk.listen(0, '127.0.0.1', resolve));
    sdkUrl = `http://127.0.0.1:${(sdk.address() as AddressInfo).port}/metrics`;
  });
  afterAll(() => new Promise<void>((resolve) => sdk.close(() => resolve())));

  it("serves Sluice's metrics with the SDK's after them, and nothing else", async () => {
    const server = await serveMetrics({ host: '127.0.0.1', port: 0, extraUrl: () => sdkUrl });
    try {
      const res = await fetch(server.url);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toContain('text/plain');
      const text = await res.text();
      expect(text).toContain('# TYPE sluice_triggers_total counter');
      expect(text).toContain('process_cpu_seconds_total');
      expect(text).toContain('temporal_worker_task_slots_available{worker_type="ActivityWorker"} 4');
      expect((await fetch(server.url.replace('/metrics', '/'))).status).toBe(404);
      expect((await fetch(server.url, { method: 'POST' })).status).toBe(405);
    } finally {
      await server.close();
    }
  });

  it("still serves Sluice's own when the SDK's endpoint does not answer", async () => {
    const warn = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
    const server = await serveMetrics({ host: '127.0.0.1', port: 0, extraUrl: () => 'http://127.0.0.1:1/metrics' });
    try {
      const res = await fetch(server.url);
      expect(res.status).toBe(200);
      expect(await res.text()).toContain('sluice_builds_total');
      expect(warn).toHaveBeenCalledTimes(1);
    } finally {
      warn.mockRestore();
      await server.close();
    }
  });

  it('reads queue lengths and runners from the installation at scrape time', async () => {
    const stop = setInstallationSource(async () => ({
      activeRuns: [
        { suiteId: 3, status: 'queued', count: 2 },
        { suiteId: 3, status: 'running', count: 1 },
      ],
      runners: { keyed: 4, token: 1 },
    }));
    try {
      expect(await sample('cicd_pipeline_run_active', { cicd_pipeline_name: '3', cicd_pipeline_run_state: 'pending' })).toBe(2);
      expect(await sample('cicd_pipeline_run_active', { cicd_pipeline_name: '3', cicd_pipeline_run_state: 'executing' })).toBe(1);
      expect(await sample('sluice_runners_connected', { kind: 'keyed' })).toBe(4);
    } finally {
      stop();
    }
    // Without a source (a worker or a runner) the series are gone, not stale.
    expect(await sample('cicd_pipeline_run_active', { cicd_pipeline_name: '3', cicd_pipeline_run_state: 'pending' })).toBeUndefined();
  });
});

describe('configuration', () => {
  const env = { SLUICE_SECRET_KEY: Buffer.alloc(32).toString('base64') };
  it('has no metrics listener unless SLUICE_METRICS_PORT is set; loopback by default', () => {
    expect(loadConfig(env, 'worker').metrics).toBeUndefined();
    expect(loadConfig({ ...env, SLUICE_METRICS_PORT: '9464' }, 'worker').metrics).toEqual({ host: '127.0.0.1', port: 9464 });
    expect(loadConfig({ ...env, SLUICE_METRICS_PORT: '9464', SLUICE_METRICS_HOST: '0.0.0.0' }, 'runner').metrics).toEqual({ host: '0.0.0.0', port: 9464 });
  });
  it('refuses a port that is not one, naming the variable', () => {
    expect(() => loadConfig({ ...env, SLUICE_METRICS_PORT: 'http' }, 'worker')).toThrow(/SLUICE_METRICS_PORT/);
    expect(() => loadConfig({ ...env, SLUICE_METRICS_PORT: '70000' }, 'worker')).toThrow(/SLUICE_METRICS_PORT/);
  });
});

describe('the Grafana dashboard (docs/grafana-dashboard.json)', () => {
  it("asks only for series Sluice's registry has (besides Temporal's and the process's own)", async () => {
    const dashboard = JSON.parse(readFileSync(path.join(__dirname, '../../docs/grafana-dashboard.json'), 'utf8')) as { panels: { targets?: { expr: string }[] }[] };
    const exprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr));
    expect(exprs.length).toBeGreaterThan(20);
    const known = new Set((await registry.getMetricsAsJSON()).map((m) => m.name));
    // Metric names: what is left once `by (...)` groupings and `label=` matchers are gone.
    const names = (e: string) => e.replace(/\bby \([^)]*\)/g, '').replace(/\b\w+\s*(=~|!=|=)/g, '');
    const asked = new Set(exprs.flatMap((e) => [...names(e).matchAll(/\b((?:sluice|cicd|http_server)_[a-z_]+)/g)].map((m) => (known.has(m[1]!) ? m[1]! : m[1]!.replace(/_(bucket|sum|count)$/, '')))));
    expect([...asked].filter((name) => !known.has(name))).toEqual([]);
    expect(asked.size).toBeGreaterThan(12);
  });
});
