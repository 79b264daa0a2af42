/**
 * Real test suites through Sluice beside the framework alone (issue 22), in one run on this
 * machine: Sluice's own unit tests with jest (Sluice building Sluice), expressjs/express's
 * mocha suite when a copy of it is here (SLUICE_BENCH_EXPRESS: a git repository; by default the
 * mirror the development machines fetch to, /work/.mirror/expressjs+express/repo), and
 * nodejs/nodejs.org's `@node-core/rehype-shiki` as published on the npm registry, on `node --test`
 * in the Node.js 22 test image (issue 49's third project).
 *
 * For each suite, on one checkout of the same commit with its dependencies installed:
 * - the framework alone at its best on these cores: its own parallel runner with as many
 *   workers as Sluice gets, or one process, whichever is faster, each timed before Sluice's
 *   builds and again after them, the faster kept;
 * - one process per file, as Sluice ran files before batches;
 * - Sluice (the cluster: API, worker, 4 runner processes), `workers: 2` and a `{files}` command:
 *   a cold build (which installs, saves the cache and records the files' durations), then three
 *   warm ones, the best kept, as the framework alone is timed twice and the faster kept: the
 *   shortest test span (`exec` → `post_build`) and the shortest whole time (trigger → `stop` at
 *   the receiver) are the figures, with the CPU Sluice's own processes used during the span
 *   (bench/cpu.ts): on two cores the tests lose what those use. The later warm builds plan from
 *   a warm build's durations, as every build does once a suite has built a few times.
 * - a pushed change that breaks one test file (issue 49): trigger → `first-fail` at the receiver,
 *   beside that file's own run alone;
 * - where the warm build's time went (issue 49): each step of its timeline (the time between two
 *   timing keys, as the build page draws it), from the trigger's POST to `stop` at the receiver,
 *   with its share of the whole; and the whole beyond the framework alone, the time a person
 *   waits for Sluice rather than for the tests.
 */
import { exec, execFileSync, execSync } from 'node:child_process';
import { promisify } from 'node:util';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import { stepOf, TIMING_ORDER } from '../src/api/web/timeline';
import type { Cluster, ClusterRepo } from '../test/support/cluster';
import { pushCommit } from '../test/support/gitRepo';
import { pushImage, startOpenRegistry, testImageLayers, type TestRegistry } from '../test/support/registry';
import { describeCpu, recordCpu } from './cpu';
import type { Row } from './table';

const WORKERS = 2;
/** Warm builds after the cold one: the first may land on runners that have not restored the cache yet. */
const WARM_BUILDS = 3;
const run = promisify(exec);
const REPO_ROOT = path.resolve(__dirname, '..');
export const EXPRESS = process.env.SLUICE_BENCH_EXPRESS ?? '/work/.mirror/expressjs+express/repo';

export interface RealSuite {
  name: string;
  /** A git repository to clone (bare or not), or an npm package whose published files become one. */
  source: string | { npm: string };
  /**
   * The suite needs Node.js 22 (the runners have 20): Sluice builds it in the test image (Debian
   * and Node.js 22, scripts/test-image.sh) from a registry on loopback, and the framework alone
   * runs that image's `node` on this machine.
   */
  node22?: boolean;
  install: string;
  /** The files, as a shell glob from the checkout's root, for one process per file. */
  files: string;
  /** The framework's own parallel runner with WORKERS workers, and one process for all. */
  parallel: string;
  single: string;
  /** One file (appended). */
  perFile: string;
  sluice: { test_pattern: string; test_command: string; cache?: { key_paths: string[]; save_paths: string[] } };
  /** A change that breaks one test file: the file, and what is appended to it (the first failure first, issue 49). */
  breaks: { file: string; append: string };
}

export const SUITES: RealSuite[] = [
  {
    name: 'Sluice’s unit tests (jest)',
    source: REPO_ROOT,
    install: 'npm ci --no-audit --no-fund',
    files: 'test/unit/*.test.ts test/unit/*/*.test.ts',
    parallel: `npx jest --ci --selectProjects unit --maxWorkers=${WORKERS}`,
    single: 'npx jest --ci --selectProjects unit -i',
    perFile: 'npx jest --ci --selectProjects unit -i',
    breaks: { file: 'test/unit/counts.test.ts', append: "\nit('broken by the bench', () => {\n  throw new Error('broken');\n});\n" },
    sluice: {
      test_pattern: 'test/unit/**/*.test.ts',
      test_command:
        // jest-junit's report names each file, and its suite time holds the file's loading. jest's
        // transform cache in the worker's home, kept by the dependency cache: the checkout is at
        // the same path in every build's sandbox, so its entries are found again.
        'JEST_JUNIT_OUTPUT_DIR=$SLUICE_REPORT_DIR JEST_JUNIT_ADD_FILE_ATTRIBUTE=true npx jest --ci --selectProjects unit -i --cacheDirectory=$HOME/.cache/jest --reporters=default --reporters=jest-junit -- {files}',
      cache: { key_paths: ['package-lock.json'], save_paths: ['node_modules', '~/.npm', '~/.cache/jest'] },
    },
  },
  {
    name: 'expressjs/express (mocha)',
    source: EXPRESS,
    install: 'npm install --no-audit --no-fund',
    files: 'test/*.js test/acceptance/*.js',
    parallel: `node_modules/.bin/mocha --require test/support/env --check-leaks --parallel --jobs ${WORKERS} test/ test/acceptance/`,
    single: 'node_modules/.bin/mocha --require test/support/env --check-leaks test/ test/acceptance/',
    perFile: 'node_modules/.bin/mocha --require test/support/env --check-leaks',
    breaks: { file: 'test/res.send.js', append: "\ndescribe('broken by the bench', function () {\n  it('fails', function () {\n    throw new Error('broken');\n  });\n});\n" },
    sluice: {
      test_pattern: 'test/{*,acceptance/*}.js',
      test_command: 'node_modules/.bin/mocha --require test/support/env --check-leaks --reporter xunit --reporter-option output=$SLUICE_REPORT_DIR/report.xml {files}',
    },
  },
  {
    // nodejs/nodejs.org's syntax highlighter as published (its tests mock modules, which needs
    // Node.js 22): the suite is small, so the figure is almost all of what surrounds the tests.
    name: '@node-core/rehype-shiki (node --test, Node.js 22 image)',
    source: { npm: '@node-core/rehype-shiki@1.5.0' },
    node22: true,
    install: 'npm install --no-audit --no-fund',
    files: 'src/__tests__/*.test.mjs',
    parallel: `node --experimental-test-module-mocks --test --test-concurrency=${WORKERS} src/__tests__/*.test.mjs`,
    single: 'node --experimental-test-module-mocks --test --test-concurrency=1 src/__tests__/*.test.mjs',
    perFile: 'node --experimental-test-module-mocks --test',
    breaks: { file: 'src/__tests__/plugin.test.mjs', append: "\nimport { it as brokenByTheBench } from 'node:test';\nbrokenByTheBench('broken by the bench', () => {\n  throw new Error('broken');\n});\n" },
    sluice: {
      test_pattern: 'src/__tests__/*.test.mjs',
      test_command:
        'node --experimental-test-module-mocks --test --test-reporter=spec --test-reporter-destination=stdout --test-reporter=junit --test-reporter-destination=$SLUICE_REPORT_DIR/report.xml {files}',
    },
  },
];

export async function suiteFigures(c: Cluster, log: (line: string) => void): Promise<Row[]> {
  const rows: Row[] = [];
  // SLUICE_BENCH_SUITE=express: only the suites whose name holds it.
  const only = process.env.SLUICE_BENCH_SUITE;
  for (const suite of SUITES) {
    if (only && !suite.name.includes(only)) continue;
    if (typeof suite.source === 'string' && !existsSync(suite.source)) {
      log(`${suite.name}: skipped, no copy at ${suite.source} (SLUICE_BENCH_EXPRESS)`);
      continue;
    }
    rows.push(...(await measure(c, suite, log)));
  }
  return rows;
}

async function measure(c: Cluster, suite: RealSuite, log: (line: string) => void): Promise<Row[]> {
  const work = await mkdtemp(path.join(c.tmp, 'suite-'));
  let registry: TestRegistry | null = null;
  try {
    // The commit both sides build, as a bare repository the cluster's SSH server serves.
    const bare = path.join(work, 'repo.git');
    const source = typeof suite.source === 'string' ? suite.source : await npmPackageRepo(suite.source.npm, work);
    execFileSync('git', ['clone', '--bare', '--quiet', source, bare]);
    const checkout = path.join(work, 'checkout');
    execFileSync('git', ['clone', '--quiet', bare, checkout]);
    let image: string | undefined;
    let env: NodeJS.ProcessEnv = { ...process.env, CI: 'true' };
    if (suite.node22) {
      log(`${suite.name}: pushing the Node.js 22 image to a registry on loopback`);
      registry = await startOpenRegistry();
      const layers = await testImageLayers();
      image = (await pushImage(registry.host, 'bench/node:22', { layers: [layers.debian, layers.node], env: { NODE_VERSION: '22.12.0' } })).ref;
      env = { ...env, PATH: `${await nodeOfImage(layers.node, work)}:${process.env.PATH ?? ''}` };
    }
    log(`${suite.name}: installing its dependencies for the framework alone`);
    execSync(suite.install, { cwd: checkout, env, stdio: 'ignore' });

    // Not execSync: the event loop must go on (the cluster's connections close while a suite runs).
    const time = async (command: string) => {
      const t = performance.now();
      await run(command, { cwd: checkout, env, maxBuffer: 256 * 1024 * 1024 }).catch(() => {
        // A failing suite is still timed; Sluice's runs of it are compared as they are.
      });
      return (performance.now() - t) / 1000;
    };
    log(`${suite.name}: the framework alone, its parallel runner and one process`);
    // Timed again after Sluice's builds, the best of the two kept: these machines' speed drifts
    // by half within minutes, and the baseline is the framework at its best.
    let parallel = await time(suite.parallel);
    let single = await time(suite.single);
    const files = execSync(`ls ${suite.files}`, { cwd: checkout, env, encoding: 'utf8' }).trim().split('\n');
    log(`${suite.name}: one process per file (${files.length} files)`);
    let perFile = 0;
    for (const f of files) perFile += await time(`${suite.perFile} ${f}`);

    const branch = execFileSync('git', ['symbolic-ref', '--short', 'HEAD'], { cwd: bare, encoding: 'utf8' }).trim();
    const repo = await c.addRepo(bare, { branch, workers: WORKERS, ...suite.sluice, ...(image ? { image } : {}) }).catch((err: unknown) => {
      throw new Error(`the API did not take the repository (its output ends: ${c.api.output().slice(-3000)})`, { cause: err });
    });
    log(`${suite.name}: Sluice, a cold build (install, cache, durations)`);
    const cold = await build(c, repo, branch);
    log(`${suite.name}: the cold build's batches ${cold.lanes} (${cold.estimates})`);
    log(`${suite.name}: Sluice, ${WARM_BUILDS} warm builds`);
    const warmBuilds: Awaited<ReturnType<typeof build>>[] = [];
    for (let i = 0; i < WARM_BUILDS; i++) warmBuilds.push(await build(c, repo, branch));
    // Each figure the best of the warm builds, as the framework alone's is the best of its runs.
    const warm = warmBuilds.reduce((a, b) => (b.span < a.span ? b : a));
    const quick = warmBuilds.reduce((a, b) => (b.whole < a.whole ? b : a));
    const others = (pick: (b: (typeof warmBuilds)[number]) => number, best: (typeof warmBuilds)[number]) =>
      warmBuilds.filter((b) => b !== best).map((b) => `${pick(b).toFixed(1)} s`).join(', ');
    log(`${suite.name}: the framework alone again`);
    parallel = Math.min(parallel, await time(suite.parallel));
    single = Math.min(single, await time(suite.single));

    // A change that breaks one file, pushed: how soon `first-fail` comes, beside that file's own run.
    log(`${suite.name}: a change that breaks ${suite.breaks.file}`);
    const broken = readFileSync(path.join(checkout, suite.breaks.file), 'utf8') + suite.breaks.append;
    await pushCommit(bare, { [suite.breaks.file]: { content: broken } }, 'break one test file', branch);
    writeFileSync(path.join(checkout, suite.breaks.file), broken);
    const ownRun = await time(`${suite.perFile} ${suite.breaks.file}`);
    const failing = await firstFailure(c, repo, branch);
    const alone = Math.min(parallel, single);
    log(`${suite.name}: alone ${alone.toFixed(1)} s (parallel ${parallel.toFixed(1)}, one process ${single.toFixed(1)}), per file ${perFile.toFixed(1)} s; Sluice tests ${warm.span.toFixed(1)} s, whole ${quick.whole.toFixed(1)} s (cold ${cold.whole.toFixed(1)} s); warm batches ${warm.lanes} (${warm.estimates}); during the warm test span Sluice used ${warm.sluiceCpu}; every warm build: ${warmBuilds.map((b) => `tests ${b.span.toFixed(1)} s, whole ${b.whole.toFixed(1)} s (${b.estimates}; ${b.hooks || 'no step over 0.2 s'}; ${b.steps})`).join(' | ')}`);
    const best = parallel <= single ? `its parallel runner, ${WORKERS} workers` : 'one process';
    return [
      {
        name: `${suite.name}: Sluice's test span, ${WORKERS} workers (exec → post_build)`,
        value: warm.span,
        unit: 's',
        baseline: { name: `the framework alone at its best: ${best}`, value: alone },
        target: { text: '≤ 1.0 × alone', met: warm.span <= alone },
        note: `${(warm.span / alone).toFixed(2)}× alone (the fastest of ${WARM_BUILDS} warm builds; the others ${others((b) => b.span, warm)}); ${(warm.span / perFile).toFixed(2)}× one process per file (${perFile.toFixed(1)} s); ${warm.status}; batches (files/time) ${warm.lanes}; during the span Sluice's processes used ${warm.sluiceCpu}`,
      },
      {
        name: `${suite.name}: a change that breaks one file: trigger → first-fail`,
        value: failing.firstFail,
        unit: 's',
        baseline: { name: `that file alone (${suite.breaks.file})`, value: ownRun },
        target: { text: '≤ its own run + 1.5 s', met: failing.firstFail <= ownRun + 1.5 },
        note: `ran first: ${failing.ranFirst}; the whole build ${failing.whole.toFixed(1)} s (${failing.status})`,
      },
      {
        name: `${suite.name}: the whole warm build (trigger → stop)`,
        value: quick.whole,
        unit: 's',
        baseline: { name: `the framework alone at its best: ${best}`, value: alone },
        target: { text: '≤ alone + 2 s', met: quick.whole <= alone + 2 },
        note: `+${(quick.whole - alone).toFixed(1)} s beyond the framework alone (the fastest of ${WARM_BUILDS} warm builds; the others ${others((b) => b.whole, quick)}); where it went: ${quick.steps}; cold build ${cold.whole.toFixed(1)} s`,
      },
    ];
  } finally {
    await registry?.stop();
    await rm(work, { recursive: true, force: true });
  }
}

/** A git repository of one commit holding an npm package's published files (`npm pack`). */
async function npmPackageRepo(spec: string, work: string): Promise<string> {
  const dir = path.join(work, 'package-source');
  await mkdir(dir, { recursive: true });
  const tarball = execFileSync('npm', ['pack', spec, '--silent'], { cwd: work, encoding: 'utf8', timeout: 120_000 }).trim().split('\n').at(-1)!;
  execFileSync('tar', ['xzf', path.join(work, tarball), '-C', dir, '--strip-components=1']);
  const git = (...args: string[]) => execFileSync('git', ['-c', 'user.name=Bench', '-c', 'user.email=bench@example.test', ...args], { cwd: dir });
  git('init', '--quiet', '--initial-branch=main');
  git('add', '-A');
  git('commit', '--quiet', '-m', `${spec} as published`);
  return dir;
}

/** The image's Node.js on this machine (its layer's /usr/local, unpacked): the directory of its `node` and `npm`. */
async function nodeOfImage(layer: string, work: string): Promise<string> {
  const dir = path.join(work, 'node22');
  await mkdir(dir, { recursive: true });
  execFileSync('tar', ['xf', layer, '-C', dir, 'usr/local/bin', 'usr/local/lib']);
  return path.join(dir, 'usr', 'local', 'bin');
}

async function build(
  c: Cluster,
  repo: ClusterRepo,
  branch: string,
): Promise<{ span: number; whole: number; status: string; lanes: string; sluiceCpu: string; estimates: string; hooks: string; steps: string }> {
  const sent = Date.now();
  const cpu = recordCpu(c);
  const session = await c.build(repo, { branch, force: true });
  const events = await c.eventsOf(session, 1_800_000).finally(() => cpu.stop());
  const stop = events.find((e) => e.event === 'stop')!;
  const arrived = c.receiver.requests.find((r) => (r.json as { xid?: string })?.xid === stop.xid)!;
  const t = stop.timing as Record<string, number>;
  const view = await c.admin<{
    reason: string | null;
    batches: { worker: number; files: number; duration_ms: number | null }[];
    hooks: { name: string; worker: number | null; duration_ms: number | null; detail: string | null }[];
  }>('GET', `/api/v1/sessions/${session}`);
  const reason = stop.status === 'passed' ? '' : `: ${view.reason}`;
  return {
    estimates: await batchEstimates(c, session, t.exec!),
    // The workers' steps that took a while (a lane waits at the rendezvous for the slower one).
    hooks: view.hooks
      .filter((h) => (h.duration_ms ?? 0) >= 200)
      .map((h) => `worker ${h.worker ?? '-'} ${h.name} ${((h.duration_ms ?? 0) / 1000).toFixed(2)} s${h.detail ? ` (${h.detail})` : ''}`)
      .join('; '),
    span: t.post_build! - t.exec!,
    whole: (arrived.at - sent) / 1000,
    steps: stepShares(t, sent, arrived.at),
    status: `${stop.status} (${JSON.stringify(stop.counts)})${reason}`,
    lanes: laneBatches(view.batches),
    sluiceCpu: describeCpu(cpu.between(t.exec! * 1000, t.post_build! * 1000)),
  };
}

/**
 * Each batch as planned and as it ran: when it started after `exec`, its files' estimates (from
 * the history) beside its time. Where the lanes finish apart, this says whether the plan or the
 * run was off.
 */
async function batchEstimates(c: Cluster, session: number, execAt: number): Promise<string> {
  const { rows } = await c.db.pool.query<{ lane: number; files: number; duration_ms: number | null; estimate_ms: string | null; started: number }>(
    `SELECT b.lane, b.files, b.duration_ms, sum(q.estimate_ms) AS estimate_ms, extract(epoch FROM b.started_at) AS started
       FROM test_batches b
       LEFT JOIN test_results tr ON tr.batch_id = b.id
       LEFT JOIN test_queue q ON q.session_id = tr.session_id AND q.path = tr.path
      WHERE b.session_id = $1 GROUP BY b.id ORDER BY b.id`,
    [session],
  );
  const s = (ms: number | string | null) => (ms === null ? '?' : (Number(ms) / 1000).toFixed(1));
  return rows.map((r) => `lane ${r.lane} +${(Number(r.started) - execAt).toFixed(1)} s: ${r.files} files, estimated ${s(r.estimate_ms)} s, ran ${s(r.duration_ms)} s`).join('; ');
}

/** A build of the branch's new head: when `first-fail` reached the receiver, and what ran first. */
async function firstFailure(c: Cluster, repo: ClusterRepo, branch: string): Promise<{ firstFail: number; whole: number; status: string; ranFirst: string }> {
  const sent = Date.now();
  const session = await c.build(repo, { branch });
  const events = await c.eventsOf(session, 1_800_000);
  const at = (name: string) => {
    const e = events.find((x) => x.event === name);
    const arrived = e && c.receiver.requests.find((r) => (r.json as { xid?: string })?.xid === e.xid);
    return arrived ? (arrived.at - sent) / 1000 : NaN;
  };
  const view = await c.admin<{ tests: { path: string; ran_first: string | null }[] }>('GET', `/api/v1/sessions/${session}`);
  const first = view.tests.filter((t) => t.ran_first !== null).map((t) => `${t.path} (${t.ran_first})`);
  return { firstFail: at('first-fail'), whole: at('stop'), status: String(events.find((e) => e.event === 'stop')?.status), ranFirst: first.join('; ') || 'nothing' };
}

/**
 * Where a build's time went, trigger to `stop`: each step of its timeline (the time since the key
 * before; keys of one instant in the spec's order), the largest first, with its share of the whole.
 */
export function stepShares(timing: Record<string, number>, sentMs: number, stopArrivedMs: number): string {
  const rank = (k: string) => (TIMING_ORDER.includes(k) ? TIMING_ORDER.indexOf(k) : TIMING_ORDER.length);
  const keys = Object.entries(timing)
    .map(([key, at]) => ({ key, at: at * 1000 }))
    .sort((a, b) => a.at - b.at || rank(a.key) - rank(b.key));
  const whole = stopArrivedMs - sentMs;
  const steps: Array<[string, number]> = [];
  let from = sentMs;
  for (const { key, at } of keys) {
    steps.push([key === 'ci_received_at' ? 'trigger accepted' : stepOf(key), at - from]);
    from = Math.max(from, at);
  }
  steps.push(['stop sent and received', stopArrivedMs - from]);
  return steps
    .filter(([, ms]) => ms >= 1)
    .sort((a, b) => b[1] - a[1])
    .map(([name, ms]) => `${name} ${(ms / 1000).toFixed(2)} s (${Math.round((ms / whole) * 100)} %)`)
    .join(', ');
}

/** How the lanes split the files: each worker's batches, `files/seconds`, in the order they ran. */
function laneBatches(batches: { worker: number; files: number; duration_ms: number | null }[]): string {
  const byWorker = new Map<number, string[]>();
  for (const b of batches) byWorker.set(b.worker, [...(byWorker.get(b.worker) ?? []), `${b.files}/${((b.duration_ms ?? 0) / 1000).toFixed(1)}s`]);
  return [...byWorker].sort(([a], [b]) => a - b).map(([w, list]) => `worker ${w}: ${list.join(' ')}`).join('; ');
}
