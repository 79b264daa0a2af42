import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import type { Config } from '../config';
import { createPool } from '../db/pool';
import { createControlActivities } from '../activities';
import { startGateway } from './gateway';
import { ensureCleanupSchedule } from '../temporal/cleanupSchedule';
import { installRuntime } from '../temporal/runtime';
import { startTracing } from '../tracing/setup';
import { tracedWorker } from '../tracing/temporal';
import { workflowCode } from './workflowBundle';

export interface WorkerHandle {
  shutdown(): Promise<void>;
}

export interface RunWorkerOptions {
  /** A prebuilt workflow bundle (tests build it once); otherwise the worker bundles src/workflows. */
  workflowBundle?: { codePath: string };
}

/**
 * One worker process: the workflows, and the activities that need the database or the network
 * of the service (records, webhook deliveries, chat, e-mail), on the orchestration queue. It
 * runs no build code: checkouts and tests are the runners' (runner/run.ts). Start as many as
 * you like, on as many machines. It also hands build activities to runners that hold only a
 * token (gateway.ts).
 */
export async function runWorker(config: Config, options: RunWorkerOptions = {}): Promise<WorkerHandle> {
  installRuntime();
  await scheduleCleanup(config);
  const connection = await NativeConnection.connect({ address: config.temporalAddress });
  const pool = createPool(config.databaseUrl);
  // Off (and nothing installed) unless an OTLP endpoint is set; on, the traced workflow bundle.
  const tracing = startTracing(config.tracing);
  const workflows: Partial<WorkerOptions> = options.workflowBundle ? { workflowBundle: options.workflowBundle } : workflowCode({ traced: tracing !== undefined });
  const traced = tracedWorker(tracing, { workflows: true });
  const worker = await Worker.create({
    connection,
    namespace: config.temporalNamespace,
    taskQueue: config.taskQueue,
    activities: createControlActivities({ config, pool }),
    ...workflows,
    ...traced,
    interceptors: { ...workflows.interceptors, ...traced.interceptors },
  });
  const running = worker.run();
  // Build queues of runners that hold only a token, served on their behalf (gateway.ts).
  const gateway = await startGateway(config, pool);

  return {
    async shutdown() {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      try {
        await Promise.all([running, gateway.shutdown()]);
      } finally {
        await tracing?.flush();
        await connection.close();
        await pool.end();
      }
    },
  };
}

/** The daily retention cleanup's Temporal Schedule (temporal/cleanupSchedule.ts), made sure of before the worker polls. */
async function scheduleCleanup(config: Config): Promise<void> {
  const connection = await Connection.connect({ address: config.temporalAddress });
  try {
    await ensureCleanupSchedule(new Client({ connection, namespace: config.temporalNamespace }), config);
  } catch (err) {
    throw new Error(`could not schedule the daily retention cleanup in Temporal: ${(err as Error).message}`, { cause: err });
  } finally {
    await connection.close();
  }
}
