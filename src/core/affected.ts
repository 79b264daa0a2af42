/**
 * Which test files a change can affect (issue 40): the rule, with no I/O. A map says, for each
 * test file, which repository files its run read (`reads`), which directories it listed
 * (`lists`: a file added or removed there changes what it finds) and which paths it looked for and did
 * not find (`probes`: a file made there would be found, as a module resolver tries names). A test
 * file runs when it changed or is new, when it has no map yet, or when a changed file is one of
 * those; the rest are skipped as not affected.
 *
 * Everything runs when the map cannot judge the change: no map at all, or a changed file that
 * decides how every test runs whatever reads it (lock files and manifests, sluice.yml, the
 * suite's `always_full` globs).
 */
import picomatch from 'picomatch';

/** What one test file's run touched in the repository, paths relative to its root, `/`-separated. */
export interface TestFileDeps {
  reads: readonly string[];
  lists: readonly string[];
  probes: readonly string[];
}

export interface DependencyMap {
  /** The default branch's commit the map was recorded at. */
  commit: string;
  files: ReadonlyMap<string, TestFileDeps>;
}

/** Why a test file runs. */
export type RunReason = { kind: 'changed' } | { kind: 'unmapped' } | { kind: 'depends'; on: string[] };

export type Selection =
  | { full: true; reason: string }
  | {
      full: false;
      /** The map's commit. */
      mapCommit: string;
      /** The test files to run, each with why, in the order given. */
      run: Map<string, RunReason>;
      /** The rest: not affected. */
      skipped: string[];
      /** The changed files that made some test file run (for "affected by …"). */
      causes: string[];
    };

/**
 * Files whose change can alter every test's run without any test reading them at the map's
 * commit (installed packages, toolchains, Sluice's own settings): matched on the file's name,
 * anywhere in the tree.
 */
export const ALWAYS_FULL_NAMES: readonly string[] = [
  'sluice.yml',
  // JavaScript
  'package.json', 'package-lock.json', 'npm-shrinkwrap.json', 'yarn.lock', 'pnpm-lock.yaml', 'pnpm-workspace.yaml', 'bun.lockb', '.npmrc', '.nvmrc', '.node-version',
  // Ruby
  'Gemfile', 'Gemfile.lock', '.ruby-version',
  // Python
  'requirements.txt', 'Pipfile', 'Pipfile.lock', 'poetry.lock', 'pyproject.toml', 'setup.py', 'setup.cfg', 'uv.lock', '.python-version',
  // Go, Rust, JVM, PHP, Elixir, .NET
  'go.mod', 'go.sum', 'go.work', 'Cargo.toml', 'Cargo.lock', 'rust-toolchain', 'rust-toolchain.toml',
  'pom.xml', 'build.gradle', 'build.gradle.kts', 'settings.gradle', 'settings.gradle.kts', 'gradle.properties',
  'composer.json', 'composer.lock', 'mix.exs', 'mix.lock', 'packages.lock.json', 'Directory.Build.props',
  // Build tools and the environment
  'Makefile', 'Dockerfile', '.tool-versions',
];

const NAME_PATTERNS = [/^requirements[-.\w]*\.txt$/, /\.gemspec$/, /\.csproj$/];

/** Whether a change to `file` needs a full run, whatever the map says; the reason, or null. */
export function needsFullRun(file: string, alwaysFull: readonly string[]): string | null {
  const name = file.slice(file.lastIndexOf('/') + 1);
  if (ALWAYS_FULL_NAMES.includes(name) || NAME_PATTERNS.some((p) => p.test(name))) return `${file} changed (dependencies or settings every test depends on)`;
  const glob = alwaysFull.find((g) => picomatch.isMatch(file, g, { dot: true, nonegate: true, windows: false }));
  return glob === undefined ? null : `${file} changed (matches always_full ${glob})`;
}

/**
 * The test files of `testFiles` that `changed` (files changed since the map's commit, added,
 * modified or deleted) can affect, by `map`. `addedOrRemoved` is the part of `changed` that adds or
 * removes a name in its directory (added, deleted, or another kind of file now): only those change
 * a directory's listing. Without it, every changed file counts as one.
 */
export function selectAffected(input: {
  testFiles: readonly string[];
  changed: readonly string[];
  addedOrRemoved?: readonly string[];
  map: DependencyMap | null;
  alwaysFull?: readonly string[];
}): Selection {
  if (input.map === null) return { full: true, reason: 'no dependency map of an ancestor commit yet' };
  for (const file of input.changed) {
    const reason = needsFullRun(file, input.alwaysFull ?? []);
    if (reason !== null) return { full: true, reason };
  }
  const changed = new Set(input.changed);
  const addedOrRemoved = new Set(input.addedOrRemoved ?? input.changed);
  const run = new Map<string, RunReason>();
  const skipped: string[] = [];
  const causes = new Set<string>();
  for (const test of input.testFiles) {
    if (changed.has(test)) {
      run.set(test, { kind: 'changed' });
      continue;
    }
    const deps = input.map.files.get(test);
    if (!deps) {
      run.set(test, { kind: 'unmapped' });
      continue;
    }
    const on = dependsOn(deps, input.changed, addedOrRemoved);
    if (on.length > 0) {
      run.set(test, { kind: 'depends', on });
      for (const f of on) causes.add(f);
    } else {
      skipped.push(test);
    }
  }
  return { full: false, mapCommit: input.map.commit, run, skipped, causes: [...causes].sort() };
}

/**
 * The changed files a test file's run met: read, probed for, or added to or removed from a
 * directory it listed (a file only modified there leaves the listing as it was).
 */
function dependsOn(deps: TestFileDeps, changed: readonly string[], addedOrRemoved: ReadonlySet<string>): string[] {
  const reads = new Set(deps.reads);
  const probes = new Set(deps.probes);
  const lists = new Set(deps.lists);
  return changed.filter((f) => reads.has(f) || probes.has(f) || (addedOrRemoved.has(f) && lists.has(parentOf(f))));
}

const parentOf = (file: string) => (file.includes('/') ? file.slice(0, file.lastIndexOf('/')) : '.');

/**
 * What a build did about selection, as its page and the API say it:
 * - `map`: a default-branch build that ran everything and recorded a map at its commit;
 * - `full`: everything ran, and why (the default branch, `[ci full]`, a lock file changed, no map…);
 * - `selected`: only `ran` of `total` files ran, each for its reason; the rest were not affected.
 */
export type AffectedSummary =
  | {
      mode: 'map';
      commit: string;
      /** Shown, not stored: the test time of its files under strace, beside the same files' in the builds before. */
      cost?: { files: number; traced_ms: number; usual_ms: number };
    }
  | { mode: 'full'; reason: string }
  | {
      mode: 'selected';
      map_commit: string;
      ran: number;
      total: number;
      /** The changed files that made some file run (causes of "depends on"). */
      causes: string[];
      /** Every file that ran, with why: `changed`, `no map yet`, `depends on a.js, b.js`. */
      reasons: Record<string, string>;
    };

/** A run reason in words. */
export function describeReason(reason: RunReason): string {
  if (reason.kind === 'changed') return 'changed';
  if (reason.kind === 'unmapped') return 'no map yet';
  return `depends on ${reason.on.join(', ')}`;
}

/** The summary of a selection that did not run everything. */
export function selectedSummary(selection: Extract<Selection, { full: false }>): AffectedSummary {
  return {
    mode: 'selected',
    map_commit: selection.mapCommit,
    ran: selection.run.size,
    total: selection.run.size + selection.skipped.length,
    causes: selection.causes,
    reasons: Object.fromEntries([...selection.run].map(([file, reason]) => [file, describeReason(reason)])),
  };
}

/**
 * What a build with `affected:` did, in a sentence ("Ran 9 of 88 test files, affected by …"),
 * as its page and report say it.
 */
export function describeSelection(affected: AffectedSummary): string {
  if (affected.mode === 'map') {
    const c = affected.cost;
    const cost = c ? `; tracing cost ${seconds(c.traced_ms)} of test time for ${c.files} files, which took ${seconds(c.usual_ms)} in the builds before` : '';
    return `Ran every test file, each alone under strace, and recorded the dependency map at ${affected.commit.slice(0, 10)}${cost}.`;
  }
  if (affected.mode === 'full') return `Ran every test file: ${affected.reason}.`;
  const by = affected.causes.length > 0 ? `, affected by ${affected.causes.slice(0, 10).join(', ')}${affected.causes.length > 10 ? ` and ${affected.causes.length - 10} more` : ''}` : '';
  return `Ran ${affected.ran} of ${affected.total} test files${by}; the rest were not affected (dependency map of ${affected.map_commit.slice(0, 10)}).`;
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
