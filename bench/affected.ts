/**
 * Running only what a change can affect (issue 40), on real projects' history and on mutations
 * of their code (PROJECTS: npm/node-semver, small modules tested with tap; eslint-plugin-security,
 * an ESLint plugin's rules tested with mocha), each a copy of the repository its variable names (by
 * default the mirrors the development machines fetch to, under /work/.mirror);
 * SLUICE_BENCH_AFFECTED_PROJECTS picks some (`semver,security`). A project's dependencies are
 * installed once, at its newest commit, and each test file runs as Sluice runs it: its command
 * with the file, in a process of its own, two at a time (two cores); a mapping run traces each
 * file with the runner's own strace command (fileTrace.ts) and keeps what Sluice keeps
 * (mapping.ts: passed files whose trace saw them). Selection is Sluice's rule (core/affected.ts)
 * on what git says changed since the map, read as the runner reads it (steps/checkout/changes.ts).
 *
 * - Replay: the last SLUICE_BENCH_AFFECTED_COMMITS commits (200) of the default branch in order,
 *   maps recorded where `affected: {map_every: 10}` would record them (every ten builds, and at
 *   once after a manifest or lock file changed); each commit is judged as a pull request onto its
 *   parent is, against the newest map before it: how many of
 *   its test files would run, and how long they take by the durations of an untraced run of
 *   every file at the newest commit (the old commits are not run again: their dependencies
 *   differ from the installed ones, and 200 full runs would take hours here).
 * - Mutations: SLUICE_BENCH_MUTATIONS (100) single-line changes to the source files at the newest
 *   commit (an operator flipped on a random line, seeded): every test file runs on each, so the
 *   selected files' results are measured, not assumed; a miss is a file that fails on the full
 *   run and selection left out.
 */
import { execFile, execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { needsFullRun, selectAffected, type DependencyMap, type TestFileDeps } from '../src/core/affected';
import { DEFAULT_MAP_EVERY } from '../src/core/profiles';
import { withTreeChanges, type ChangedFiles } from '../src/steps/checkout/changes';
import { discoverTests } from '../src/steps/tests/discover';
import { parseFileTrace, tracedArgv } from '../src/steps/tests/fileTrace';
import type { Cluster } from '../test/support/cluster';
import type { Row } from './table';

const execFileAsync = promisify(execFile);
const COMMITS = Number(process.env.SLUICE_BENCH_AFFECTED_COMMITS ?? 200);
const MUTATIONS = Number(process.env.SLUICE_BENCH_MUTATIONS ?? 100);
const MAP_EVERY = DEFAULT_MAP_EVERY;
const PARALLEL = 2;
const FILE_TIMEOUT_MS = 60_000;

/** A real project to measure: where its copy is, how its tests are found and run, what a mutation may change. */
interface Project {
  key: string;
  name: string;
  source: string;
  /** How `fetch` brings it onto a development machine. */
  fetch: string;
  testFiles(tree: string): Promise<string[]>;
  /** The command a lane runs for one file. */
  command(file: string): string[];
  /** Git pathspecs of the source files mutations change. */
  sources: string[];
  /** Installs its dependencies without changing a tracked file. */
  install: string[];
}

const PROJECTS: Project[] = [
  {
    key: 'semver',
    name: 'npm/node-semver',
    source: process.env.SLUICE_BENCH_SEMVER ?? '/work/.mirror/npm+node-semver/repo',
    fetch: 'github:npm/node-semver (or set SLUICE_BENCH_SEMVER)',
    testFiles: async (tree) => (await discoverTests(tree, 'test/**/*.js')).filter((f) => !f.includes('/fixtures/')),
    command: (file) => ['node', file],
    sources: ['index.js', 'classes', 'functions', 'ranges', 'internal', 'bin'],
    // It keeps no lock file: the one npm writes is put aside (git status must stay clean).
    install: ['install', '--no-package-lock'],
  },
  {
    key: 'security',
    name: 'eslint-community/eslint-plugin-security',
    source: process.env.SLUICE_BENCH_ESLINT_SECURITY ?? '/work/.mirror/eslint-community+eslint-plugin-security/repo',
    fetch: 'github:eslint-community/eslint-plugin-security (or set SLUICE_BENCH_ESLINT_SECURITY)',
    testFiles: (tree) => discoverTests(tree, 'test/**/*.js'),
    command: (file) => ['node', 'node_modules/mocha/bin/mocha.js', file],
    sources: ['index.js', 'rules', 'utils'],
    install: ['ci'],
  },
];

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

interface FileRun {
  passed: boolean;
  ms: number;
  deps?: TestFileDeps;
}

/** One test file as Sluice runs it (a process of its own), optionally under strace. */
function runFile(project: Project, tree: string, file: string, trace: string | null): Promise<FileRun> {
  const argv = trace ? tracedArgv(trace, project.command(file)) : project.command(file);
  const started = performance.now();
  return new Promise((resolve) => {
    const child = spawn(argv[0]!, argv.slice(1), {
      cwd: tree,
      stdio: 'ignore',
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: os.tmpdir(), CI: 'true', LANG: 'C.UTF-8' },
      timeout: FILE_TIMEOUT_MS,
    });
    child.once('error', () => resolve({ passed: false, ms: performance.now() - started }));
    child.once('close', async (code) => {
      const ms = performance.now() - started;
      if (!trace) return resolve({ passed: code === 0, ms });
      const text = await readFile(trace, 'utf8').catch(() => '');
      await rm(trace, { force: true });
      const deps = parseFileTrace(text, tree);
      // What Sluice keeps (steps/tests/mapping.ts): a passed run whose trace saw its own file.
      resolve({ passed: code === 0, ms, ...(code === 0 && deps.reads.includes(file) ? { deps } : {}) });
    });
  });
}

/** Every file, PARALLEL at a time. */
async function runAll(project: Project, tree: string, files: readonly string[], traceDir: string | null): Promise<Map<string, FileRun>> {
  const out = new Map<string, FileRun>();
  let next = 0;
  await Promise.all(
    Array.from({ length: PARALLEL }, async (_, lane) => {
      while (next < files.length) {
        const file = files[next++]!;
        out.set(file, await runFile(project, tree, file, traceDir ? path.join(traceDir, `trace-${lane}.txt`) : null));
      }
    }),
  );
  return out;
}

function mapOf(commit: string, runs: Map<string, FileRun>): DependencyMap {
  return { commit, files: new Map([...runs].flatMap(([f, r]) => (r.deps ? [[f, r.deps] as const] : []))) };
}

const git = async (tree: string, args: string[]) => (await execFileAsync('git', args, { cwd: tree, maxBuffer: 64 * 1024 * 1024 })).stdout;
/** What changed since `from` in the tree as checked out, read as the runner reads it. */
const changedSince = (tree: string, from: string): Promise<ChangedFiles> => withTreeChanges('git', tree, undefined, (changes) => changes.changedSince(from));

/** A small seeded generator (mulberry32): the same mutations every run. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a |= 0;
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Mutation operators: the first that matches a line changes it. */
const OPERATORS: Array<[RegExp, string]> = [
  [/===/, '!=='],
  [/!==/, '==='],
  [/ <= /, ' < '],
  [/ >= /, ' > '],
  [/ < /, ' <= '],
  [/ > /, ' >= '],
  [/&&/, '||'],
  [/\|\|/, '&&'],
  [/\btrue\b/, 'false'],
  [/\bfalse\b/, 'true'],
  [/\+ 1\b/, '- 1'],
  [/\breturn (?!;)/, 'return !'],
];

const sourceFiles = async (project: Project, tree: string) => (await git(tree, ['ls-files', '-z', ...project.sources])).split('\0').filter((f) => f.endsWith('.js'));

interface Mutation {
  file: string;
  line: number;
  before: string;
  after: string;
}

async function mutations(project: Project, tree: string, count: number): Promise<Mutation[]> {
  const rand = random(40);
  const sources = await sourceFiles(project, tree);
  const out: Mutation[] = [];
  const seen = new Set<string>();
  for (let tries = 0; out.length < count && tries < count * 200; tries++) {
    const file = sources[Math.floor(rand() * sources.length)]!;
    const lines = (await readFile(path.join(tree, file), 'utf8')).split('\n');
    const line = Math.floor(rand() * lines.length);
    const text = lines[line]!;
    if (/^\s*(\/\/|\*|\/\*)/.test(text) || seen.has(`${file}:${line}`)) continue;
    const op = OPERATORS.find(([re]) => re.test(text));
    if (!op) continue;
    seen.add(`${file}:${line}`);
    out.push({ file, line, before: text, after: text.replace(op[0], op[1]) });
  }
  return out;
}

export async function affectedFigures(_cluster: Cluster, log: (line: string) => void): Promise<Row[]> {
  const asked = (process.env.SLUICE_BENCH_AFFECTED_PROJECTS ?? PROJECTS.map((p) => p.key).join(',')).split(',').map((k) => k.trim());
  const unknown = asked.filter((k) => !PROJECTS.some((p) => p.key === k));
  if (unknown.length > 0) throw new Error(`SLUICE_BENCH_AFFECTED_PROJECTS: no project ${unknown.join(', ')}; choose from ${PROJECTS.map((p) => p.key).join(', ')}`);
  const projects = PROJECTS.filter((p) => asked.includes(p.key));
  for (const p of projects) if (!existsSync(p.source)) throw new Error(`no copy of ${p.name} at ${p.source}: fetch ${p.fetch}`);
  const rows: Row[] = [];
  for (const project of projects) rows.push(...(await projectFigures(project, log)));
  return rows;
}

async function projectFigures(project: Project, log: (line: string) => void): Promise<Row[]> {
  const work = await mkdtemp(path.join(os.tmpdir(), 'sluice-bench-affected-'));
  const tree = path.join(work, project.key);
  const traces = path.join(work, 'traces');
  const say = (line: string) => log(`affected, ${project.key}: ${line}`);
  try {
    execFileSync('git', ['clone', '--quiet', '--no-hardlinks', project.source, tree]);
    execFileSync('mkdir', ['-p', traces]);
    const head = (await git(tree, ['rev-parse', 'HEAD'])).trim();
    say(`installing its dependencies (npm ${project.install.join(' ')})`);
    execFileSync('npm', [...project.install, '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: tree, stdio: 'ignore' });
    // The installed tree must not count as a change (git ignores node_modules).
    const dirty = (await git(tree, ['status', '--porcelain'])).trim();
    if (dirty !== '') throw new Error(`${project.name}: installing changed tracked files:\n${dirty}`);

    // The newest commit: every file untraced (the durations), then traced (its map).
    const headFiles = await project.testFiles(tree);
    let started = performance.now();
    const plain = await runAll(project, tree, headFiles, null);
    const plainWallMs = performance.now() - started;
    const failingAtHead = [...plain].filter(([, r]) => !r.passed).map(([f]) => f);
    if (failingAtHead.length > 0) throw new Error(`${project.name} fails at ${head.slice(0, 12)} before any change: ${failingAtHead.join(', ')}`);
    const durations = new Map([...plain].map(([f, r]) => [f, r.ms]));
    const fullMs = sum([...durations.values()]);
    started = performance.now();
    const headMap = mapOf(head, await runAll(project, tree, headFiles, traces));
    const mapWallMs = performance.now() - started;
    say(`${headFiles.length} test files, ${headMap.files.size} mapped at ${head.slice(0, 12)}; every file takes ${(fullMs / 1000).toFixed(1)} s one after another`);

    // A change to each source file alone: how many test files it would run (the map's fan-out).
    const sources = await sourceFiles(project, tree);
    const fanOut = sources.map((file) => {
      const selection = selectAffected({ testFiles: headFiles, changed: [file], addedOrRemoved: [], map: headMap });
      return selection.full ? headFiles.length : selection.run.size;
    });

    // Mutations at the newest commit.
    const muts = await mutations(project, tree, MUTATIONS);
    const mutationRows: Array<{ killed: boolean; missed: string[]; ran: number; selectedMs: number; allMs: number }> = [];
    for (const [i, m] of muts.entries()) {
      const file = path.join(tree, m.file);
      const original = await readFile(file, 'utf8');
      const lines = original.split('\n');
      lines[m.line] = m.after;
      await writeFile(file, lines.join('\n'));
      try {
        const runs = await runAll(project, tree, headFiles, null);
        const failing = [...runs].filter(([, r]) => !r.passed).map(([f]) => f);
        const selection = selectAffected({ testFiles: headFiles, changed: [m.file], addedOrRemoved: [], map: headMap });
        const selected = selection.full ? new Set(headFiles) : new Set(selection.run.keys());
        const missed = failing.filter((f) => !selected.has(f));
        mutationRows.push({
          killed: failing.length > 0,
          missed,
          ran: selected.size,
          selectedMs: sum([...selected].map((f) => runs.get(f)!.ms)),
          allMs: sum([...runs.values()].map((r) => r.ms)),
        });
        if (missed.length > 0) say(`MISS ${m.file}:${m.line + 1} ${JSON.stringify(m.after.trim())}: ${missed.join(', ')} failed and were not selected`);
        if ((i + 1) % 10 === 0) say(`${i + 1}/${muts.length} mutations`);
      } finally {
        await writeFile(file, original);
      }
    }

    // The replay, oldest of the window first. The default branch's builds record a map where
    // Sluice's would (selection.ts, db/dependencyMaps.ts): at the window's first commit, every
    // MAP_EVERY commits since the last map, and at once where what changed since the last map
    // sends every pull request to a full run (a manifest, a lock file). A map is traced only
    // when a later commit is judged by it: one whose own change runs everything never looks.
    const commits = (await git(tree, ['rev-list', '--first-parent', '-n', String(COMMITS), head])).trim().split('\n').reverse();
    const replay: Array<{ full: string | null; ran: number; total: number; ms: number; ownRan?: number }> = [];
    const traced = new Map<number, DependencyMap>();
    const mapAt = async (k: number, back: string): Promise<DependencyMap> => {
      const known = traced.get(k);
      if (known) return known;
      await git(tree, ['checkout', '--quiet', '--force', commits[k]!]);
      const map = mapOf(commits[k]!, await runAll(project, tree, await project.testFiles(tree), traces));
      await git(tree, ['checkout', '--quiet', '--force', back]);
      traced.set(k, map);
      return map;
    };
    const cannotJudge = (changed: readonly string[]) => changed.some((f) => needsFullRun(f, []) !== null);
    let point = 0;
    let points = 1;
    for (const [i, commit] of commits.entries()) {
      if (i === 0) continue;
      await git(tree, ['checkout', '--quiet', '--force', commit]);
      const files = await project.testFiles(tree);
      const changes = await changedSince(tree, commits[point]!);
      // A change the map cannot judge runs everything whatever the map holds: it is not traced for it.
      const map = cannotJudge(changes.changed) ? { commit: commits[point]!, files: new Map() } : await mapAt(point, commit);
      const selection = selectAffected({ testFiles: files, ...changes, map });
      const ran = selection.full ? files : [...selection.run.keys()];
      // Durations of the newest commit's run; a file it does not have counts as its median file.
      const middle = median([...durations.values()]);
      // Beside it, the same map judging the commit's own change only (from its parent, the merge base):
      // what judging from the map's commit costs, to see what the default branch changed since.
      const own = selectAffected({ testFiles: files, ...(await changedSince(tree, commits[i - 1]!)), map });
      replay.push({
        full: selection.full ? selection.reason : null,
        ran: ran.length,
        total: files.length,
        ms: sum(ran.map((f) => durations.get(f) ?? middle)),
        ...(selection.full ? {} : { ownRan: own.full ? files.length : own.run.size }),
      });
      // Then this commit's own build on the default branch: a map when due or stale.
      if (i - point >= MAP_EVERY || cannotJudge(changes.changed)) {
        point = i;
        points++;
      }
      if ((i + 1) % 20 === 0) say(`replayed ${i + 1}/${commits.length} commits, ${traced.size} maps traced`);
    }

    const killed = mutationRows.filter((r) => r.killed);
    const misses = killed.filter((r) => r.missed.length > 0).length;
    const share = (r: { ran: number; total: number }) => (100 * r.ran) / r.total;
    const judged = replay.filter((r) => r.full === null);
    const reasons = new Map<string, number>();
    for (const r of replay) if (r.full !== null) {
      const why = r.full.replace(/ changed \(.*\)$/, ' changed');
      reasons.set(why, (reasons.get(why) ?? 0) + 1);
    }
    const commonFull = [...reasons].sort((a, b) => b[1] - a[1]).slice(0, 3).map(([why, n]) => `${n}: ${why}`).join('; ') + (reasons.size > 3 ? '; …' : '');
    const headTotal = headFiles.length;
    const rows: Row[] = [
      {
        name: `Mapping run: every file alone under strace, ${PARALLEL} at a time`,
        value: mapWallMs / 1000,
        unit: 's',
        baseline: { name: 'the same files untraced', value: plainWallMs / 1000 },
        note: `${headMap.files.size} of ${headFiles.length} files mapped; ${(mapWallMs / plainWallMs).toFixed(1)} ×`,
      },
      {
        name: `Mutations: failing mutants that selection would have passed (${killed.length} of ${mutationRows.length} failed the full run)`,
        value: misses,
        unit: '',
        baseline: { name: 'the full run', value: 0 },
        target: { text: '= 0', met: misses === 0 },
      },
      {
        name: 'Mutations: test files run with selection, median',
        value: median(mutationRows.map((r) => (100 * r.ran) / headTotal)),
        unit: '%',
        baseline: { name: `all ${headTotal} files`, value: 100 },
        target: { text: '≤ 25 %', met: median(mutationRows.map((r) => (100 * r.ran) / headTotal)) <= 25 },
      },
      {
        name: `A change to one source file: test files it runs, median over the ${sources.length} files`,
        value: median(fanOut.map((n) => (100 * n) / headTotal)),
        unit: '%',
        baseline: { name: `all ${headTotal} files`, value: 100 },
        note: `from ${Math.min(...fanOut)} to ${Math.max(...fanOut)} files`,
      },
      {
        name: 'Mutations: test time with selection, median (files’ own durations, one after another)',
        value: median(mutationRows.map((r) => r.selectedMs / 1000)),
        unit: 's',
        baseline: { name: 'every file', value: median(mutationRows.map((r) => r.allMs / 1000)) },
      },
      {
        name: `Replay of ${replay.length} commits: test files run with selection, median`,
        value: median(replay.map(share)),
        unit: '%',
        baseline: { name: 'every file', value: 100 },
        note: `${replay.length - judged.length} of ${replay.length} ran everything (${commonFull}); ${points} maps recorded, ${traced.size} of them traced (those a later commit was judged by)`,
      },
      {
        name: `Replay: test files run, median of the ${judged.length} commits the map could judge`,
        value: median(judged.map(share)),
        unit: '%',
        baseline: { name: 'every file', value: 100 },
      },
      {
        name: `Replay: the same ${judged.length} commits, each judged by its own change only (from its parent), median`,
        value: median(judged.map((r) => (100 * r.ownRan!) / r.total)),
        unit: '%',
        baseline: { name: 'from the map’s commit, as Sluice judges', value: median(judged.map(share)) },
        note: 'not Sluice’s rule: what the default branch changed since the map can change what its tests read',
      },
      {
        name: 'Replay: test time with selection, mean per commit (durations at the newest commit)',
        value: sum(replay.map((r) => r.ms)) / replay.length / 1000,
        unit: 's',
        baseline: { name: 'every file', value: fullMs / 1000 },
      },
    ];
    const short = project.name.slice(project.name.indexOf('/') + 1);
    return rows.map((r) => ({ ...r, name: `${short}: ${r.name}` }));
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
