/**
 * What keeping every test case costs (issue 37), in one run, each figure beside its baseline:
 * - storing cases: reading a report of 100,000 cases (500 files, 200 each) and storing them as
 *   a run does (parseJUnit, recordRunCases: one statement), best of 3, beside the test span
 *   (exec → post_build) of a real build of those 500 files whose batch leaves that report;
 *   the same build whose report Sluice does not read is measured too, in turns, best of 3;
 * - the build page of that build (its first page of cases, failing first), signed in, beside
 *   the page of the build without cases; median of 20 loads each.
 */
import type { Config } from '../src/config';
import type { Cluster, ClusterRepo } from '../test/support/cluster';
import type { RepoFiles } from '../test/support/gitRepo';
import { addPerson } from '../test/support/people';
import { script } from '../test/support/world';
import { parseJUnit } from '../src/core/junit';
import { recordRunCases, type RunCase } from '../src/db/testCases';
import type { Row } from './table';

const FILES = 500;
const CASES_PER_FILE = 200;
const CASES = FILES * CASES_PER_FILE;
const ROUNDS = 3;
const LOADS = 20;

/**
 * Runs each file given: each prints its cases (200 lines of <testcase>), appended to one report
 * in SLUICE_REPORT_DIR; with NO_REPORT, to a file Sluice never reads. Both sides write the same
 * bytes the same way, and their cases' times are tiny, so both run their 500 files as one batch
 * (the reported times size the next build's batches: equal work, equal batches).
 */
const RUNNER = script(`dir="$SLUICE_REPORT_DIR"; [ "$NO_REPORT" = 1 ] && dir="$HOME/unread" && mkdir -p "$dir"
echo '<testsuite name="bench">' > "$dir/report.xml"
for f in "$@"; do sh "$f" >> "$dir/report.xml"; done
echo '</testsuite>' >> "$dir/report.xml"`);

export async function caseFigures(c: Cluster, log: (line: string) => void): Promise<Row[]> {
  const testFile = (i: number) =>
    script(`i=0; while [ $i -lt ${CASES_PER_FILE} ]; do printf '<testcase classname="file ${i}" name="case %s" time="0.00001" file="test/t${String(i).padStart(3, '0')}.sh"/>' $i; i=$((i+1)); done`);
  const files: RepoFiles = { 'run.sh': RUNNER, ...Object.fromEntries(Array.from({ length: FILES }, (_, i) => [`test/t${String(i).padStart(3, '0')}.sh`, testFile(i)])) };
  const suite = { branch: 'master', test_pattern: 'test/*.sh', test_command: './run.sh {files}', workers: 1 };
  const withCases = await c.makeRepo(files, suite);
  const without = await c.makeRepo(files, { ...suite, test_command: 'NO_REPORT=1 ./run.sh {files}' });

  log('cases: a first build of each (the durations that size the batches)');
  await build(c, withCases);
  await build(c, without);
  let span = { cases: Infinity, none: Infinity };
  let sessions = { cases: 0, none: 0 };
  for (let round = 1; round <= ROUNDS; round++) {
    log(`cases: ${CASES.toLocaleString('en')} cases and none, round ${round} of ${ROUNDS}`);
    const a = await build(c, withCases);
    const b = await build(c, without);
    log(`cases: test spans ${a.span.toFixed(2)} s with cases, ${b.span.toFixed(2)} s without`);
    span = { cases: Math.min(span.cases, a.span), none: Math.min(span.none, b.span) };
    sessions = { cases: a.session, none: b.session };
  }
  const stored = (await c.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM test_cases WHERE session_id = $1', [sessions.cases])).rows[0]!.n;
  if (stored !== CASES) throw new Error(`session ${sessions.cases} kept ${stored} cases, not ${CASES}`);

  log('cases: reading and storing 100,000 cases as one run does');
  // Into the build that has them: each round replaces them with the same (its page is measured after).
  const store = await storeCost(c, sessions.cases);

  log('cases: the build pages');
  const admin = await addPerson(c.db.pool, { adminToken: c.env.SLUICE_ADMIN_TOKEN! } as Config, { name: 'bench', email: 'bench@example.test', installationAdmin: true });
  const page = { cases: await pageLoad(c, sessions.cases, admin.cookie), none: await pageLoad(c, sessions.none, admin.cookie) };
  return [
    {
      name: `Cases, reading and storing ${CASES.toLocaleString('en')} cases of one run (${FILES} files, ${CASES_PER_FILE} cases a file: parseJUnit, recordRunCases, one statement; best of ${ROUNDS})`,
      value: store,
      unit: 's',
      baseline: { name: 'the test span (exec → post_build) of the build whose batches leave them', value: span.cases },
      note: `${((store * 1e6) / CASES).toFixed(1)} µs a case; the same build leaving no report: ${span.none.toFixed(2)} s (best of ${ROUNDS} each, in turns)`,
    },
    {
      name: `Cases, the build page of that build (signed in, median of ${LOADS})`,
      value: page.cases,
      unit: 'ms',
      baseline: { name: 'the page of the build without cases', value: page.none },
      target: { text: '< 1 s', met: page.cases < 1000 },
    },
  ];
}

/** The best time of reading and storing CASES cases as one run's report, into the session `session` (seconds). */
async function storeCost(c: Cluster, session: number): Promise<number> {
  const files = Array.from({ length: FILES }, (_, i) => `test/t${String(i).padStart(3, '0')}.sh`);
  let xml = '<testsuite name="bench">';
  for (const f of files) for (let j = 0; j < CASES_PER_FILE; j++) xml += `<testcase classname="file ${f}" name="case ${j}" time="0.001" file="${f}"/>`;
  xml += '</testsuite>';
  let best = Infinity;
  for (let round = 1; round <= ROUNDS; round++) {
    const t = performance.now();
    const cases: RunCase[] = parseJUnit(xml, { suites: true, maxCases: CASES }).cases.map((x) => ({
      testFile: x.file ?? null,
      classname: x.classname,
      name: x.name,
      status: x.status,
      time: x.time,
      message: null,
      output: null,
      failureFile: null,
      failureLine: null,
      muted: false,
    }));
    await recordRunCases(c.db.pool, session, 0, `bench-${round}`, files, cases);
    best = Math.min(best, (performance.now() - t) / 1000);
  }
  return best;
}

/** The median time of the build page of `session`, in ms. */
async function pageLoad(c: Cluster, session: number, cookie: string): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < LOADS; i++) {
    const t = performance.now();
    const res = await fetch(`${c.env.SLUICE_BASE_URL}/builds/${session}`, { headers: { cookie } });
    await res.text();
    if (res.status !== 200) throw new Error(`the build page of ${session} answered ${res.status}`);
    times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)]!;
}

/** A forced build that must pass: its session and its test span in seconds. */
async function build(c: Cluster, repo: ClusterRepo): Promise<{ session: number; span: number }> {
  const session = await c.build(repo, { branch: 'master', force: true });
  const stop = (await c.eventsOf(session, 900_000)).find((e) => e.event === 'stop')!;
  if (stop.status !== 'passed') throw new Error(`session ${session} ended ${String(stop.status)}`);
  const timing = stop.timing as Record<string, number>;
  return { session, span: timing.post_build! - timing.exec! };
}
