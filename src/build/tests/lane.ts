/**
 * One lane of a build: a runner's share of the session's test files, taken from the shared
 * list (db/testQueue.ts) whenever it is free, the way Knapsack Pro's and Buildkite's queue
 * mode split tests. A build of `workers: N` runs N lanes, each on its own checkout.
 *
 * Per file the lane spends one UPDATE (its result, counted once) besides running it; it takes
 * files in batches whose estimated length fits BATCH_BUDGET_MS, so short files cost one claim
 * per batch, not per file. It holds what it took under a lease it renews every second; a lane
 * whose runner dies stops renewing, and its files go back to the list LEASE_MS later for any
 * other lane to take. A lane that finds nothing to take waits while files are still running
 * elsewhere, so a file given back is picked up by a live runner that has a checkout.
 */
import type { Pool } from 'pg';
import type { Counts } from '../../core/types';
import { claimFiles, queueProgress, recordFileResult, releaseClaims, renewClaims, type Claim } from '../../db/testQueue';
import { maskOutput } from '../output';
import type { BuildUser, ProcessGroups } from '../process';
import { runTestFile } from './runTestFile';
import { sleep } from '../sleep';
import type { Sandbox } from '../sandbox';

export const LEASE_MS = 5_000;
const RENEW_EVERY_MS = 1_000;
const WAIT_FOR_OTHERS_MS = 200;
/** A batch of short files is about this long by the files' recorded durations. */
const BATCH_BUDGET_MS = 250;
const MAX_BATCH = 100;
/** What a file never run is guessed to take until this lane has timed a few of its own. */
const FIRST_GUESS_MS = 1_000;

export interface LaneJob {
  sessionId: number;
  lane: number;
  /** Which attempt of this lane's activity this is (a retry follows a lost runner). */
  attempt: number;
  workdir: string;
  /** The worker's home, shared with its hooks; none: each file gets a fresh one. */
  home?: string;
  command: string | null;
  /** The build's variables (profile, trigger, secrets, services: build/lifecycle.ts), over the clean base. */
  env: Record<string, string>;
  /** Values masked in stored output. */
  secretValues: string[];
  /** Appended to every file's output (secrets that could not be unsealed). */
  note?: string;
  timeoutMs: number;
}

export interface LaneDeps {
  pool: Pool;
  /** This runner's name (host-pid): recorded with each file it runs. */
  runner: string;
  /** Where each test's process group is reported, so none outlives the runner (runner/reaper.ts). */
  processGroups?: ProcessGroups;
  /** The unprivileged user tests run as, if any (runner/buildUser.ts). */
  runAs?: BuildUser;
  /** The further sandbox tests run in, if any (sandbox.ts). */
  sandbox?: Sandbox;
  /** Tell the session its first file failed, with the counts as they stood then. */
  firstFailure(counts: Counts): Promise<void>;
  /** Aborted when the session is stopped. */
  signal?: AbortSignal;
}

export interface LaneOutcome {
  /** Files this lane ran and counted. */
  ran: number;
  stopped: boolean;
}

/** Whether anything is left for a lane of this session to do (an attempt after a lost runner may find all done). */
export async function laneHasWork(pool: Pool, sessionId: number): Promise<boolean> {
  return (await queueProgress(pool, sessionId)).unfinished > 0;
}

/** Runs files from the session's list in `job.workdir` (already checked out) until none is left. */
export async function runLane(deps: LaneDeps, job: LaneJob): Promise<LaneOutcome> {
  const { pool, signal } = deps;
  const claim: Claim = { token: `lane ${job.lane} attempt ${job.attempt} on ${deps.runner}`, lane: job.lane, leaseMs: LEASE_MS };
  // An earlier attempt of this lane lost its runner: what it held goes back now, not at lease end.
  await releaseClaims(pool, job.sessionId, { lane: job.lane, exceptToken: claim.token });
  const { env, secretValues } = job;
  const unreadable = job.note ?? '';

  // A file whose lease another lane took over is killed: its result would not count.
  const running = new Map<string, AbortController>();
  const renewer = setInterval(() => {
    renewClaims(pool, job.sessionId, claim).then(
      (held) => {
        for (const [path, ctl] of running) if (!held.has(path)) ctl.abort();
      },
      () => undefined, // PostgreSQL away for a moment: the next renewal tries again
    );
  }, RENEW_EVERY_MS);

  let ran = 0;
  let timedMs = 0;
  let timed = 0;
  try {
    for (;;) {
      if (signal?.aborted) break;
      const unknownMs = timed >= 3 ? Math.max(1, timedMs / timed) : FIRST_GUESS_MS;
      const batch = await claimFiles(pool, job.sessionId, claim, { budgetMs: BATCH_BUDGET_MS, unknownMs, maxFiles: MAX_BATCH });
      if (batch.length === 0) {
        const progress = await queueProgress(pool, job.sessionId);
        if (progress.unfinished === 0) break;
        if (progress.takeable === 0) await sleep(WAIT_FOR_OTHERS_MS, signal);
        continue;
      }
      for (const file of batch) {
        if (signal?.aborted) break;
        const ctl = new AbortController();
        running.set(file.path, ctl);
        const onStop = () => ctl.abort();
        signal?.addEventListener('abort', onStop, { once: true });
        try {
          const result = await runTestFile({
            workdir: job.workdir,
            home: job.home,
            path: file.path,
            command: job.command,
            env,
            timeoutMs: job.timeoutMs,
            signal: ctl.signal,
            processGroups: deps.processGroups,
            runAs: deps.runAs,
            sandbox: deps.sandbox,
          });
          // Stopped, or taken over by another lane: this run is not the file's verdict.
          if (ctl.signal.aborted) continue;
          timedMs += result.durationMs;
          timed += 1;
          const recorded = await recordFileResult(pool, job.sessionId, claim, {
            path: file.path,
            status: result.status,
            exitCode: result.exitCode,
            durationMs: result.durationMs,
            output: maskOutput(result.output, secretValues) + unreadable,
            runner: deps.runner,
          });
          if (!recorded.recorded) continue;
          ran += 1;
          if (recorded.firstFailure) await deps.firstFailure(recorded.firstFailure);
        } finally {
          signal?.removeEventListener('abort', onStop);
          running.delete(file.path);
        }
      }
    }
  } finally {
    clearInterval(renewer);
    // Stopped (or failing): what this lane took and did not finish goes back to the list.
    await releaseClaims(pool, job.sessionId, { token: claim.token }).catch(() => undefined);
  }
  return { ran, stopped: signal?.aborted === true };
}
