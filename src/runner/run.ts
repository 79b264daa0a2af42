import os from 'node:os';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createRunnerActivities } from '../activities';
import { sweepServices } from '../steps/services';
import { DEFAULT_RUNNER_SLOTS, type Config } from '../config';
import { loadInstallation } from '../db/installation';
import { pgBuildRecords } from '../db/buildRecords';
import { createPool } from '../db/pool';
import { recordRunner, removeRunner, touchRunner } from '../db/runners';
import { endedSessions } from '../db/sessions';
import { createPresenceWorker } from '../temporal/presence';
import { installRuntime } from '../temporal/runtime';
import { runnerLanes, withLanes } from '../metrics/counts';
import { startTracing } from '../tracing/setup';
import { tracedWorker } from '../tracing/temporal';
import { SLUICE_VERSION } from '../version';
import { findCrane } from './crane';
import { isolationWarning, resolveIsolation } from '../steps/isolation';
import { startReaper } from '../steps/isolation/reaper';
import { startSweeps } from './sweep';
import { retiringSettled } from '../steps/checkout/tree';

export interface RunnerHandle {
  /** host-pid: recorded with every test file this runner ran. */
  name: string;
  shutdown(): Promise<void>;
}

export interface RunRunnerOptions {
  /** Extra build task queues this runner serves besides config.buildQueue (a trigger's `queue`). */
  buildQueues?: string[];
  /** How many activities (test lanes, checkouts, pushes) it runs at once. Default config.runnerSlots. */
  slots?: number;
  /**
   * Refuse to start where SLUICE_SANDBOX=auto finds no working bubblewrap (default true, a runner
   * on its own); `npm start` runs on with a warning (steps/isolation).
   */
  requireSandbox?: boolean;
  /** See IsolationOptions.trustedBuilds: the test suite's own builds only. */
  trustedBuilds?: boolean;
}

/**
 * One runner process: checkouts, test lanes and pushes from the build queue(s), nothing else.
 * Test process groups are reported to a reaper (steps/isolation/reaper.ts), so they die with the runner
 * however it dies. Start as many as you like, on as many machines; each takes up to `slots`
 * lanes of builds at once.
 */
export async function runRunner(config: Config, options: RunRunnerOptions = {}): Promise<RunnerHandle> {
  installRuntime();
  const name = `${os.hostname()}-${process.pid}`;
  const connection = await NativeConnection.connect({ address: config.temporalAddress });
  const pool = createPool(config.databaseUrl);
  const isolation = await resolveIsolation(config, { requireSandbox: options.requireSandbox ?? true, trustedBuilds: options.trustedBuilds });
  if (isolation.gaps.length > 0 && !options.trustedBuilds) console.warn(isolationWarning(isolation));
  const { runAs, sandbox } = isolation;
  // Its row says how it isolates builds: the web UI warns administrators while one does not.
  // PostgreSQL away at start (issue 26): the runner comes up, and its sweep records it later.
  const record = () => recordRunner(pool, { name, version: SLUICE_VERSION, sandboxed: sandbox !== undefined, buildUser: isolation.runAsName, gaps: isolation.gaps });
  let recorded = await record().then(
    () => true,
    (err: unknown) => {
      console.warn(`sluice runner: PostgreSQL does not answer (${(err as Error).message}); running on, recorded once it does`);
      return false;
    },
  );
  const reaper = await startReaper();
  const activities = createRunnerActivities({ config, pool, runner: name, processGroups: reaper, runAs, sandbox, crane: findCrane(config.images?.crane) });
  const slots = options.slots ?? config.runnerSlots ?? DEFAULT_RUNNER_SLOTS;
  // cicd_worker_count in /metrics: this runner's lanes, busy while an activity runs.
  const lanes = runnerLanes(slots);
  const queues = [...new Set([config.buildQueue, ...(options.buildQueues ?? [])])];
  // Each activity a span in its session's trace, when an OTLP endpoint is set.
  const tracing = startTracing(config.tracing);
  const workers = await Promise.all(
    queues.map((taskQueue) =>
      Worker.create({
        connection,
        namespace: config.temporalNamespace,
        taskQueue,
        activities: withLanes(activities, lanes),
        maxConcurrentActivityTaskExecutions: slots,
        // A stop reaches a running test through its heartbeats; the SDK's default throttle (80% of
        // the heartbeat timeout) would let a stopped test run on for seconds.
        defaultHeartbeatThrottleInterval: '1 second',
        maxHeartbeatThrottleInterval: '2 seconds',
        ...tracedWorker(tracing, { workflows: false }),
      }),
    ),
  );
  // Says this runner lives even while every slot is busy (temporal/presence.ts).
  workers.push(...(await Promise.all(queues.map((taskQueue) => createPresenceWorker(connection, config.temporalNamespace, taskQueue)))));
  const running = Promise.all(workers.map((w) => w.run()));

  // Service databases and users of ended sessions (a runner that crashed left them): on the servers of this runner.
  let installation: string | undefined;
  const sweepLeftServices = async () => {
    if (!Object.values(config.services ?? {}).some(Boolean)) return;
    installation ??= await loadInstallation(pool);
    await sweepServices(config.services!, installation, (ids) => endedSessions(pool, ids));
  };
  const stopSweeps = startSweeps(config, pgBuildRecords(pool, config.secretKey), [
    [
      'recording that it is up',
      async () => {
        if (recorded) return touchRunner(pool, name);
        await record();
        recorded = true;
      },
    ],
    ['sweeping old service databases', sweepLeftServices],
  ]);

  return {
    name,
    async shutdown() {
      const swept = stopSweeps();
      for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
      try {
        await running;
        // A sweep under way, and trees its lanes left being cleaned (steps/checkout/tree.ts): done before anything else goes.
        await swept;
        await retiringSettled();
      } finally {
        lanes.close();
        await reaper.close();
        await tracing?.flush();
        await connection.close();
        await removeRunner(pool, name).catch(() => undefined); // gone from the list a little later anyway
        await pool.end();
      }
    },
  };
}
