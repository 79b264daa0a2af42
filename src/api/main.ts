/**
 * The api process: HTTP on config.host:config.port, PostgreSQL, and a Temporal client that
 * enqueues accepted builds. Run directly (`npm run start:api`) it reads its configuration from
 * the environment; `startApi` is the same thing for the dev launcher and tests.
 */
import { Client, Connection, defaultGrpcRetryOptions, makeGrpcRetryInterceptor } from '@temporalio/client';
import { loadConfig, type Config } from '../config';
import { migrate } from '../db/migrate';
import { createPool } from '../db/pool';
import { enqueueSession } from '../temporal/enqueue';
import { stopSession } from '../temporal/stop';
import { buildApp, type HealthReport } from './app';
import { pingPostgres } from './routes/health';

export interface RunningApi {
  /** Where it listens, e.g. `http://127.0.0.1:8080`. */
  url: string;
  close(): Promise<void>;
}

const HEALTH_TIMEOUT_MS = 2_000;
/**
 * How long a trigger waits for Temporal to take a build. The client retries an unreachable
 * server for a long while by itself; a trigger holds a database transaction and the caller's
 * hook (providers give up after ~10 s) meanwhile, so it answers 503 sooner instead.
 */
const ENQUEUE_TIMEOUT_MS = 5_000;

export async function startApi(config: Config): Promise<RunningApi> {
  const pool = createPool(config.databaseUrl);
  // Migrations take an advisory lock, so api and workers may all start at once.
  await migrate(pool);

  // Lazy: the API comes up (and /healthz says "temporal" is missing) while Temporal is still
  // starting; triggers answer 503 until it is reachable, and nothing half-accepted is kept.
  // Fewer gRPC retries than the client's default 10 (about 20 s when Temporal is down): six
  // attempts take about 3 s, inside ENQUEUE_TIMEOUT_MS, so no retry outlives its trigger.
  const connection = Connection.lazy({
    address: config.temporalAddress,
    interceptors: [makeGrpcRetryInterceptor(defaultGrpcRetryOptions({ maxAttempts: 6 }))],
  });
  const client = new Client({ connection, namespace: config.temporalNamespace });

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
    const missing = [...(pg ? [] : ['postgresql']), ...(temporal ? [] : ['temporal'])];
    return { ok: missing.length === 0, missing };
  }

  const app = buildApp({
    config,
    pool,
    enqueue: (req) =>
      withTimeout(
        connection.withDeadline(Date.now() + ENQUEUE_TIMEOUT_MS, () => enqueueSession(client, config, req)),
        ENQUEUE_TIMEOUT_MS,
      ),
    stop: (sessionId, stoppedBy) =>
      withTimeout(
        connection.withDeadline(Date.now() + ENQUEUE_TIMEOUT_MS, () => stopSession(client, sessionId, stoppedBy)),
        ENQUEUE_TIMEOUT_MS,
      ),
    health,
    log: { level: 'info' },
  });

  let url: string;
  try {
    url = await app.listen({ host: config.host, port: config.port });
  } catch (err) {
    await connection.close().catch(() => undefined);
    await pool.end();
    throw err;
  }

  return {
    url,
    async close() {
      await app.close();
      await connection.close().catch(() => undefined);
      await pool.end();
    },
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
  startApi(loadConfig())
    .then((api) => {
      const stop = (): void => {
        api.close().then(
          () => process.exit(0),
          (err: unknown) => {
            console.error(err);
            process.exit(1);
          },
        );
      };
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    })
    .catch((err: unknown) => {
      console.error(err instanceof Error ? err.message : err);
      process.exit(1);
    });
}
