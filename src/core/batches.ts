/**
 * Batches (issue 22): a profile whose `test_command` holds `{files}` runs many test files in one
 * process, as a framework's own runner does, instead of paying a process start per file. Pure:
 * the command a batch runs, how big batches are, and which files a failed batch's JUnit XML
 * pins the failure on.
 *
 * Files stay the unit the spec's `counts` count. A batch that exits 0 passes its files; one that
 * fails, crashes or times out passes the files its reports show passing and fails those they
 * show failing; the files they say nothing of are run again, one process each, to find out
 * (steps/tests/batch.ts).
 */

export const FILES_PLACEHOLDER = '{files}';

/** Whether a test command runs files in batches. */
export function isBatchCommand(command: string | null | undefined): command is string {
  return typeof command === 'string' && command.includes(FILES_PLACEHOLDER);
}

/** A path as one shell word: single-quoted, and never read as an option. */
export function shellQuote(path: string): string {
  const safe = path.startsWith('-') ? `./${path}` : path;
  return `'${safe.replace(/'/g, `'\\''`)}'`;
}

/** The batch's command line for `sh -c`: `{files}` (every occurrence) becomes the paths, quoted. */
export function batchCommandLine(command: string, paths: readonly string[]): string {
  return command.split(FILES_PLACEHOLDER).join(paths.map(shellQuote).join(' '));
}

/** The middle of the recorded durations; null when there are none. */
export function medianMs(durations: readonly number[]): number | null {
  if (durations.length === 0) return null;
  const sorted = [...durations].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : Math.round((sorted[mid - 1]! + sorted[mid]!) / 2);
}

/** What a file never run is taken to last when no file of the suite has a recorded duration. */
export const NO_HISTORY_MS = 1_000;
/**
 * The shortest batch worth its process start (a Node.js framework's is about half a second), and
 * the longest one. Not more than a lane's share of a short suite: at 2 s, the first lane took 2 s
 * of a 3.4-second suite on two lanes and the other lane the rest (express, issue 22's bench).
 */
export const MIN_BATCH_MS = 1_000;
export const MAX_BATCH_MS = 20_000;

/**
 * How long the next batch should be: a lane's fair share of all the work left, that is the files
 * nobody has taken and what the batches other lanes are running still have to do, within
 * MIN_BATCH_MS..MAX_BATCH_MS (under it for a short suite's first batches: shortSuite, with
 * `first` for a lane that has run none yet). Counting the batches under way is what makes the
 * shares equal: lanes that start together each take half of a two-lane suite, and each pays its framework's
 * start once, where sizing from the untaken files alone (guided self-scheduling, as OpenMP's
 * `guided`) would hand the second lane a quarter, then an eighth, each a process start of its
 * own. A lane that starts late, or whose batch ran short of its estimate, takes a smaller
 * batch, so the lanes finish within about one short batch of each other.
 */
export function batchBudgetMs(work: { pendingMs: number; runningMs: number }, lanes: number, first = false): number {
  const share = laneShareMs(work, lanes);
  const least = shortSuite(share, first) ? 0 : MIN_BATCH_MS;
  return Math.round(Math.min(MAX_BATCH_MS, Math.max(least, share)));
}

/**
 * What a batch takes along rather than leave behind (claimFiles' `restBelowMs`): files estimated
 * under a process start, which the lane that took them last would run after everyone else had
 * finished. Not on a short suite's first batches: the other lanes are there to take the rest at
 * once, each in a process of its own, in parallel.
 */
export function batchRestBelowMs(work: { pendingMs: number; runningMs: number }, lanes: number, first = false): number {
  return shortSuite(laneShareMs(work, lanes), first) ? 0 : MIN_BATCH_MS;
}

/** A lane's fair share of the work left: untaken files and what running batches still have to do. */
function laneShareMs(work: { pendingMs: number; runningMs: number }, lanes: number): number {
  return (work.pendingMs + work.runningMs) / Math.max(1, lanes);
}

/**
 * A suite whose lanes' shares are each under a batch worth its process start, seen by a lane
 * about to run its first batch: each lane then takes one batch of its share, so lanes that start
 * together split it and pay their process starts side by side, where MIN_BATCH_MS would give
 * one lane everything and leave the others idle (two `node --test` files of 0.7 s each on two
 * lanes: both on one lane took 0.9 s, the framework alone with two processes 0.36 s; issue 49).
 * A lane's later batches keep MIN_BATCH_MS: a second process start in a row is never free.
 */
function shortSuite(shareMs: number, first: boolean): boolean {
  return first && shareMs < MIN_BATCH_MS;
}

/**
 * How many shares of the budget the untaken work holds, so every lane still to claim takes
 * every stride-th file of the list (claimFiles): the first of two lanes takes the 1st, 3rd,
 * 5th... longest files up to its half, the second the rest.
 */
export function batchStride(pendingMs: number, budgetMs: number): number {
  return Math.max(1, Math.round(pendingMs / Math.max(1, budgetMs)));
}

/** A JUnit case as a batch's verdict needs it. */
export interface BatchCase {
  file?: string;
  status: 'passed' | 'failed' | 'error' | 'skipped';
  time: number | null;
  /** Its testsuite (parseJUnit with `suites`). */
  suite?: { id: number; time: number | null };
}

/**
 * Which file of the batch a report's `file` attribute names: a path relative to the checkout
 * (`test/a.js`, `./test/a.js`) or absolute inside it; null when it names none of the batch.
 */
export function batchFileOf(reported: string, tree: string, batch: readonly string[]): string | null {
  const p = reportedPath(reported, tree);
  return batch.includes(p) ? p : null;
}

/** A report's `file` as a path relative to the checkout, the way test files are listed. */
export function reportedPath(reported: string, tree: string): string {
  let p = reported.replace(/\\/g, '/');
  const root = tree.endsWith('/') ? tree : `${tree}/`;
  if (p.startsWith(root)) p = p.slice(root.length);
  while (p.startsWith('./')) p = p.slice(2);
  return p;
}

export interface FileVerdict {
  path: string;
  /** null: the reports say nothing of it (run it alone to know). */
  status: 'passed' | 'failed' | 'error' | null;
  /** Seconds its cases took by the reports, when they say. */
  seconds: number | null;
}

/**
 * Each file's verdict from a batch that did not pass whole, by its reports' cases: a file with a
 * failing case failed (an erroring one erred); a file whose cases all passed (or were skipped)
 * passed; a file no case names is unknown.
 */
export function pinFailures(batch: readonly string[], cases: readonly BatchCase[], tree: string): FileVerdict[] {
  const byFile = new Map<string, BatchCase[]>();
  for (const c of cases) {
    const file = c.file ? batchFileOf(c.file, tree, batch) : null;
    if (file) byFile.set(file, [...(byFile.get(file) ?? []), c]);
  }
  return batch.map((path) => {
    const mine = byFile.get(path);
    if (!mine) return { path, status: null, seconds: null };
    const status = mine.some((c) => c.status === 'failed') ? 'failed' : mine.some((c) => c.status === 'error') ? 'error' : 'passed';
    return { path, status, seconds: secondsOf(mine) };
  });
}

/**
 * Seconds per file of the batch by its reports (files they name), for the timing history: a
 * testsuite whose cases are all of one file counts whole for it (jest's suite time holds the
 * file's loading, which its cases' times leave out); other cases count their own time.
 */
export function reportedSeconds(batch: readonly string[], cases: readonly BatchCase[], tree: string): Map<string, number> {
  const out = new Map<string, number>();
  // Cases by their testsuite (a case without one is a group of its own), each with its file.
  const groups = new Map<number | BatchCase, { time: number | null; cases: { file: string | null; time: number | null }[] }>();
  for (const c of cases) {
    const key = c.suite?.id ?? c;
    const group = groups.get(key) ?? { time: c.suite?.time ?? null, cases: [] };
    group.cases.push({ file: c.file ? batchFileOf(c.file, tree, batch) : null, time: c.time });
    groups.set(key, group);
  }
  const add = (file: string, seconds: number) => out.set(file, (out.get(file) ?? 0) + seconds);
  for (const group of groups.values()) {
    const files = new Set(group.cases.map((c) => c.file));
    const [only] = [...files];
    if (files.size === 1 && only && group.time !== null) {
      add(only, Math.max(group.time, group.cases.reduce((sum, c) => sum + (c.time ?? 0), 0)));
      continue;
    }
    for (const c of group.cases) if (c.file && c.time !== null) add(c.file, c.time);
  }
  return out;
}

function secondsOf(cases: readonly BatchCase[]): number | null {
  const times = cases.map((c) => c.time).filter((t): t is number => t !== null);
  return times.length === 0 ? null : times.reduce((a, b) => a + b, 0);
}

/**
 * A batch's wall-clock time shared out to its files, for the timing history: what the reports
 * say of each, and the rest (the process start, files they do not time) in proportion to the
 * files' estimates.
 */
export function shareDuration(batchMs: number, files: ReadonlyArray<{ path: string; estimateMs: number }>, reported: ReadonlyMap<string, number>): Map<string, number> {
  const out = new Map<string, number>();
  const known = files.reduce((sum, f) => sum + (reported.get(f.path) ?? 0) * 1000, 0);
  const rest = Math.max(0, batchMs - known);
  const weights = files.reduce((sum, f) => sum + Math.max(1, f.estimateMs), 0);
  for (const f of files) {
    out.set(f.path, Math.round((reported.get(f.path) ?? 0) * 1000 + (rest * Math.max(1, f.estimateMs)) / weights));
  }
  return out;
}
