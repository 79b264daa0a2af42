/**
 * Batches and flaky tests (issue 22), end to end on real parts: a suite whose test command holds
 * `{files}` runs its files in batches, one process each; a batch with one failing file among
 * twenty fails that file only; batches that crash or hang are run again file by file; the second
 * build orders the files longest first from the first one's durations; `retry_failed` turns a
 * file that fails once into a flaky pass.
 *
 * The framework is a small shell runner committed in each repository: it runs each file it is
 * given, notes each process it is in, and writes JUnit XML to $SLUICE_REPORT_DIR naming each
 * case's file, like mocha's xunit reporter.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { script, World } from '../support/world';

let w: World;
beforeAll(async () => {
  // A short time limit, so that a hanging batch and its hanging file are cut off quickly.
  w = await World.start({ testTimeoutMs: 3_000 });
});
afterAll(() => w?.stop());

const RUNNER = script(`echo "process $SLUICE_BATCH_ID $#" >> "$RUNS"
status=0; cases=""
for f in "$@"; do
  if sh "$f"; then r=""; else status=1; r="<failure message=\\"$f failed\\">assertion</failure>"; fi
  cases="$cases<testcase classname=\\"$f\\" name=\\"works\\" time=\\"0.01\\" file=\\"$f\\">$r</testcase>"
done
echo "<testsuite name=\\"tiny\\">$cases</testsuite>" > "$SLUICE_REPORT_DIR/report.xml"
exit $status`);

type View = Awaited<ReturnType<World['session']>> & {
  batches: Array<{ worker: number; files: number; status: string; note: string | null }>;
  tests: Array<{ path: string; status: string; attempts: number; flaky: boolean; batch: number | null }>;
  flaky_files: Array<{ path: string; attempts: number; flaked: number }>;
};
const view = async (session: number) => (await w.session(session)) as View;

async function batchRepo(files: Record<string, string>, suite: Record<string, unknown> = {}) {
  const runs = path.join(w.tmp, `runs-${Object.keys(files).length}-${Date.now()}.log`);
  const repo = await w.makeRepo(
    { 'run.sh': RUNNER, ...Object.fromEntries(Object.entries(files).map(([name, body]) => [`test/${name}`, { content: `${body}\n` }])) },
    { suite: { branch: 'master', test_pattern: 'test/*.sh', test_command: './run.sh {files}', ...suite } },
  );
  return { repo, runs };
}
const processes = async (runs: string) => (await readFile(runs, 'utf8').catch(() => '')).trim().split('\n').filter(Boolean);

it('one failing file among twenty fails alone, pinned by its JUnit file; the others pass in the same process', async () => {
  const files = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`t${String(i).padStart(2, '0')}.sh`, i === 11 ? 'exit 1' : 'true']));
  const { repo, runs } = await batchRepo(files);
  const { session } = await w.build(repo, { env: { RUNS: runs } });
  const stop = (await w.eventsOf(session)).at(-1)!;
  expect(stop).toMatchObject({ status: 'failed', counts: expect.objectContaining({ passed: 19, failed: 1, error: 0 }) });
  const v = await view(session);
  expect(v.tests.filter((t) => t.status !== 'passed').map((t) => t.path)).toEqual(['test/t11.sh']);
  // No history yet: every file counts as 1 s, so one batch of all twenty (a lane's share, at most 20 s); none ran again.
  const batches = v.batches;
  expect(batches.reduce((n, b) => n + b.files, 0)).toBe(20);
  expect(batches.filter((b) => b.status === 'failed').map((b) => b.note)).toEqual([expect.stringMatching(/by their JUnit results$/)]);
  expect((await processes(runs)).length).toBe(batches.length);
});

it.each([
  ['crashes', 'kill -KILL $PPID', /^the batch failed \(killed by signal SIGKILL\): 3 run again one by one$/],
  ['hangs', 'sleep 60', /^the batch failed \(timed out after \d+ ms\): 3 run again one by one$/],
])('a batch that %s is run again file by file: only the guilty file errs', async (_what, body, note) => {
  // Three files never run count 1 s each: one batch.
  const { repo, runs } = await batchRepo({ 'a.sh': 'true', 'guilty.sh': body, 'z.sh': 'true' });
  const { session } = await w.build(repo, { env: { RUNS: runs } });
  await w.eventsOf(session);
  const v = await view(session);
  expect(v.tests.map((t) => [t.path, t.status])).toEqual([
    ['test/a.sh', 'passed'],
    ['test/guilty.sh', 'error'],
    ['test/z.sh', 'passed'],
  ]);
  expect(v.batches.map((b) => [b.files, b.status === 'passed' ? null : b.note])).toEqual([[3, expect.stringMatching(note)]]);
});

it('the second build runs the files longest first, by the durations the first one recorded', async () => {
  const files = { 'a_quick.sh': 'true', 'b_slow.sh': 'sleep 1.5', 'c_quick.sh': 'true', 'd_slower.sh': 'sleep 2.5' };
  const { repo, runs } = await batchRepo(files, { test_command: 'sh' });
  const first = await w.build(repo, { env: { RUNS: runs } });
  await w.eventsOf(first.session);
  const second = await w.build(repo, { force: true, env: { RUNS: runs } });
  expect((await w.eventsOf(second.session)).at(-1)!.status).toBe('passed');
  const { rows } = await w.sluice.pool.query<{ path: string }>('SELECT path FROM test_queue WHERE session_id = $1 ORDER BY position', [second.session]);
  expect(rows.map((r) => r.path).slice(0, 2)).toEqual(['test/d_slower.sh', 'test/b_slow.sh']);
});

it('retry_failed: a file that fails once then passes counts as passed and flaky', async () => {
  const marker = path.join(w.tmp, `flaked-${Date.now()}`);
  const { repo, runs } = await batchRepo({ 'ok.sh': 'true', 'flaky.sh': `[ -e ${marker} ] || { touch ${marker}; exit 1; }` }, { retry_failed: 1 });
  const { session } = await w.build(repo, { env: { RUNS: runs } });
  const stop = (await w.eventsOf(session)).at(-1)!;
  expect(stop).toMatchObject({ status: 'passed', counts: expect.objectContaining({ passed: 2, failed: 0 }) });
  const v = await view(session);
  expect(v.tests.find((t) => t.path === 'test/flaky.sh')).toMatchObject({ status: 'passed', attempts: 2, flaky: true });
  expect(v.flaky_files).toEqual([expect.objectContaining({ path: 'test/flaky.sh', attempts: 2, flaked: 1 })]);
});
