/**
 * The first failure first (issue 49): which test files of a build run before the rest because
 * they are the likeliest to fail, and why. No I/O: the runner gives what it knows.
 *
 * In this order: test files the change itself touched; then files that read a changed file by
 * the dependency map (issue 40); then files that failed or were flaky in the suite's recent
 * builds, the most often first. Within each kind the shortest first, so a failure shows soonest.
 * The rest keep the timing history's order (longest first), which packs the lanes.
 *
 * Moving short files ahead of long ones can lengthen the build: the longest files start later.
 * So the files moved first are bounded by their estimated time, FIRST_SHARE of the whole
 * build's; the top-ranked file always goes first (one file's move costs at most its own time).
 */

export interface ListedFile {
  path: string;
  /** Its estimated run time, or null when nothing is known. */
  estimateMs: number | null;
}

export interface FailureCount {
  /** Builds it failed or erred in (flaky counts too: it failed a run). */
  failed: number;
  /** Of how many of the suite's recent builds that ran it. */
  builds: number;
}

export interface FirstFailureHints {
  /** Files the build's change touched (added or modified), repository paths. */
  changed: ReadonlySet<string>;
  /** Test file → the changed files its run read, by the newest dependency map. */
  affectedBy: ReadonlyMap<string, readonly string[]>;
  /** Test file → how often it failed in the suite's recent builds (files that never failed are absent). */
  failures: ReadonlyMap<string, FailureCount>;
}

export interface OrderedFile extends ListedFile {
  /** Why it runs first ("changed", "affected by lib/a.js", "failed in 2 of the last 10 builds"); null: in the usual order. */
  first: string | null;
}

/** The share of the build's estimated test time that may be moved ahead of the usual order. */
export const FIRST_SHARE = 0.05;
/** Changed files named in one reason at most. */
const CAUSES_NAMED = 3;

/** Each file's reasons to run first, most telling first; empty: none. */
function reasonsOf(path: string, hints: FirstFailureHints): { rank: number; failed: number; words: string[] } {
  const words: string[] = [];
  let rank = Infinity;
  if (hints.changed.has(path)) {
    words.push('changed');
    rank = Math.min(rank, 0);
  }
  const by = hints.affectedBy.get(path) ?? [];
  if (by.length > 0) {
    const named = by.slice(0, CAUSES_NAMED).join(', ');
    words.push(`affected by ${named}${by.length > CAUSES_NAMED ? ` and ${by.length - CAUSES_NAMED} more` : ''}`);
    rank = Math.min(rank, 1);
  }
  const history = hints.failures.get(path);
  if (history && history.failed > 0) {
    words.push(`failed in ${history.failed} of the last ${history.builds} build${history.builds === 1 ? '' : 's'}`);
    rank = Math.min(rank, 2);
  }
  return { rank, failed: history?.failed ?? 0, words };
}

/**
 * `files` (in the usual order: longest first) with the likeliest failures moved to the front,
 * each saying why; the rest as they were.
 */
export function orderFirstFailures(files: readonly ListedFile[], hints: FirstFailureHints): OrderedFile[] {
  // One file runs first whatever it is.
  if (files.length < 2) return files.map((f) => ({ ...f, first: null }));
  const known = files.map((f) => f.estimateMs).filter((ms): ms is number => ms !== null);
  // A file of unknown length counts as the middle one, or as 1 when nothing is known at all.
  const typical = known.length > 0 ? [...known].sort((a, b) => a - b)[Math.floor(known.length / 2)]! : 1;
  const cost = (f: ListedFile) => f.estimateMs ?? typical;
  const budget = FIRST_SHARE * files.reduce((sum, f) => sum + cost(f), 0);

  const candidates = files
    .map((f, index) => ({ f, index, ...reasonsOf(f.path, hints) }))
    .filter((c) => c.words.length > 0)
    .sort((a, b) => a.rank - b.rank || b.failed - a.failed || cost(a.f) - cost(b.f) || a.index - b.index);

  const first: OrderedFile[] = [];
  const moved = new Set<string>();
  let spent = 0;
  for (const c of candidates) {
    if (first.length > 0 && spent + cost(c.f) > budget) continue;
    first.push({ ...c.f, first: c.words.join(', ') });
    moved.add(c.f.path);
    spent += cost(c.f);
  }
  return [...first, ...files.filter((f) => !moved.has(f.path)).map((f) => ({ ...f, first: null }))];
}
