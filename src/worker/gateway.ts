/**
 * The runner gateway: how build activities reach runners that hold only a token (issue 23).
 * Such a runner talks to nothing but the API, over HTTP; it has no Temporal connection, no
 * database and no secret key. So the worker role serves, in Temporal, each build queue that a
 * runner with a live token said it serves (seen in the last minute): it takes the queue's
 * activities, hands each to the runners as a job (db/runnerJobs.ts), heartbeats while one runs
 * it, passes a stop on, and returns the job's result or error as the activity's own. A runner
 * that falls silent fails its job after LOST_MS; Temporal then tries the activity again, as a
 * new job, on whichever runner takes it. A worker that goes away leaves its jobs running: the
 * activity's next attempt takes them up again.
 *
 * The push runs here, not on a runner: it needs the repository's push key, which runners never
 * get. A queue is best served by token runners or by runners holding the keys, not both: the
 * gateway takes every activity of the queues it serves.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { NativeConnection, Worker } from '@temporalio/worker';
import type { Pool } from 'pg';
import type { Config } from '../config';
import { createPostActivities } from '../activities/post/activities';
import type { RunnerActivities } from '../activities/types';
import { fromWire } from '../core/wire';
import { cancelJob, insertJob, JOB_ENDED_CHANNEL, jobState, listenForJobs, pruneJobs, type JobKind, type JobOutput } from '../db/runnerJobs';
import { queuesOfTokenRunners } from '../db/runnerTokens';
import { createPresenceWorker } from '../temporal/presence';

/** A job whose runner has not heartbeated for this long is lost (the activities' heartbeat timeout). */
export const LOST_MS = 10_000;
/** How long a token runner counts as serving its queues after its last poll. */
const SEEN_WITHIN_MS = 60_000;
const REFRESH_MS = 5_000;
/** Ended jobs are kept a day (for the runners list and debugging); swept this often. */
const PRUNE_EVERY_MS = 60 * 60_000;

export interface Gateway {
  shutdown(): Promise<void>;
}

/** Wakes the activities waiting on jobs when one ends (NOTIFY), with a poll behind it. */
class JobEnds {
  private waiting = new Map<number, Set<() => void>>();
  private unlisten: () => void = () => undefined;

  async listen(pool: Pool): Promise<void> {
    this.unlisten = await listenForJobs(pool, JOB_ENDED_CHANNEL, (id) => this.wake(Number(id)));
  }

  /** Resolves when job `id` may have ended, or after `ms`. */
  wait(id: number, ms: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const set = this.waiting.get(id) ?? new Set();
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        set.delete(done);
        if (set.size === 0) this.waiting.delete(id);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
      set.add(done);
      this.waiting.set(id, set);
    });
  }

  private wake(id: number): void {
    for (const done of [...(this.waiting.get(id) ?? [])]) done();
  }

  close(): void {
    this.unlisten();
  }
}

/** The activity's failure for a job that ended in error. */
function failureOf(error: Extract<JobOutput, { error: unknown }>['error'] | undefined): Error {
  if (!error) return ApplicationFailure.retryable('the job ended without saying how');
  if (error.type === 'cancelled') return new CancelledFailure(error.message);
  return ApplicationFailure.create({ message: error.message, type: error.type, nonRetryable: !error.retryable });
}

function sessionOf(kind: JobKind, input: unknown): number {
  const i = input as { sessionId?: number; tree?: { sessionId: number } };
  return kind === 'checkout' || kind === 'resolveImage' ? i.sessionId! : i.tree!.sessionId;
}

function proxies(pool: Pool, ends: JobEnds): Omit<RunnerActivities, 'pushToCiServer'> {
  const proxy =
    <I, O>(kind: JobKind) =>
    async (input: I): Promise<O> => {
      const ctx = Context.current();
      const { info } = ctx;
      const id = await insertJob(pool, {
        queue: info.taskQueue,
        kind,
        activityId: info.activityId,
        attempt: info.attempt,
        workflowId: info.workflowExecution?.workflowId ?? '',
        runId: info.workflowExecution?.runId ?? '',
        sessionId: sessionOf(kind, input),
        input,
      }, LOST_MS);
      let stopping = false;
      for (;;) {
        ctx.heartbeat();
        const job = await jobState(pool, id);
        if (!job) throw ApplicationFailure.retryable('the job was deleted');
        // The runner's answer crossed the API in its wire form (core/wire.ts).
        if (job.state === 'done') return fromWire((job.output as { result: unknown }).result) as O;
        if (job.state === 'failed') throw failureOf((job.output as Extract<JobOutput, { error: unknown }> | null)?.error);
        if (job.state === 'running' && job.silentMs !== null && job.silentMs > LOST_MS) {
          await cancelJob(pool, id, `its runner was not heard from for ${Math.round(job.silentMs / 1000)} s`);
          continue;
        }
        if (ctx.cancellationSignal.aborted && !stopping) {
          const why = ctx.cancellationDetails;
          // This worker is going away (or was too slow to heartbeat): the job runs on, and the
          // activity's next attempt, on any worker, takes it up again (insertJob).
          if (why && !why.cancelRequested && !why.notFound && !why.reset) throw new CancelledFailure('the worker waiting on the job went away');
          // A stop: the runner kills what runs and says so; until then (or until it falls silent) we wait.
          stopping = true;
          await cancelJob(pool, id);
        }
        await ends.wait(id, 1_000, stopping ? AbortSignal.timeout(1_000) : ctx.cancellationSignal);
      }
    };
  return {
    checkout: proxy('checkout'),
    queueTests: proxy('queueTests'),
    resolveImage: proxy('resolveImage'),
    runLane: proxy('runLane'),
    postBuildHook: proxy('postBuildHook'),
  };
}

/** Serves the build queues of token runners for as long as they are seen. */
export async function startGateway(config: Config, pool: Pool): Promise<Gateway> {
  const connection = await NativeConnection.connect({ address: config.temporalAddress });
  const ends = new JobEnds();
  await ends.listen(pool);
  const activities = { ...proxies(pool, ends), pushToCiServer: createPostActivities({ config, pool }).pushToCiServer };
  const served = new Map<string, { workers: Worker[]; running: Promise<unknown> }>();
  let closed = false;
  const stopped = new AbortController();

  const serve = async (queue: string) => {
    const workers = await Promise.all([
      Worker.create({
        connection,
        namespace: config.temporalNamespace,
        taskQueue: queue,
        activities,
        // Each activity here only waits on a job; the runners' slots are what bounds the work.
        maxConcurrentActivityTaskExecutions: 1_000,
        defaultHeartbeatThrottleInterval: '1 second',
        maxHeartbeatThrottleInterval: '2 seconds',
      }),
      createPresenceWorker(connection, config.temporalNamespace, queue),
    ]);
    served.set(queue, { workers, running: Promise.all(workers.map((w) => w.run())).catch(() => undefined) });
  };
  const unserve = async (queue: string) => {
    const s = served.get(queue)!;
    served.delete(queue);
    for (const w of s.workers) if (w.getState() === 'RUNNING') w.shutdown();
    await s.running;
  };
  let prunedAt = 0;
  const refresh = async () => {
    const wanted = new Set(await queuesOfTokenRunners(pool, SEEN_WITHIN_MS));
    for (const q of wanted) if (!served.has(q) && !closed) await serve(q);
    for (const q of [...served.keys()]) if (!wanted.has(q)) await unserve(q);
    if (Date.now() - prunedAt > PRUNE_EVERY_MS) {
      prunedAt = Date.now();
      await pruneJobs(pool);
    }
  };
  await refresh().catch((err: unknown) => console.warn(`sluice worker: the runner gateway could not read the token runners' queues: ${(err as Error).message}`));
  const loop = (async () => {
    while (!closed) {
      await sleep(REFRESH_MS, undefined, { signal: stopped.signal }).catch(() => undefined);
      if (closed) break;
      await refresh().catch((err: unknown) => console.warn(`sluice worker: the runner gateway could not read the token runners' queues: ${(err as Error).message}`));
    }
  })();

  return {
    async shutdown() {
      closed = true;
      stopped.abort();
      await Promise.all([...served.keys()].map(unserve));
      await loop.catch(() => undefined);
      ends.close();
      await connection.close();
    },
  };
}
