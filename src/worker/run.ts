import { randomUUID } from 'node:crypto';
import os from 'node:os';
import { DefaultLogger, NativeConnection, Runtime, Worker, type LogLevel, type WorkerOptions } from '@temporalio/worker';
import type { Config } from '../config';
import { createPool } from '../db/pool';
import { createActivities } from '../activities';
import { workflowCode } from './workflowBundle';

export interface WorkerHandle {
  /** The task queue only this process listens on (checkouts live on its disk). */
  workerQueue: string;
  shutdown(): Promise<void>;
}

export interface RunWorkerOptions {
  /** A prebuilt workflow bundle (tests build it once); otherwise the worker bundles src/workflows. */
  workflowBundle?: { codePath: string };
  /** Extra build task queues this worker serves besides config.buildQueue (a trigger's `queue`). */
  buildQueues?: string[];
}

/**
 * One worker process: workflows and deliveries on the orchestration queue, checkouts on the
 * build queue(s), and the per-checkout activities on a queue of its own. Start as many of these
 * on as many machines as you like.
 */
export async function runWorker(config: Config, options: RunWorkerOptions = {}): Promise<WorkerHandle> {
  installRuntime();
  const connection = await NativeConnection.connect({ address: config.temporalAddress });
  const pool = createPool(config.databaseUrl);
  const workerQueue = `${config.buildQueue}@${os.hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`;
  const activities = createActivities({ config, pool, workerQueue });
  const common = {
    connection,
    namespace: config.temporalNamespace,
    activities,
    // A stop reaches a running test through its heartbeats; the SDK's default throttle (80% of
    // the heartbeat timeout) would let a stopped test run on for most of a minute.
    defaultHeartbeatThrottleInterval: '1 second',
    maxHeartbeatThrottleInterval: '2 seconds',
  };

  const workflows: Partial<WorkerOptions> = options.workflowBundle ? { workflowBundle: options.workflowBundle } : workflowCode();
  const queues = [...new Set([config.buildQueue, ...(options.buildQueues ?? [])])];
  const workers = await Promise.all([
    Worker.create({ ...common, ...workflows, taskQueue: config.taskQueue }),
    ...queues.map((taskQueue) => Worker.create({ ...common, taskQueue })),
    Worker.create({ ...common, taskQueue: workerQueue }),
  ]);
  const running = Promise.all(workers.map((w) => w.run()));

  return {
    workerQueue,
    async shutdown() {
      for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
      try {
        await running;
      } finally {
        await connection.close();
        await pool.end();
      }
    },
  };
}

let runtimeInstalled = false;

/**
 * The SDK logs every worker state change at INFO; Sluice's operators want warnings and errors
 * (SLUICE_TEMPORAL_LOG_LEVEL=INFO brings the rest back). Installable once, before any worker.
 */
function installRuntime(): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  const level = (process.env.SLUICE_TEMPORAL_LOG_LEVEL ?? 'WARN').toUpperCase() as LogLevel;
  try {
    Runtime.install({ logger: new DefaultLogger(level) });
  } catch {
    // Already installed by the embedding process (dev.ts or a test): keep theirs.
  }
}
