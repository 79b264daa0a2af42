/**
 * A runner that holds only a token (SLUICE_RUNNER_TOKEN): no DATABASE_URL, no
 * SLUICE_SECRET_KEY, no admin token, no Temporal connection. It asks the API for jobs of the
 * queues it serves (long polls), runs each with the same build activities a keyed runner runs
 * (activities/steps), reading and writing only that build's records and blobs through the API,
 * heartbeats each job every second (a stop comes back in the answer), and says how it ended.
 * A revoked token is refused at its next call: the jobs it runs stop and it takes no more.
 */
import os from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { createTokenRunnerActivities } from '../../activities';
import { findCrane } from '../crane';
import { runAsJob, type ActivityRun } from '../../activities/heartbeat';
import { DEFAULT_RUNNER_SLOTS, type Config } from '../../config';
import { runnerLanes } from '../../metrics/counts';
import { SLUICE_VERSION } from '../../version';
import { isolationWarning, resolveIsolation } from '../../steps/isolation';
import { startReaper } from '../../steps/isolation/reaper';
import type { RunnerHandle, RunRunnerOptions } from '../run';
import { startSweeps } from '../sweep';
import { retiringSettled } from '../../steps/checkout/tree';
import { Channel, ChannelRefused, type Job, type JobOutput } from './channel';
import { asJob, tokenRecords, tokenStore } from './records';

const HEARTBEAT_MS = 1_000;
const POLL_WAIT_MS = 20_000;
/** Within the gateway's patience (gateway.ts LOST_MS): after that the job is tried again anyway. */
const FINISH_ATTEMPTS = 5;

/** How an activity's error travels back as the job's end. */
export function jobError(err: unknown): Extract<JobOutput, { error: unknown }>['error'] {
  if (err instanceof CancelledFailure) return { message: err.message, type: 'cancelled', retryable: true };
  if (err instanceof ApplicationFailure) return { message: err.message, type: err.type ?? undefined, retryable: !err.nonRetryable };
  return { message: err instanceof Error ? err.message : String(err), retryable: true };
}

export async function runTokenRunner(config: Config & { runnerToken: string }, options: RunRunnerOptions = {}): Promise<RunnerHandle> {
  const name = `${os.hostname()}-${process.pid}`;
  const channel = new Channel(config.baseUrl, config.runnerToken);
  const records = tokenRecords(channel);
  const store = tokenStore(channel, config.baseUrl);
  const isolation = await resolveIsolation(config, { requireSandbox: options.requireSandbox ?? true, trustedBuilds: options.trustedBuilds });
  if (isolation.gaps.length > 0 && !options.trustedBuilds) console.warn(isolationWarning(isolation));
  const reaper = await startReaper();
  const activities = createTokenRunnerActivities({ config, records, store, runner: name, processGroups: reaper, runAs: isolation.runAs, sandbox: isolation.sandbox, crane: findCrane(config.images?.crane) });
  const slots = options.slots ?? config.runnerSlots ?? DEFAULT_RUNNER_SLOTS;
  // cicd_worker_count in /metrics: this runner's lanes, busy while a job runs.
  const lanes = runnerLanes(slots);
  const queues = [...new Set([config.buildQueue, ...(options.buildQueues ?? [])])];
  const me = { runner: name, version: SLUICE_VERSION, queues };

  const closing = new AbortController();
  const running = new Set<Promise<void>>();
  let refusedLogged = false;

  const runJob = async (job: Job) => {
    const stop = new AbortController();
    const beat = setInterval(() => {
      channel.heartbeat(job.id).then(
        ({ cancel }) => cancel && stop.abort(new CancelledFailure('stopped')),
        (err: unknown) => {
          // Not its job any more (lost, cancelled) or the token was revoked: stop its processes.
          if (err instanceof ChannelRefused) stop.abort(new CancelledFailure(err.message));
        },
      );
    }, HEARTBEAT_MS);
    const run: ActivityRun = {
      attempt: job.attempt,
      cancellationSignal: stop.signal,
      heartbeat: () => undefined, // the loop above heartbeats every job
      signalWorkflow: (_workflowId, signal, payload) => channel.signal(job.id, signal, payload),
      log: { warn: (message, attributes) => console.warn(`sluice runner: job ${job.id}: ${message}`, attributes ?? '') },
    };
    let output: JobOutput;
    try {
      const fn = activities[job.kind] as (input: unknown) => Promise<unknown>;
      output = { result: await asJob(job.id, () => runAsJob(run, () => fn(job.input))) };
    } catch (err) {
      // Stopped: whatever a step threw on its way out (an AbortError, say), the job was cancelled.
      output = { error: stop.signal.aborted ? { message: (stop.signal.reason as Error).message, type: 'cancelled', retryable: true } : jobError(err) };
    } finally {
      clearInterval(beat);
    }
    // A moment without the API is ridden out; refused means the job is no longer ours to end.
    for (let attempt = 1; ; attempt++) {
      try {
        await channel.finish(job.id, output);
        return;
      } catch (err) {
        if (err instanceof ChannelRefused) return;
        if (attempt === FINISH_ATTEMPTS) {
          console.warn(`sluice runner: job ${job.id}: its end could not be reported: ${(err as Error).message}`);
          return;
        }
        await sleep(1_000);
      }
    }
  };

  const loop = (async () => {
    while (!closing.signal.aborted) {
      if (running.size >= slots) {
        await Promise.race(running);
        continue;
      }
      let job: Job | null;
      const asked = Date.now();
      try {
        job = await channel.next(me, POLL_WAIT_MS, closing.signal);
        refusedLogged = false;
        // A poll answered empty at once (an API that does not wait): never a tight loop.
        if (!job && Date.now() - asked < 500) await sleep(1_000, undefined, { signal: closing.signal }).catch(() => undefined);
      } catch (err) {
        if (closing.signal.aborted) break;
        if (!refusedLogged) console.warn(`sluice runner: asking for work failed: ${(err as Error).message}${err instanceof ChannelRefused && err.status === 401 ? ' (is the token revoked?)' : ''}`);
        refusedLogged = true;
        await sleep(2_000, undefined, { signal: closing.signal }).catch(() => undefined);
        continue;
      }
      if (!job) continue;
      const p = lanes.busy(() => runJob(job)).finally(() => running.delete(p));
      running.add(p);
    }
  })();

  const stopSweeps = startSweeps(config, records);

  return {
    name,
    async shutdown() {
      const swept = stopSweeps();
      closing.abort();
      // The poll in flight is dropped (a job it took goes back: the API releases it); the jobs running finish.
      await Promise.all([loop, ...running]);
      // A sweep under way, and trees the jobs left being cleaned (steps/checkout/tree.ts).
      await swept;
      await retiringSettled();
      lanes.close();
      await reaper.close();
      await channel.close();
    },
  };
}
