/**
 * One lane of a build: a runner's share of the session's test files, taken from the shared
 * list (db/testQueue.ts) whenever it is free, the way Knapsack Pro's and Buildkite's queue
 * mode split tests. A build of `workers: N` runs N lanes, each on its own checkout.
 *
 * A lane takes what it runs next as one claim of files, longest first by their estimates:
 * - with a test command holding `{files}`, one claim is one batch, one process for all its files
 *   (batch.ts), a lane's fair share of the work left, running batches included (core/batches.ts batchBudgetMs);
 * - otherwise each file runs in a process of its own, and short files are claimed together
 *   (CLAIM_BUDGET_MS), so that they cost one claim and one write of their results between them.
 * A failing file runs again, alone, up to `retryFailed` times; one that passes on a retry counts
 * as passed, and flaky.
 *
 * It holds what it took under a lease it renews every second; a lane whose runner dies stops
 * renewing, and its files go back to the list LEASE_MS later for any other lane to take. A lane
 * that finds nothing to take waits while files are still running elsewhere, so a file given
 * back is picked up by a live runner that has a checkout.
 */
import { testKey } from '../../core/testKey';
import { batchBudgetMs, batchRestBelowMs, batchStride, isBatchCommand, NO_HISTORY_MS } from '../../core/batches';
import type { Counts } from '../../core/types';
import type { Claim, FileResult, QueuedFile } from '../../db/testQueue';
import { countTestFiles } from '../../metrics/counts';
import { liveOutput } from '../liveOutput';
import { maskOutput } from '../output';
import type { BuildUser, ProcessGroups } from '../isolation/process';
import type { BuildRecords } from '../records';
import type { Sandbox } from '../isolation/sandbox';
import { setTimeout as sleep } from 'node:timers/promises';
import { runAlone, runBatch, type BatchPlace } from './batch';
import { laneTracer, type Tracer } from './mapping';
import { runTestFile } from './runTestFile';
import { runFilesFromShell } from './shellDriver';

export const LEASE_MS = 5_000;
const RENEW_EVERY_MS = 1_000;
const WAIT_FOR_OTHERS_MS = 200;
/** File by file, a claim of short files is about this long by their estimates. */
const CLAIM_BUDGET_MS = 250;
const MAX_CLAIM = 100;
/** Files of one batch at most (a command line has its limits). */
const MAX_BATCH_FILES = 500;
/** What a file never run is guessed to take until this lane has timed a few of its own. */
const FIRST_GUESS_MS = 1_000;
/** How much of a flaky file's first failed run is kept beside its passing run's output. */
const FLAKY_CONTEXT = 16 * 1024;

const tail = (text: string, max: number) => (text.length > max ? `…${text.slice(-max)}` : text);

export interface LaneJob {
  sessionId: number;
  lane: number;
  /** How many lanes the build has (batches are sized to them); default 1. */
  lanes?: number;
  /** Which attempt of this lane's activity this is (a retry follows a lost runner). */
  attempt: number;
  workdir: string;
  /** The worker's home, shared with its hooks; none: each file gets a fresh one. */
  home?: string;
  command: string | null;
  /** The build's variables (profile, trigger, secrets, services: steps/lifecycle.ts), over the clean base. */
  env: Record<string, string>;
  /** Values masked in stored output. */
  secretValues: string[];
  /** Appended to every file's output (secrets that could not be unsealed). */
  note?: string;
  timeoutMs: number;
  /** How many times a failing file runs again (the profile's retry_failed); default 0. */
  retryFailed?: number;
  /** A mapping run: each file runs alone under strace, and what it touched is recorded (mapping.ts). */
  trace?: boolean;
}

export interface LaneDeps {
  records: BuildRecords;
  /** This runner's name (host-pid): recorded with each file it runs. */
  runner: string;
  /** Where each test's process group is reported, so none outlives the runner (isolation/reaper.ts). */
  processGroups?: ProcessGroups;
  /** The unprivileged user tests run as, if any (isolation/buildUser.ts). */
  runAs?: BuildUser;
  /** The further sandbox tests run in, if any (isolation/sandbox.ts). */
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

/** A file's verdict before it is recorded. */
type Verdict = Omit<FileResult, 'runner'>;

/** Whether anything is left for a lane of this session to do (an attempt after a lost runner may find all done). */
export async function laneHasWork(records: BuildRecords, sessionId: number): Promise<boolean> {
  return (await records.queueProgress(sessionId)).unfinished > 0;
}

/** Runs files from the session's list in `job.workdir` (already checked out) until none is left. */
export async function runLane(deps: LaneDeps, job: LaneJob): Promise<LaneOutcome> {
  const { records, signal } = deps;
  const claim: Claim = { token: `lane ${job.lane} attempt ${job.attempt} on ${deps.runner}`, lane: job.lane, leaseMs: LEASE_MS };
  // An earlier attempt of this lane lost its runner: what it held goes back now, not at lease end.
  await records.releaseClaims(job.sessionId, { lane: job.lane, exceptToken: claim.token });
  // A mapping run takes one file at a time, each in a process of its own, even with `{files}`.
  const batches = isBatchCommand(job.command) && !job.trace;
  // The suite's muted tests, as this lane starts: their failures in the reports do not fail a file.
  const muted = isBatchCommand(job.command) ? new Set((await records.mutedTests(job.sessionId)).map(testKey)) : new Set<string>();
  const tracer = job.trace ? await laneTracer({ records, sessionId: job.sessionId, lane: job.lane, workdir: job.workdir, home: job.home ?? `${job.workdir}.home`, sandbox: deps.sandbox }) : null;
  const tracing = tracer && 'record' in tracer ? tracer : null;
  const runs = runner(
    tracing?.sandbox ? { ...deps, sandbox: tracing.sandbox } : deps,
    tracer && 'note' in tracer ? { ...job, note: `${job.note ?? ''}[sluice] ${tracer.note}\n` } : job,
    muted,
    tracing,
  );

  // What this lane runs is stopped when another lane took it over: its result would not count.
  const running = new Map<string, AbortController>();
  const renewer = setInterval(() => {
    records.renewClaims(job.sessionId, claim).then(
      (held) => {
        for (const [path, ctl] of running) if (!held.has(path)) ctl.abort();
      },
      () => undefined, // PostgreSQL away for a moment: the next renewal tries again
    );
  }, RENEW_EVERY_MS);

  let ran = 0;
  let batchesRun = 0;
  let timedMs = 0;
  let timed = 0;
  try {
    for (;;) {
      if (signal?.aborted) break;
      const unknownMs = batches ? NO_HISTORY_MS : timed >= 3 ? Math.max(1, timedMs / timed) : FIRST_GUESS_MS;
      // A batch is sized from what is left (a file never run: its median, or NO_HISTORY_MS).
      const work = batches ? await records.workLeftMs(job.sessionId, NO_HISTORY_MS) : null;
      const budgetMs = work ? batchBudgetMs(work, job.lanes ?? 1, batchesRun === 0) : CLAIM_BUDGET_MS;
      const taken = await records.claimFiles(job.sessionId, claim, {
        budgetMs,
        unknownMs,
        // A batch takes a slice across the list, long files and short alike, not its head:
        // estimates are off by file kind (jest's longest files ran 10-20 % over their
        // history), and lanes holding the same mix are off alike and still end together.
        ...(work ? { stride: batchStride(work.pendingMs, budgetMs) } : {}),
        maxFiles: batches ? MAX_BATCH_FILES : job.trace ? 1 : MAX_CLAIM,
        // A batch leaves nothing shorter than a process start behind: the lane that took it
        // last would finish that long after the others (express: 3 files, 0.4 s, at the end).
        // Not a short suite's first batches: the lanes beside this one take the rest at once.
        ...(work ? { restBelowMs: batchRestBelowMs(work, job.lanes ?? 1, batchesRun === 0) } : {}),
      });
      if (taken.length === 0) {
        const progress = await records.queueProgress(job.sessionId);
        if (progress.unfinished === 0) break;
        // A stop ends the wait early (and the loop sees it).
        if (progress.takeable === 0) await sleep(WAIT_FOR_OTHERS_MS, undefined, { signal }).catch(() => undefined);
        continue;
      }
      const ctl = new AbortController();
      for (const f of taken) running.set(f.path, ctl);
      const onStop = () => ctl.abort();
      signal?.addEventListener('abort', onStop, { once: true });
      let verdicts: Verdict[];
      try {
        verdicts = batches ? await runs.batch(taken, ctl.signal) : await runs.oneByOne(taken, ctl.signal);
        verdicts = await runs.retried(verdicts, ctl.signal);
      } finally {
        signal?.removeEventListener('abort', onStop);
        for (const f of taken) running.delete(f.path);
        batchesRun += 1;
      }
      // Stopped, or taken over by another lane: this run is not these files' verdict; what
      // this lane still holds of them goes back to the list.
      if (ctl.signal.aborted) {
        if (!signal?.aborted) await records.releaseClaims(job.sessionId, { token: claim.token });
        continue;
      }
      for (const v of verdicts) {
        timedMs += v.durationMs;
        timed += 1;
      }
      const recorded = await records.recordFileResults(
        job.sessionId,
        claim,
        verdicts.map((v) => ({ ...v, runner: deps.runner })),
      );
      ran += recorded.recorded.size;
      // Only the verdicts that counted: a file another lane took over is that lane's to count.
      countTestFiles(verdicts.filter((v) => recorded.recorded.has(v.path)));
      // A claimed file with no verdict (never ran) goes back to the list rather than sit claimed.
      if (verdicts.length < taken.length) await records.releaseClaims(job.sessionId, { token: claim.token });
      if (recorded.firstFailure) await deps.firstFailure(recorded.firstFailure);
    }
  } finally {
    clearInterval(renewer);
    // Stopped (or failing): what this lane took and did not finish goes back to the list.
    await records.releaseClaims(job.sessionId, { token: claim.token }).catch(() => undefined);
  }
  return { ran, stopped: signal?.aborted === true };
}

/** How a lane runs what it claimed: file by file, as a batch, and again for a failing file. */
function runner(deps: LaneDeps, job: LaneJob, muted: ReadonlySet<string>, tracer: Tracer | null) {
  const note = job.note ?? '';
  const place = (signal: AbortSignal): BatchPlace => ({
    records: deps.records,
    sessionId: job.sessionId,
    lane: job.lane,
    runner: deps.runner,
    tree: job.workdir,
    home: job.home ?? `${job.workdir}.home`,
    env: job.env,
    secretValues: job.secretValues,
    attempt: job.attempt,
    command: job.command!,
    timeoutMs: job.timeoutMs,
    signal,
    processGroups: deps.processGroups,
    runAs: deps.runAs,
    sandbox: deps.sandbox,
    muted,
  });

  /** One file in a process of its own; `run` is which run of it this is here (a retry's is 2 or more), for its live output. */
  const alone = async (path: string, signal: AbortSignal, run = 1): Promise<Verdict> => {
    // A mapping run traces each file's first run.
    const trace = tracer && run === 1 ? tracer.traceFile : undefined;
    const traced = async (v: Verdict): Promise<Verdict> => {
      if (trace) await tracer!.record(path, v.status);
      return v;
    };
    if (isBatchCommand(job.command)) {
      const own = await runAlone(place(signal), path, `${job.lane + 1}-${trace ? 'map' : 'retry'}`, run, trace);
      return traced({ ...own, output: own.output + note });
    }
    const startedAt = new Date();
    const live = liveOutput(deps.records, job.sessionId, { kind: 'file', worker: job.lane + 1, path, attempt: job.attempt, run }, job.secretValues);
    const result = await live.watch(runTestFile({
      workdir: job.workdir,
      home: job.home,
      path,
      command: job.command,
      env: job.env,
      timeoutMs: job.timeoutMs,
      signal,
      onOutput: live.onOutput,
      processGroups: deps.processGroups,
      runAs: deps.runAs,
      sandbox: deps.sandbox,
      ...(trace ? { trace } : {}),
    }));
    return traced({ path, status: result.status, exitCode: result.exitCode, durationMs: result.durationMs, output: maskOutput(result.output, job.secretValues) + note, startedAt });
  };

  return {
    /** Each file in a process of its own; several from one shell (shellDriver.ts), a long one from here. */
    async oneByOne(files: QueuedFile[], signal: AbortSignal): Promise<Verdict[]> {
      if (files.length === 1) return [await alone(files[0]!.path, signal)];
      const results = await runFilesFromShell({
        workdir: job.workdir,
        home: job.home ?? `${job.workdir}.home`,
        command: job.command,
        env: job.env,
        files: files.map((f) => f.path),
        timeoutMs: job.timeoutMs,
        signal,
        processGroups: deps.processGroups,
        runAs: deps.runAs,
        sandbox: deps.sandbox,
        live: (path) => liveOutput(deps.records, job.sessionId, { kind: 'file', worker: job.lane + 1, path, attempt: job.attempt, run: 1 }, job.secretValues),
      });
      return results.map(({ path, status, exitCode, durationMs, output, startedAt }) => ({
        path,
        status,
        exitCode,
        durationMs,
        output: maskOutput(output, job.secretValues) + note,
        startedAt,
      }));
    },

    async batch(files: QueuedFile[], signal: AbortSignal): Promise<Verdict[]> {
      // Unknown only when the suite has no history at all (the list gives new files the median).
      const results = await runBatch(place(signal), files.map((f) => ({ path: f.path, estimateMs: f.estimateMs ?? NO_HISTORY_MS })));
      return (results ?? []).map((r) => ({ ...r, output: r.output + (r.output ? note : '') }));
    },

    /**
     * Each failing file run again, alone, until it passes or its retries are spent. The last run
     * is its verdict; one that passed on a retry is flaky, and keeps the first failure's output
     * after its own, so the flake can be looked into.
     */
    async retried(verdicts: Verdict[], signal: AbortSignal): Promise<Verdict[]> {
      const retries = job.retryFailed ?? 0;
      if (retries === 0) return verdicts;
      const out: Verdict[] = [];
      for (const first of verdicts) {
        let last = first;
        let attempts = 1;
        while (last.status !== 'passed' && attempts <= retries && !signal.aborted) {
          last = await alone(first.path, signal, attempts + 1);
          attempts += 1;
        }
        const flaky = attempts > 1 && last.status === 'passed';
        const output = flaky
          ? `${last.output}\n[sluice] passed on run ${attempts}, after ${attempts - 1} failed; the first run's output:\n${tail(first.output, FLAKY_CONTEXT)}`
          : last.output;
        // A retry runs alone, but the file is still the batch's that first ran it (the views say which).
        out.push({ ...last, output, attempts, flaky, batchId: last.batchId ?? first.batchId });
      }
      return out;
    },
  };
}
