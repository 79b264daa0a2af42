/**
 * Running a batch: many test files of a lane in one process, the profile's `test_command` with
 * `{files}` made the batch's paths (core/batches.ts), with `sh -c`, in the worker's checkout,
 * home and environment, plus `SLUICE_BATCH_ID` and `SLUICE_REPORT_DIR`, an empty directory
 * whose JUnit XML files are read as the batch's results.
 *
 * Every run's reports are kept as the build's test cases (issue 37): each with its test file,
 * and where its failure is when the stack trace says (core/failureLocation.ts).
 *
 * A batch that exits 0 passes its files. One that fails, crashes or times out must not fail
 * innocent files: its reports pin each failure on its file (their `file` attribute), and the
 * files they say nothing of run again, one process each, to find out; the batch's note says
 * which were which.
 */
import { chown, mkdir, readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { batchCommandLine, pinFailures, reportedPath, reportedSeconds, shareDuration, type BatchCase } from '../../core/batches';
import { failureLocation } from '../../core/failureLocation';
import { testKey } from '../../core/testKey';
import { parseJUnit } from '../../core/junit';
import type { OutputSource } from '../../db/outputChunks';
import type { RunCase } from '../../db/testCases';
import { liveOutput } from '../liveOutput';
import { maskOutput } from '../output';
import { runProcess, type BuildUser, type ProcessGroups, type ProcessResult } from '../isolation/process';
import type { BuildRecords } from '../records';
import { countBatch } from '../../metrics/counts';
import { outsideSandbox, type Sandbox, type SandboxDirs } from '../isolation/sandbox';
import { readCapped } from './junit';
import { testEnvironment } from './runTestFile';

/** Where a batch runs, and as whom: the lane's worker. */
export interface BatchPlace {
  records: BuildRecords;
  sessionId: number;
  lane: number;
  runner: string;
  tree: string;
  home: string;
  /** The worker's variables (over the clean base). */
  env: Record<string, string>;
  /** Values masked in what is stored. */
  secretValues: string[];
  /** Which attempt of the lane's activity this is (its live output says so); default 1. */
  attempt?: number;
  /** The profile's test command, with `{files}`. */
  command: string;
  /** The time limit of one file; a batch gets it too (see timeoutOf). */
  timeoutMs: number;
  signal?: AbortSignal;
  processGroups?: ProcessGroups;
  runAs?: BuildUser;
  sandbox?: Sandbox;
  /** The suite's muted tests (core/testKey.ts): their failures do not fail a file. */
  muted?: ReadonlySet<string>;
}

const failing = (c: { status: string }): boolean => c.status === 'failed' || c.status === 'error';

/** Whether a run's reports hold failures, and every one of them is of a muted test. */
const onlyMutedFailures = (cases: readonly ReportedCase[]): boolean => cases.some(failing) && cases.every((c) => !failing(c) || c.muted);

/** What a file's output says when its only failures were muted tests'. */
const mutedNote = (cases: readonly ReportedCase[]): string =>
  `[sluice] passed: its only failures are of muted tests (${[...new Set(cases.filter((c) => c.muted).map((c) => (c.classname ? `${c.classname} › ${c.name}` : c.name)))].join(', ')})\n`;

export interface BatchFile {
  path: string;
  /** What the file was expected to take (its history, or the median). */
  estimateMs: number;
}

/** A file's verdict from its batch, as the lane records it. */
export interface BatchFileResult {
  path: string;
  status: 'passed' | 'failed' | 'error';
  exitCode: number | null;
  durationMs: number;
  /** The file's own output: its run alone, or its failing cases; '' when the batch's output is all there is. */
  output: string;
  batchId: number;
  startedAt: Date;
}

/** Report files read from one batch at most, and bytes of each. */
const MAX_REPORTS = 200;
const MAX_REPORT_BYTES = 16 * 1024 * 1024;
/**
 * Cases one run's reports store at most, and characters of failure text (messages and stack
 * traces) across them, and of names (beyond it, the cases that follow are not kept).
 */
export const MAX_RUN_CASES = 100_000;
export const MAX_RUN_CASE_TEXT = 16 * 1024 * 1024;
/** Beyond MAX_RUN_CASE_TEXT, what a failing case keeps of its message. */
const CUT_MESSAGE = 1024;

/** Ends a batch's record, and counts it by its result. */
async function finishBatch(place: BatchPlace, batchId: number, end: Parameters<BuildRecords['finishBatch']>[1]): Promise<void> {
  await place.records.finishBatch(batchId, end);
  countBatch(end.note === 'stopped' ? 'stopped' : end.status);
}

/**
 * Runs `files` as one batch; their verdicts, or null when the batch was stopped (nothing of it
 * counts). `runAlone` runs one file by itself (a failed batch's unpinned files).
 */
export async function runBatch(place: BatchPlace, files: readonly BatchFile[]): Promise<BatchFileResult[] | null> {
  const paths = files.map((f) => f.path);
  const batchId = await place.records.startBatch({ sessionId: place.sessionId, lane: place.lane, runner: place.runner, files: files.length });
  const startedAt = new Date();
  const run = await runCommand(place, paths, `${batchId}`, timeoutOf(place.timeoutMs, files), {
    kind: 'batch',
    worker: place.lane + 1,
    batchId,
  });
  const output = maskOutput(run.result.output, place.secretValues);
  if (place.signal?.aborted) {
    await finishBatch(place, batchId, { status: 'error', exitCode: run.result.exitCode, durationMs: run.result.durationMs, output, note: 'stopped' });
    return null;
  }
  const reported = reportedSeconds(paths, run.cases, place.tree);
  const durations = shareDuration(run.result.durationMs, files, reported);
  if (run.result.status === 'passed') {
    await finishBatch(place, batchId, { status: 'passed', exitCode: 0, durationMs: run.result.durationMs, output, note: null });
    return files.map((f) => ({ path: f.path, status: 'passed', exitCode: 0, durationMs: durations.get(f.path)!, output: '', batchId, startedAt }));
  }

  // A batch of one file is that file's own run: its verdict, as a run alone's (muted tests' failures pass it).
  if (files.length === 1) {
    const muted = onlyMutedFailures(run.cases);
    const status = muted ? 'passed' : run.result.status;
    await finishBatch(place, batchId, { status: run.result.status, exitCode: run.result.exitCode, durationMs: run.result.durationMs, output, note: muted ? 'its file passed: its only failures are of muted tests' : null });
    return [{ path: files[0]!.path, status, exitCode: run.result.exitCode, durationMs: run.result.durationMs, output: output + (muted ? mutedNote(run.cases) : ''), batchId, startedAt }];
  }
  // Not whole: each file by what the reports say of it (a muted test's failure counts as a
  // pass), else by a run of its own.
  const verdicts = pinFailures(paths, run.cases.map((c) => (c.muted ? { ...c, status: 'passed' as const } : c)), place.tree);
  const results: BatchFileResult[] = [];
  const alone: string[] = [];
  for (const v of verdicts) {
    if (v.status === null) {
      alone.push(v.path);
      continue;
    }
    const mine = run.cases.filter((c) => c.path === v.path);
    const failures = mine.filter((c) => failing(c) && !c.muted);
    results.push({
      path: v.path,
      status: v.status,
      exitCode: run.result.exitCode,
      durationMs: durations.get(v.path)!,
      output: v.status === 'passed' && mine.some((c) => c.muted) ? mutedNote(mine) : maskOutput(failures.map((c) => c.text).join('\n\n'), place.secretValues),
      batchId,
      startedAt,
    });
  }
  for (const file of alone) {
    if (place.signal?.aborted) break;
    const own = await runAlone(place, file, `${batchId}-${results.length + 1}`);
    results.push({ ...own, batchId });
  }
  const how = run.result.exitCode !== null ? `exit code ${run.result.exitCode}` : (lastNote(run.result.output) ?? 'it did not finish');
  const pinned = verdicts.length - alone.length;
  const note =
    `the batch failed (${how}): ` +
    [pinned > 0 ? `${pinned} file${pinned === 1 ? '' : 's'} by ${pinned === 1 ? 'its' : 'their'} JUnit results` : '', alone.length > 0 ? `${alone.length} run again one by one` : '']
      .filter(Boolean)
      .join(', ');
  await finishBatch(place, batchId, { status: run.result.status, exitCode: run.result.exitCode, durationMs: run.result.durationMs, output, note });
  if (place.signal?.aborted) return null;
  return results;
}

/**
 * One file by itself, with the batch's command (its `{files}` the file alone): a pinning run, or
 * a retry (`run` 2 or more, for its live output).
 */
export async function runAlone(place: BatchPlace, file: string, id: string, run = 1, trace?: string): Promise<Omit<BatchFileResult, 'batchId'> & { batchId: null }> {
  const startedAt = new Date();
  const source: OutputSource = { kind: 'file', worker: place.lane + 1, path: file, attempt: place.attempt ?? 1, run };
  const { result, cases } = await runCommand(place, [file], id, place.timeoutMs, source, trace);
  const muted = result.status !== 'passed' && onlyMutedFailures(cases);
  return {
    path: file,
    status: muted ? 'passed' : result.status,
    exitCode: result.exitCode,
    durationMs: result.durationMs,
    output: maskOutput(result.output, place.secretValues) + (muted ? mutedNote(cases) : ''),
    batchId: null,
    startedAt,
  };
}

/**
 * A batch's time limit: the file limit when the batch is a few files, growing with its estimate
 * so that a batch sized to many files is not cut short, but never beyond the file limit per file.
 */
function timeoutOf(fileLimitMs: number, files: readonly BatchFile[]): number {
  if (fileLimitMs <= 0) return 0;
  const estimate = files.reduce((sum, f) => sum + f.estimateMs, 0);
  return Math.min(fileLimitMs * files.length, Math.max(fileLimitMs, 3 * estimate));
}

interface ReportedCase extends BatchCase {
  /** The batch file the case is in (its `file` mapped), for its output. */
  path: string | null;
  /** The failure's message and output, for the file's own output. */
  text: string;
  classname: string;
  name: string;
  message: string | null;
  output: string | null;
  /** A failure of a muted test. */
  muted: boolean;
}

/**
 * Runs the test command on `files` with its own empty report directory, its output live as
 * `source`'s; its result and the cases its reports hold, which are stored as the build's.
 */
async function runCommand(
  place: BatchPlace,
  files: readonly string[],
  id: string,
  timeoutMs: number,
  source: OutputSource,
  /** Under strace, into this file (a mapping run). */
  trace?: string,
): Promise<{ result: ProcessResult; cases: ReportedCase[] }> {
  const reportDir = path.join(place.home, '.sluice-reports', id);
  await rm(reportDir, { recursive: true, force: true });
  await mkdir(reportDir, { recursive: true, mode: 0o700 });
  if (place.runAs) {
    await chown(path.dirname(reportDir), place.runAs.uid, place.runAs.gid);
    await chown(reportDir, place.runAs.uid, place.runAs.gid);
  }
  const live = liveOutput(place.records, place.sessionId, source, place.secretValues);
  try {
    const result = await live.watch(runProcess({
      argv: ['/bin/sh', '-c', batchCommandLine(place.command, files)],
      viaShell: true,
      cwd: place.tree,
      env: testEnvironment(place.home, { ...place.env, SLUICE_BATCH_ID: id, SLUICE_REPORT_DIR: reportDir }),
      program: 'the test command',
      dirs: { tree: place.tree, home: place.home },
      timeoutMs,
      signal: place.signal,
      onOutput: live.onOutput,
      processGroups: place.processGroups,
      runAs: place.runAs,
      sandbox: place.sandbox,
      ...(trace ? { trace } : {}),
    }));
    const cases = await readReports(reportDir, place.tree, place.sandbox ? { tree: place.tree, home: place.home } : null);
    for (const c of cases) c.muted = failing(c) && (place.muted?.has(testKey(c)) ?? false);
    // A failed batch's cases that name no file of it are left out: its files they could be of are
    // the ones it cannot pin, and each runs again alone, reporting its own.
    const kept = runCases(place, files, cases).filter((c) => c.testFile !== null || result.status === 'passed' || files.length === 1);
    if (!place.signal?.aborted) await place.records.recordRunCases(place.sessionId, place.lane, id, files, kept);
    return { result, cases };
  } finally {
    await rm(reportDir, { recursive: true, force: true });
  }
}

/** The cases of the JUnit XML files a batch left in its report directory (regular files only: no link is followed). */
async function readReports(dir: string, tree: string, sandboxed: SandboxDirs | null): Promise<ReportedCase[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true }).catch(() => []);
  const files = entries.filter((e) => e.isFile() && e.name.endsWith('.xml')).slice(0, MAX_REPORTS);
  const cases: ReportedCase[] = [];
  let reportIndex = 0;
  for (const entry of files) {
    const { text } = await readCapped(path.join(entry.parentPath, entry.name), MAX_REPORT_BYTES);
    // Suites of different report files are apart: their numbers start again in each.
    const offset = (reportIndex += 1) * 1_000_000;
    for (const c of parseJUnit(text, { suites: true, maxCases: MAX_RUN_CASES }).cases) {
      const suite = c.suite ? { id: c.suite.id + offset, time: c.suite.time } : undefined;
      // A path the sandbox showed (SANDBOX_TREE/…) as the host knows it.
      const file = c.file && sandboxed ? outsideSandbox(sandboxed, c.file) : c.file;
      cases.push({
        file,
        status: c.status,
        time: c.time,
        suite,
        path: null,
        text: [c.message, c.output].filter(Boolean).join('\n'),
        classname: c.classname,
        name: c.name,
        message: c.message,
        output: c.output,
        muted: false,
      });
    }
  }
  // Which file of the tree each case names, for its output (pinFailures maps them the same way).
  for (const c of cases) c.path = c.file ? reportedPath(c.file, tree) : null;
  return cases;
}

/**
 * A run's cases as the build keeps them: each in its test file (the one the report names, or the
 * run's only file), secrets masked, the failure's place found, within the run's limits.
 */
function runCases(place: BatchPlace, files: readonly string[], cases: readonly ReportedCase[]): RunCase[] {
  const ours = new Set(files);
  const sandboxed = place.sandbox ? { tree: place.tree, home: place.home } : null;
  const inTree = (printed: string): string | null => {
    const host = sandboxed ? outsideSandbox(sandboxed, printed) : printed;
    const rel = path.isAbsolute(host) ? path.relative(place.tree, host) : path.normalize(host);
    return rel === '' || rel.startsWith('..') || path.isAbsolute(rel) ? null : rel.split(path.sep).join('/');
  };
  let text = 0;
  let names = 0;
  const kept: RunCase[] = [];
  for (const c of cases.slice(0, MAX_RUN_CASES)) {
    // Names count too: what one run sends (to the API, from a runner with a token) stays bounded.
    names += c.classname.length + c.name.length + (c.path?.length ?? 0);
    if (names > MAX_RUN_CASE_TEXT) break;
    const testFile = c.path !== null && ours.has(c.path) ? c.path : files.length === 1 ? files[0]! : null;
    let message = c.message === null ? null : maskOutput(c.message, place.secretValues);
    let output = c.output === null ? null : maskOutput(c.output, place.secretValues);
    text += (message?.length ?? 0) + (output?.length ?? 0);
    if (text > MAX_RUN_CASE_TEXT) {
      message = message?.slice(0, CUT_MESSAGE) ?? null;
      output = null;
    }
    const at = failing(c) ? failureLocation(`${c.message ?? ''}\n${c.output ?? ''}`, testFile, inTree) : null;
    kept.push({ testFile, classname: c.classname, name: c.name, status: c.status, time: c.time, message, output, failureFile: at?.file ?? null, failureLine: at?.line ?? null, muted: c.muted });
  }
  return kept;
}

/** The last `[sluice] …` note of a process's output (a time-out, a signal). */
function lastNote(output: string): string | null {
  const notes = output.split('\n').filter((l) => l.startsWith('[sluice] '));
  return notes.length > 0 ? notes[notes.length - 1]!.slice('[sluice] '.length) : null;
}
