/**
 * Test cases from every run's reports (issue 37), in a lane (steps/tests/lane.ts, batch.ts) on
 * real processes and a real PostgreSQL, without Temporal: a batch's JUnit XML is kept as the
 * build's cases, each with its test file and where its failure is; a retry replaces a file's
 * cases and a case that failed then passed is flaky; secrets are masked; the API's page of
 * cases filters them; a failed file whose output says nothing shows its cases' failures.
 *
 * The "framework" is a shell runner that runs each file it is given: each file prints its own
 * <testcase> elements (a failing one with a stack trace naming its line, as JavaScript prints
 * them), and the runner wraps them in one report in $SLUICE_REPORT_DIR, like jest-junit.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadBuild, sessionCases } from '../../src/app/builds';
import type { Config } from '../../src/config';
import { pgBuildRecords } from '../../src/db/buildRecords';
import { muteTest } from '../../src/db/mutedTests';
import { enqueueTests } from '../../src/db/testQueue';
import { runLane, type LaneDeps, type LaneJob } from '../../src/steps/tests/lane';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { insertPostSession } from '../support/postSession';

let db: TestDatabase;
let tmp: string;
const secretKey = Buffer.alloc(32, 5);
const config = { baseUrl: 'https://ci.example.test' } as Config;

beforeAll(async () => {
  db = await createTestDatabase('sluice_cases');
  tmp = await mkdtemp(join(tmpdir(), 'sluice-cases-'));
});
afterAll(async () => {
  await db?.drop();
  await rm(tmp, { recursive: true, force: true });
});

const RUNNER = `#!/bin/sh
# Runs each file given; each prints its <testcase> elements; one report for the run.
status=0; cases=""
for f in "$@"; do
  out=$(FILE="$f" sh "$f") || status=1
  cases="$cases$out"
done
[ "$NO_REPORT" = 1 ] || echo "<testsuites><testsuite name=\\"run\\">$cases</testsuite></testsuites>" > "$SLUICE_REPORT_DIR/report.xml"
[ "$QUIET" = 1 ] || echo "ran $#"
exit $status
`;

/** A test file: `n` passing cases of suite `suite`, and a failing one at line 3 when `fails`. */
const testFile = (suite: string, n: number, fails: string | false = false) =>
  [
    `for i in $(seq 1 ${n}); do printf '<testcase classname="${suite}" name="works %s" time="0.002" file="%s"/>' "$i" "$FILE"; done`,
    fails
      ? `printf '<testcase classname="${suite}" name="adds up" time="0.004" file="%s"><failure message="${fails}">Error: ${fails}\\n    at Object.toBe (%s/node_modules/expect/build/index.js:315:11)\\n    at Object.&lt;anonymous&gt; (%s/%s:3:17)</failure></testcase>' "$FILE" "$PWD" "$PWD" "$FILE"; exit 1`
      : 'true',
  ].join('\n');

async function session(files: Record<string, string>): Promise<{ sessionId: number; suiteId: number; workdir: string }> {
  const s = await insertPostSession(db.pool, secretKey);
  const workdir = join(tmp, `session-${s.sessionId}`);
  await mkdir(join(workdir, 'test'), { recursive: true });
  await writeFile(join(workdir, 'run.sh'), RUNNER, { mode: 0o755 });
  for (const [name, body] of Object.entries(files)) await writeFile(join(workdir, 'test', name), `${body}\n`);
  await enqueueTests(db.pool, s.sessionId, Object.keys(files).map((name) => ({ path: `test/${name}`, estimateMs: 50 })));
  return { sessionId: s.sessionId, suiteId: s.suiteId, workdir };
}

const deps = (): LaneDeps => ({ records: pgBuildRecords(db.pool, Buffer.alloc(32)), runner: 'host-1', firstFailure: async () => undefined });

function job(s: { sessionId: number; workdir: string }, over: Partial<LaneJob> = {}): LaneJob {
  return { sessionId: s.sessionId, lane: 0, attempt: 1, workdir: s.workdir, home: `${s.workdir}.home`, command: './run.sh {files}', secretValues: [], timeoutMs: 20_000, ...over, env: over.env ?? {} };
}

const cases = (sessionId: number, query: Record<string, unknown> = {}) => sessionCases({ pool: db.pool }, sessionId, query);

it('a batch’s report is kept as the build’s cases: each in its file, failing first, the failure at its line', async () => {
  const files = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`t${String(i).padStart(2, '0')}.sh`, testFile(`suite ${i}`, 3, i === 7 ? 'expected 3, got 2' : false)]));
  const s = await session(files);
  await runLane(deps(), job(s));
  const all = await cases(s.sessionId, { per_page: 500 });
  expect(all.total).toBe(61);
  const [first, ...rest] = all.cases;
  expect(first).toMatchObject({
    test_file: 'test/t07.sh',
    classname: 'suite 7',
    name: 'adds up',
    status: 'failed',
    duration_ms: 4,
    message: 'expected 3, got 2',
    failure: { file: 'test/t07.sh', line: 3 },
    flaky: false,
    worker: 1,
  });
  expect(first!.output).toContain('node_modules/expect/build/index.js:315:11');
  expect(rest.every((c) => c.status === 'passed' && c.failure === null)).toBe(true);
  expect(new Set(rest.map((c) => c.test_file)).size).toBe(20);
  expect(rest.find((c) => c.test_file === 'test/t12.sh' && c.name === 'works 2')).toMatchObject({ classname: 'suite 12', duration_ms: 2 });
});

it('pages, filters by status and file, and finds a case by words of its name', async () => {
  const s = await session({ 'a.sh': testFile('Cart', 4, 'total is wrong'), 'b.sh': testFile('Checkout › payment', 2) });
  await runLane(deps(), job(s));
  expect((await cases(s.sessionId, { status: 'failing' })).cases.map((c) => c.name)).toEqual(['adds up']);
  expect((await cases(s.sessionId, { status: 'passed' })).total).toBe(6);
  expect((await cases(s.sessionId, { q: 'checkout PAYMENT' })).total).toBe(2);
  expect((await cases(s.sessionId, { q: 'payment works' })).total).toBe(2);
  expect((await cases(s.sessionId, { q: 'works 3' })).cases.map((c) => c.classname)).toEqual(['Cart']);
  expect((await cases(s.sessionId, { q: '100%_' })).total).toBe(0);
  expect((await cases(s.sessionId, { test_file: 'test/b.sh' })).total).toBe(2);
  const page2 = await cases(s.sessionId, { per_page: 3, page: 2 });
  expect(page2).toMatchObject({ total: 7, page: 2, per_page: 3 });
  expect(page2.cases).toHaveLength(3);
  await expect(cases(s.sessionId, { status: 'broken' })).rejects.toMatchObject({ kind: 'invalid', field: 'status' });
  await expect(cases(999_999)).rejects.toMatchObject({ kind: 'not found' });
});

it('a file run again replaces its cases, and a case that failed then passed is flaky', async () => {
  const marker = join(tmp, `flaked-${Date.now()}`);
  const flaky = [
    `printf '<testcase classname="Flaky" name="works 1" time="0.002" file="%s"/>' "$FILE"`,
    `if [ ! -e ${marker} ]; then touch ${marker}; printf '<testcase classname="Flaky" name="adds up" file="%s"><failure message="first time fails">boom</failure></testcase>' "$FILE"; exit 1; fi`,
    `printf '<testcase classname="Flaky" name="adds up" time="0.003" file="%s"/>' "$FILE"`,
  ].join('\n');
  const s = await session({ 'steady.sh': testFile('Steady', 2), 'flaky.sh': flaky });
  await runLane(deps(), job(s, { retryFailed: 2 }));
  const all = await cases(s.sessionId, { per_page: 500 });
  const mine = all.cases.filter((c) => c.test_file === 'test/flaky.sh').map((c) => [c.name, c.status, c.flaky]);
  expect(mine.sort()).toEqual([
    ['adds up', 'passed', true],
    ['works 1', 'passed', false],
  ]);
  expect(all.total).toBe(4);
});

it('reports that name no file: a failed batch’s files run alone and each keeps its own cases, once', async () => {
  const unnamed = (suite: string, fails: boolean) =>
    `printf '<testcase classname="${suite}" name="one"${fails ? '><failure message="no">boom</failure></testcase>' : '/>'}'${fails ? '; exit 1' : ''}`;
  const s = await session({ 'a.sh': unnamed('A', false), 'b.sh': unnamed('B', true), 'c.sh': unnamed('C', false) });
  await runLane(deps(), job(s));
  const all = await cases(s.sessionId, { per_page: 500 });
  expect(all.cases.map((c) => [c.test_file, c.classname, c.status]).sort()).toEqual([
    ['test/a.sh', 'A', 'passed'],
    ['test/b.sh', 'B', 'failed'],
    ['test/c.sh', 'C', 'passed'],
  ]);
});

describe('a muted test', () => {
  const results = async (sessionId: number) =>
    (await db.pool.query<{ path: string; status: string; output: string }>('SELECT path, status, output FROM test_results WHERE session_id = $1 ORDER BY path', [sessionId])).rows;

  it('fails no file, pinned in a batch or run alone, and its case says it was muted; an unmuted failure still fails', async () => {
    const unnamed = `printf '<testcase classname="Legacy" name="flaky clock"><failure message="off by one">boom</failure></testcase>'; exit 1`;
    const s = await session({ 'a.sh': testFile('Cart', 2, 'total is wrong'), 'b.sh': unnamed, 'c.sh': testFile('Tax', 1, 'rounding') });
    await muteTest(db.pool, s.suiteId, { classname: 'Cart', name: 'adds up' }, 'Mo');
    await muteTest(db.pool, s.suiteId, { classname: 'Legacy', name: 'flaky clock' }, 'Mo');
    await runLane(deps(), job(s));
    const rows = await results(s.sessionId);
    expect(rows.map((r) => [r.path, r.status])).toEqual([
      ['test/a.sh', 'passed'],
      ['test/b.sh', 'passed'],
      ['test/c.sh', 'failed'],
    ]);
    expect(rows[0]!.output).toContain('[sluice] passed: its only failures are of muted tests (Cart › adds up)');
    expect(rows[1]!.output).toContain('[sluice] passed: its only failures are of muted tests (Legacy › flaky clock)');
    const failing = (await cases(s.sessionId, { status: 'failing' })).cases.map((c) => [c.test_file, c.classname, c.name, c.muted]);
    expect(failing.sort()).toEqual([
      ['test/a.sh', 'Cart', 'adds up', true],
      ['test/b.sh', 'Legacy', 'flaky clock', true],
      ['test/c.sh', 'Tax', 'adds up', false],
    ]);
  });

  it('fails no file in a batch of that one file either (a file run first is a batch of its own)', async () => {
    const unnamed = `printf '<testcase classname="Legacy" name="flaky clock"><failure message="off by one">boom</failure></testcase>'; exit 1`;
    const s = await session({ 'b.sh': unnamed });
    await muteTest(db.pool, s.suiteId, { classname: 'Legacy', name: 'flaky clock' }, 'Mo');
    await runLane(deps(), job(s));
    const rows = await results(s.sessionId);
    expect(rows.map((r) => [r.path, r.status])).toEqual([['test/b.sh', 'passed']]);
    expect(rows[0]!.output).toContain('[sluice] passed: its only failures are of muted tests (Legacy › flaky clock)');
  });
});

it('masks secrets in what is kept, and shows a quiet failed file’s case failures on the build page', async () => {
  const s = await session({ 'only.sh': testFile('Auth', 1, 'token hunter2 refused') });
  await runLane(deps(), job(s, { secretValues: ['hunter2'], env: { QUIET: '1' } }));
  const [failing] = (await cases(s.sessionId, { status: 'failing' })).cases;
  expect(failing!.message).toBe('token **** refused');
  expect(failing!.output).not.toContain('hunter2');
  // A file that ran alone and printed nothing: its box on the build page is its cases' failures.
  await db.pool.query(`UPDATE sessions SET status = 'failed', counts = '{"failed": 1}' WHERE id = $1`, [s.sessionId]);
  const build = await loadBuild({ pool: db.pool, config }, s.sessionId);
  expect(build!.failures).toEqual([expect.objectContaining({ path: 'test/only.sh', output: expect.stringContaining('Auth › adds up (test/only.sh:3)\ntoken **** refused') })]);
});
