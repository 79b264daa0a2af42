/**
 * Every metric Sluice exports, in one registry per process: `npm start` runs every role in one
 * process and so has one registry and one endpoint; a role on its own fills in what it sees.
 * Names follow OpenTelemetry's semantic conventions where they have one (CI/CD: `cicd_*`;
 * HTTP: `http_server_request_duration_seconds`), Prometheus naming with a `sluice_` prefix
 * otherwise. Labels are bounded: suite ids, statuses, route patterns, reason codes; never a
 * commit, a branch, a URL, an error message or a secret. docs/observability.md lists them.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

export const registry = new Registry();
// Process CPU, memory, event-loop lag and GC: what a slow role is first asked about.
collectDefaultMetrics({ register: registry });

const registers = [registry];
/** Seconds, from a request's milliseconds to a build's hour. */
const SHORT = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const LONG = [1, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200];

/** A counter of this registry, by `labelNames`. */
function counter<L extends string>(name: string, help: string, labelNames: readonly L[]): Counter<L> {
  return new Counter({ name, help, labelNames, registers });
}

/** A histogram of this registry, by `labelNames`, in `buckets` (SHORT or LONG). */
function histogram<L extends string>(name: string, help: string, labelNames: readonly L[], buckets: number[]): Histogram<L> {
  return new Histogram({ name, help, labelNames, buckets, registers });
}

// ---- HTTP (the API) ----

export const httpRequestDuration = histogram('http_server_request_duration_seconds', 'HTTP requests the API answered, by method, route pattern (never the raw URL) and status code (OpenTelemetry http.server.request.duration)', ['http_request_method', 'http_route', 'http_response_status_code'], SHORT);

// ---- Triggers (the API) ----

export const triggers = counter('sluice_triggers_total', 'Triggers answered, by provider, decision (build, skip, drop, ignore, unavailable, refused) and reason code ("" for a build)', ['provider', 'decision', 'reason']);

// ---- Builds (the worker records their ends) ----

export const pipelineRunDuration = histogram('cicd_pipeline_run_duration_seconds', 'Ended builds by suite (cicd_pipeline_name, the suite id), state (pending: queued until runners were assigned; executing: until results were stored; finalizing: after) and result (OpenTelemetry cicd.pipeline.run.duration)', ['cicd_pipeline_name', 'cicd_pipeline_run_state', 'cicd_pipeline_result'], LONG);

export const builds = counter('sluice_builds_total', 'Ended builds, by suite id and status (passed, failed, error, stopped, skipped)', ['suite', 'status']);

export const buildPhaseDuration = histogram('sluice_build_phase_duration_seconds', "Time each step of an ended build took, by the timing key that ends it (spec §6: setup, package_setup, exec, post_build, ...): from the key before it to this one", ['phase'], LONG);

export const queueWait = histogram('sluice_queue_wait_seconds', "Time an ended build waited in its suite's queue (queue_first_seen_at to queue_first_allowed_at), by suite id", ['suite'], LONG);

/** Collected at scrape time from PostgreSQL by the API (setInstallationSource). */
export const pipelineRunActive = new Gauge({
  name: 'cicd_pipeline_run_active',
  help: "Builds not ended, by suite id and state: pending (in the suite's queue: its queue length) or executing (OpenTelemetry cicd.pipeline.run.active); from PostgreSQL, on the API",
  labelNames: ['cicd_pipeline_name', 'cicd_pipeline_run_state'] as const,
  registers,
  async collect() {
    await collectInstallation();
  },
});

// ---- Tests (the runners) ----

export const testFiles = counter('sluice_test_files_total', 'Test files whose verdict a runner recorded, by result (passed, failed, error, skipped)', ['result']);

export const flakyTestFiles = new Counter({
  name: 'sluice_test_files_flaky_total',
  help: 'Test files that passed only on a retry (retry_failed)',
  registers,
});

export const testBatches = counter('sluice_test_batches_total', 'Batches of test files run as one process (a test_command with {files}), by result', ['result']);

// ---- Outgoing: webhooks, commit statuses, push, chat, e-mail ----

export const webhookDeliveries = counter('sluice_webhook_deliveries_total', 'Webhook delivery attempts, by event, outcome (delivered, retrying, gave_up, dropped), attempt number (1, 2, 3, 4-9, 10+) and origin (event, redeliver, ping)', ['event', 'outcome', 'attempt', 'origin']);

export const webhookDeliveryDuration = histogram('sluice_webhook_delivery_duration_seconds', 'How long one webhook delivery attempt took, by outcome', ['outcome'], SHORT);

export const notifications = counter('sluice_notifications_total', 'Commit statuses, pushes to a CI server, chat messages and e-mails, by channel (commit_status, push, chat, email) and outcome (delivered, retrying, failed; commit statuses: gave_up, dropped)', ['channel', 'outcome']);

// ---- Cache (the runners) ----

export const cacheRestores = counter('sluice_cache_restores_total', "Dependency cache look-ups, by result: exact (the key's entry), fallback (a restore key's), miss", ['result']);

export const cacheSaves = counter('sluice_cache_saves_total', 'Dependency cache saves, by whether an entry was saved (true) or not (false: an exact hit, an untrusted build, a limit)', ['saved']);

export const checkouts = counter('sluice_checkouts_total', "A runner's trees made for builds, by how: kept (from a kept tree of an ended build: only changed files written) or new", ['tree']);

export const cacheBytes = counter('sluice_cache_bytes_total', 'Bytes of dependency cache entries, by direction (restored, saved)', ['direction']);

// ---- Runners ----

export const workerCount = new Gauge({
  name: 'cicd_worker_count',
  help: "This runner's lanes (activity slots), by state: busy or available (OpenTelemetry cicd.worker.count); sum over runners",
  labelNames: ['cicd_worker_state'] as const,
  registers,
});

/** Collected at scrape time from PostgreSQL by the API (setInstallationSource). */
export const runnersConnected = new Gauge({
  name: 'sluice_runners_connected',
  help: 'Runners heard from lately, by kind: keyed (PostgreSQL and Temporal) or token (runner tokens); from PostgreSQL, on the API',
  labelNames: ['kind'] as const,
  registers,
  async collect() {
    await collectInstallation();
  },
});

// ---- What the API reads from PostgreSQL at scrape time ----

/** The installation's state as one scrape sees it. */
export interface InstallationSnapshot {
  /** Sessions not ended, per suite and status. */
  activeRuns: { suiteId: number; status: 'queued' | 'running'; count: number }[];
  runners: { keyed: number; token: number };
}

let installationSource: (() => Promise<InstallationSnapshot>) | undefined;
let pendingSnapshot: Promise<void> | undefined;
let warned = false;

/**
 * Lets the gauges above read the installation's state at scrape time (the API passes db/
 * functions; there is no SQL here). Returns the function that takes it back (on close).
 */
export function setInstallationSource(source: () => Promise<InstallationSnapshot>): () => void {
  installationSource = source;
  return () => {
    if (installationSource === source) installationSource = undefined;
  };
}

/** One read per scrape for both gauges: both collect() calls of a scrape share it. */
function collectInstallation(): Promise<void> {
  pendingSnapshot ??= readInstallation().finally(() => {
    pendingSnapshot = undefined;
  });
  return pendingSnapshot;
}

async function readInstallation(): Promise<void> {
  const source = installationSource;
  pipelineRunActive.reset();
  runnersConnected.reset();
  if (!source) return;
  let snap: InstallationSnapshot;
  try {
    snap = await source();
  } catch (err) {
    // A scrape without these beats a failed scrape; said once, not at every scrape.
    if (!warned) console.warn(`sluice metrics: could not read the queue and runners from PostgreSQL: ${(err as Error).message}`);
    warned = true;
    return;
  }
  warned = false;
  for (const run of snap.activeRuns) {
    pipelineRunActive.set({ cicd_pipeline_name: String(run.suiteId), cicd_pipeline_run_state: run.status === 'queued' ? 'pending' : 'executing' }, run.count);
  }
  runnersConnected.set({ kind: 'keyed' }, snap.runners.keyed);
  runnersConnected.set({ kind: 'token' }, snap.runners.token);
}
