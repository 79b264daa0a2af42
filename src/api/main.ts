/**
 * The api process: HTTP on config.host:config.port, PostgreSQL, and a Temporal client that
 * enqueues accepted builds. Run directly (`node dist/api/main.js`, `npm run start:api`) it reads
 * its configuration from the environment; `startApi` is the same thing for the dev launcher.
 */
import { Client, Connection, defaultGrpcRetryOptions, makeGrpcRetryInterceptor } from '@temporalio/client';
import { loadConfig, type Config } from '../config';
import { migrate } from '../db/migrate';
import { installationGauges } from '../db/gauges';
import { createPool, untilDatabaseAnswers } from '../db/pool';
import { setInstallationSource } from '../metrics/registry';
import { createBatcher, createEnqueuer, signalIntake, signalSuite } from '../temporal/enqueue';
import type { WorkflowIds } from '../core/workflowIds';
import { loadWorkflowIds } from '../temporal/ids';
import { startRoleMetrics } from '../temporal/metrics';
import { prepareTemporal } from '../temporal/prepare';
import { stopSession } from '../temporal/stop';
import type { EnqueueRequest, Intake } from '../core/intake';
import { sessionAttributes } from '../tracing/attributes';
import { startTracing } from '../tracing/setup';
import { activeTraceparent, annotateActiveSpan } from '../tracing/spans';
import { tracedClient } from '../tracing/temporal';
import { buildApp, type HealthReport } from './app';
import { heralded, startHerald } from './received';
import { HttpError } from './http';
import { pingPostgres } from '../app/health';
import { triggerKnowledge } from './triggerKnowledge';

export interface RunningApi {
  /** Where it listens, e.g. `http://127.0.0.1:8080`. */
  url: string;
  /**
   * Resolves once Temporal answers and Sluice's search attributes are registered there, from
   * when on triggers are accepted (before, they answer 503 and /healthz names
   * `temporal-search-attributes`). Rejects when that cannot happen without an operator (an
   * attribute exists with another type, permission denied). After close() it never rejects.
   */
  ready: Promise<void>;
  close(): Promise<void>;
}

export interface StartApiOptions {
  /** Lines about Temporal's readiness (waiting for it, attributes registered); default console.log. */
  log?: (line: string) => void;
}

const HEALTH_TIMEOUT_MS = 2_000;
/**
 * How long a trigger waits for Temporal to take a build. The client retries an unreachable
 * server for a long while by itself; a trigger holds a database transaction and the caller's
 * hook (providers give up after ~10 s) meanwhile, so it answers 503 sooner instead.
 */
const ENQUEUE_TIMEOUT_MS = 5_000;

export async function startApi(config: Config, options: StartApiOptions = {}): Promise<RunningApi> {
  // Off (and nothing installed) unless an OTLP endpoint is set.
  const tracing = startTracing(config.tracing);
  const pool = createPool(config.databaseUrl);
  // PostgreSQL may be away when the API starts (issue 26): it comes up and answers what needs
  // the database with 503 until it has migrated (migrations take an advisory lock, so api and
  // workers may all start at once) and read the installation's workflow ids.
  let ids: WorkflowIds | undefined;
  const stopPreparingDatabase = new AbortController();
  const databaseReady = untilDatabaseAnswers(
    async () => {
      await migrate(pool);
      ids = await loadWorkflowIds(pool);
    },
    stopPreparingDatabase.signal,
    (err) => options.log?.(`PostgreSQL not ready (${(err as Error).message}); trying again every 2 s`),
  );
  await Promise.race([databaseReady, new Promise((resolve) => setTimeout(resolve, DATABASE_WAIT_MS))]);
  if (!ids) options.log?.('PostgreSQL does not answer: the API runs on, answering 503 where it needs it, until it does');
  const workflowIds = lazyIds(() => ids);
  // /metrics reads queue lengths and connected runners from PostgreSQL at scrape time, here.
  const stopGauges = setInstallationSource(() => installationGauges(pool));

  // Lazy: the API comes up (and /healthz says "temporal" is missing) while Temporal is still
  // starting; triggers answer 503 until it is reachable, and nothing half-accepted is kept.
  // Fewer gRPC retries than the client's default 10 (about 20 s when Temporal is down): six
  // attempts take about 3 s, inside ENQUEUE_TIMEOUT_MS, so no retry outlives its trigger.
  const connection = Connection.lazy({
    address: config.temporalAddress,
    interceptors: [makeGrpcRetryInterceptor(defaultGrpcRetryOptions({ maxAttempts: 6 }))],
  });
  const client = new Client({ connection, namespace: config.temporalNamespace, ...tracedClient(tracing) });

  // Builds start with search attributes, which the server refuses until they are registered
  // ("Namespace default has no mapping defined for search attribute SluiceRepo", and the
  // trigger answers 503): register them (harmlessly again if they are there), waiting for
  // Temporal as long as it takes, and take triggers only after that.
  let searchAttributesReady = false;
  const stopPreparing = new AbortController();
  const ready = prepareTemporal(config, { log: options.log, signal: stopPreparing.signal }).then(
    () => {
      searchAttributesReady = true;
    },
    (err: unknown) => {
      if (!stopPreparing.signal.aborted) throw err;
    },
  );
  ready.catch(() => undefined); // the caller hears of it through `ready`; not an unhandled rejection

  async function health(): Promise<HealthReport> {
    const [pg, temporal] = await Promise.all([
      pingPostgres(pool, HEALTH_TIMEOUT_MS),
      withTimeout(
        connection.withDeadline(Date.now() + HEALTH_TIMEOUT_MS, () => connection.workflowService.getSystemInfo({})),
        HEALTH_TIMEOUT_MS,
      ).then(
        () => true,
        () => false,
      ),
    ]);
    const missing = [
      // Answering is not enough: until it has migrated and read the installation, the API cannot serve.
      ...(pg && ids ? [] : ['postgresql']),
      ...(temporal ? [] : ['temporal']),
      ...(searchAttributesReady ? [] : ['temporal-search-attributes']),
    ];
    return { ok: missing.length === 0, missing };
  }

  const signal = (workflowId: string, name: string, payload: unknown) =>
    withTimeout(connection.withDeadline(Date.now() + ENQUEUE_TIMEOUT_MS, () => client.workflow.getHandle(workflowId).signal(name, payload)), ENQUEUE_TIMEOUT_MS);
  // Records what Temporal took and sends its `received`, ahead of the suite's workflow (herald.ts).
  const herald = startHerald({ config, pool, ids: workflowIds, migrated: () => ids !== undefined, signal });
  const enqueue = createEnqueuer(
    heralded(herald, (reqs) =>
      withTimeout(connection.withDeadline(Date.now() + ENQUEUE_TIMEOUT_MS, () => signalSuite(client, config, workflowIds, reqs)), ENQUEUE_TIMEOUT_MS),
    ),
    { timeoutMs: ENQUEUE_TIMEOUT_MS },
  );
  const intake = createBatcher(
    (i: Intake) => i.repoId,
    (batch) => withTimeout(connection.withDeadline(Date.now() + ENQUEUE_TIMEOUT_MS, () => signalIntake(client, config, workflowIds, batch)), ENQUEUE_TIMEOUT_MS),
    { timeoutMs: ENQUEUE_TIMEOUT_MS },
  );
  // Triggers are decided from it, PostgreSQL answering or not (issue 26).
  const knowledge = triggerKnowledge(pool, { databaseUrl: config.databaseUrl, log: (msg, err) => options.log?.(`${msg}: ${(err as Error | undefined)?.message ?? ''}`) });
  const app = buildApp({
    config,
    pool,
    enqueue: (req) =>
      !searchAttributesReady
        ? Promise.reject(new Error("Sluice's search attributes are not registered on Temporal yet"))
        : enqueue(tracing ? inTriggerTrace(req) : req),
    stop: (target, stoppedBy) =>
      withTimeout(
        connection.withDeadline(Date.now() + ENQUEUE_TIMEOUT_MS, () => stopSession(client, workflowIds, target, stoppedBy)),
        ENQUEUE_TIMEOUT_MS,
      ),
    health,
    intake,
    knowledge,
    workflowIds,
    signalWorkflow: signal,
    announce: herald.announce,
    log: { level: 'info' },
  });

  let url: string;
  try {
    url = await app.listen({ host: config.host, port: config.port });
  } catch (err) {
    stopPreparing.abort();
    stopPreparingDatabase.abort();
    stopGauges();
    knowledge.close();
    await connection.close().catch(() => undefined);
    await pool.end();
    throw err;
  }

  return {
    url,
    ready,
    async close() {
      stopPreparing.abort();
      stopPreparingDatabase.abort();
      stopGauges();
      knowledge.close();
      await app.close();
      await herald.close(); // what it took is recorded and announced, or left to the suites
      await tracing?.flush(); // the last requests' spans
      await connection.close().catch(() => undefined);
      await pool.end();
    },
  };
}

/**
 * The trigger's request span names the session, and the session takes the request's trace with
 * it into its suite's queue: its workflow starts there later, in that trace (workflows/tracing.ts).
 */
function inTriggerTrace(req: EnqueueRequest): EnqueueRequest {
  // A rebuild's session is recorded already; a trigger's gets its id in the suite (the span names its guid).
  if (req.sessionId !== undefined) annotateActiveSpan(sessionAttributes(req.sessionId));
  const traceparent = activeTraceparent();
  return traceparent === undefined ? req : { ...req, traceparent };
}

/** How long start-up waits for PostgreSQL before the API comes up without it. */
const DATABASE_WAIT_MS = 5_000;

/** The installation's workflow ids once read; before, every use is a 503 (the database has not answered). */
function lazyIds(current: () => WorkflowIds | undefined): WorkflowIds {
  const need = (): WorkflowIds => {
    const ids = current();
    if (!ids) throw new HttpError(503, 'unavailable', 'the database has not answered since this API started; try again', undefined, { retryAfterSeconds: 5 });
    return ids;
  };
  return {
    get installation() {
      return need().installation;
    },
    suite: (id) => need().suite(id),
    session: (id) => need().session(id),
    squashed: (ids) => need().squashed(ids),
    intake: (id) => need().intake(id),
  };
}

/** Rejects when `promise` has not settled within `ms` (gRPC retries can outlast a call deadline). */
function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

if (require.main === module) {
  const log = (line: string) => console.log(`sluice api: ${line}`);
  const config = loadConfig(process.env, 'api');
  // Its own listener, not the public port; the API runs no Temporal worker, so no SDK metrics.
  startRoleMetrics(config, { temporalSdk: false })
    .then((metrics) => {
      if (metrics) log(`metrics at ${metrics.url}`);
      return startApi(config, { log });
    })
    .then((api) => {
      log(`listening on ${api.url}; triggers wait for Temporal`);
      const stop = (code = 0): void => {
        api.close().then(
          () => process.exit(code),
          (err: unknown) => {
            console.error(err);
            process.exit(1);
          },
        );
      };
      process.once('SIGINT', () => stop());
      process.once('SIGTERM', () => stop());
      api.ready.then(
        () => log('Temporal is ready; accepting triggers'),
        (err: unknown) => {
          console.error(`sluice api: ${err instanceof Error ? err.message : String(err)}`);
          stop(1);
        },
      );
    })
    .catch((err: unknown) => {
      console.error(err instanceof Error ? err.message : err);
      process.exit(1);
    });
}
