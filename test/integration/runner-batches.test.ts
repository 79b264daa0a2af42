/**
 * Batches (issue 22) in a lane (steps/tests/lane.ts, batch.ts) on real processes and a real
 * PostgreSQL, without Temporal: a test command with `{files}` runs many files in one process; a
 * batch that fails, crashes or hangs fails only the files that failed, pinned by their JUnit
 * results or by running them one by one; a failing file runs again with retry_failed, and one
 * that passes then is flaky.
 *
 * The "framework" here is a small shell runner that runs each file it is given and, like mocha's
 * xunit reporter, writes a JUnit XML report to $SLUICE_REPORT_DIR, with each case's `file` when
 * asked (FILE_ATTRIBUTE=1); it notes each process it is in `runs.log`.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runLane, type LaneDeps, type LaneJob } from '../../src/steps/tests/lane';
import { readOutput } from '../../src/db/outputChunks';
import { listSessionBatches } from '../../src/db/testBatches';
import { enqueueTests } from '../../src/db/testQueue';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { insertPostSession } from '../support/postSession';
import { pgBuildRecords } from '../../src/db/buildRecords';

let db: TestDatabase;
let tmp: string;
const secretKey = Buffer.alloc(32, 5);

beforeAll(async () => {
  db = await createTestDatabase('sluice_batches');
  tmp = await mkdtemp(join(tmpdir(), 'sluice-batches-'));
});
afterAll(async () => {
  await db?.drop();
  await rm(tmp, { recursive: true, force: true });
});

const RUNNER = `#!/bin/sh
# A tiny test framework: runs each file given, reports them in JUnit XML, fails if one failed.
echo "process \${SLUICE_BATCH_ID} $#" >> "$RUNS"
status=0
cases=""
for f in "$@"; do
  attr=""; [ "$FILE_ATTRIBUTE" = 1 ] && attr=" file=\\"$f\\""
  if sh "$f"; then
    cases="$cases<testcase classname=\\"$f\\" name=\\"works\\" time=\\"0.01\\"$attr/>"
  else
    status=1
    cases="$cases<testcase classname=\\"$f\\" name=\\"works\\" time=\\"0.01\\"$attr><failure message=\\"$f failed\\">assertion</failure></testcase>"
  fi
done
echo "<testsuite name=\\"tiny\\">$cases</testsuite>" > "$SLUICE_REPORT_DIR/report.xml"
exit $status
`;

/** A session whose list holds `files` (name → body), and a checkout with the tiny framework. */
async function session(files: Record<string, string>): Promise<{ sessionId: number; workdir: string; runs: string }> {
  const s = await insertPostSession(db.pool, secretKey);
  const workdir = join(tmp, `session-${s.sessionId}`);
  await mkdir(join(workdir, 'test'), { recursive: true });
  await writeFile(join(workdir, 'run.sh'), RUNNER, { mode: 0o755 });
  for (const [name, body] of Object.entries(files)) await writeFile(join(workdir, 'test', name), `${body}\n`);
  // As an earlier build recorded them: 50 ms each, so one batch holds them all.
  await enqueueTests(db.pool, s.sessionId, Object.keys(files).map((name) => ({ path: `test/${name}`, estimateMs: 50 })));
  return { sessionId: s.sessionId, workdir, runs: join(tmp, `runs-${s.sessionId}.log`) };
}

function deps(): LaneDeps {
  return { records: pgBuildRecords(db.pool, Buffer.alloc(32)), runner: 'host-1', firstFailure: async () => undefined };
}

function job(s: { sessionId: number; workdir: string; runs: string }, over: Partial<LaneJob> & { env?: Record<string, string> } = {}): LaneJob {
  return {
    sessionId: s.sessionId,
    lane: 0,
    attempt: 1,
    workdir: s.workdir,
    home: `${s.workdir}.home`,
    command: './run.sh {files}',
    secretValues: [],
    timeoutMs: 20_000,
    ...over,
    env: { RUNS: s.runs, ...over.env },
  };
}

async function results(sessionId: number) {
  const { rows } = await db.pool.query<{ path: string; status: string; batch_id: string | null; attempts: number; flaky: boolean; output: string }>(
    'SELECT path, status, batch_id, attempts, flaky, output FROM test_results WHERE session_id = $1 ORDER BY path',
    [sessionId],
  );
  return rows;
}

const processes = async (runs: string) => (await readFile(runs, 'utf8').catch(() => '')).trim().split('\n').filter(Boolean);
const twenty = (failing?: string) =>
  Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`t${String(i).padStart(2, '0')}.sh`, failing === `t${String(i).padStart(2, '0')}.sh` ? 'exit 1' : 'true']));

it('runs twenty files in one process and passes them all when it exits 0', async () => {
  const s = await session(twenty());
  const out = await runLane(deps(), job(s));
  expect(out.ran).toBe(20);
  expect(await processes(s.runs)).toHaveLength(1);
  const rows = await results(s.sessionId);
  expect(rows.every((r) => r.status === 'passed' && r.batch_id !== null)).toBe(true);
  expect(new Set(rows.map((r) => r.batch_id)).size).toBe(1);
  const [batch] = await listSessionBatches(db.pool, s.sessionId);
  expect(batch).toMatchObject({ files: 20, status: 'passed', exit_code: 0, note: null });
  expect(batch!.output).toBe('');
});

it('sizes batches to a lane’s share and leaves no remainder shorter than a process start for last', async () => {
  // As an earlier build timed them: 5.6 s in all, for a build of two lanes (this one runs alone).
  const estimates: Record<string, number> = { 'a.sh': 3000, 'b.sh': 2000, 'c.sh': 500, 'd.sh': 60, 'e.sh': 40 };
  const s = await session(Object.fromEntries(Object.keys(estimates).map((name) => [name, 'true'])));
  await db.pool.query('DELETE FROM test_queue WHERE session_id = $1', [s.sessionId]);
  await enqueueTests(db.pool, s.sessionId, Object.entries(estimates).map(([name, estimateMs]) => ({ path: `test/${name}`, estimateMs })));
  const out = await runLane(deps(), job(s, { lanes: 2 }));
  expect(out.ran).toBe(5);
  // Half the work first (a.sh; b.sh would overshoot it), then half of what is left (b.sh), and
  // with it the 0.6 s behind it, not worth a process of its own.
  expect(await processes(s.runs)).toEqual([expect.stringMatching(/ 1$/), expect.stringMatching(/ 4$/)]);
});

it('splits a short suite between two lanes that start together: a process each, side by side', async () => {
  // Two files of 0.7 s by an earlier build (two `node --test` files, issue 49): one batch of
  // both (MIN_BATCH_MS) would leave the second lane idle.
  const s = await session({ 'a.sh': 'sleep 1', 'b.sh': 'sleep 1' });
  await db.pool.query('UPDATE test_queue SET estimate_ms = 700 WHERE session_id = $1', [s.sessionId]);
  const [first, second] = await Promise.all([runLane(deps(), job(s, { lanes: 2 })), runLane(deps(), job(s, { lane: 1, lanes: 2 }))]);
  expect([first.ran, second.ran]).toEqual([1, 1]);
  expect(await processes(s.runs)).toEqual([expect.stringMatching(/ 1$/), expect.stringMatching(/ 1$/)]);
});

it('one failing file among twenty: its JUnit file attribute pins it, nothing runs again', async () => {
  const s = await session(twenty('t07.sh'));
  await runLane(deps(), job(s, { env: { FILE_ATTRIBUTE: '1' } }));
  expect(await processes(s.runs)).toHaveLength(1);
  const rows = await results(s.sessionId);
  expect(rows.filter((r) => r.status !== 'passed').map((r) => [r.path, r.status])).toEqual([['test/t07.sh', 'failed']]);
  expect(rows.find((r) => r.path === 'test/t07.sh')!.output).toContain('test/t07.sh failed');
  const [batch] = await listSessionBatches(db.pool, s.sessionId);
  expect(batch).toMatchObject({ status: 'failed', exit_code: 1, note: 'the batch failed (exit code 1): 20 files by their JUnit results' });
});

it('without a file attribute, the failed batch’s files run again one by one, and only the guilty one fails', async () => {
  const s = await session(twenty('t13.sh'));
  await runLane(deps(), job(s));
  // The batch, then each of its twenty files alone.
  const runs = await processes(s.runs);
  expect(runs).toHaveLength(21);
  expect(runs.slice(1).every((line) => / 1$/.test(line))).toBe(true);
  const rows = await results(s.sessionId);
  expect(rows.filter((r) => r.status !== 'passed').map((r) => r.path)).toEqual(['test/t13.sh']);
  const [batch] = await listSessionBatches(db.pool, s.sessionId);
  expect(batch!.note).toBe('the batch failed (exit code 1): 20 run again one by one');
});

it('a batch that crashes is handled the same way: the file that kills its process errs alone', async () => {
  const files = { 'a.sh': 'true', 'b.sh': 'kill -KILL $PPID', 'c.sh': 'true' };
  const s = await session(files);
  await runLane(deps(), job(s, { env: { FILE_ATTRIBUTE: '1' } }));
  const rows = await results(s.sessionId);
  expect(rows.map((r) => [r.path, r.status])).toEqual([
    ['test/a.sh', 'passed'],
    ['test/b.sh', 'error'],
    ['test/c.sh', 'passed'],
  ]);
  const [batch] = await listSessionBatches(db.pool, s.sessionId);
  expect(batch).toMatchObject({ status: 'error', note: expect.stringMatching(/^the batch failed \(killed by signal SIGKILL\): 3 run again one by one$/) });
});

it('a batch that hangs is stopped at its time limit, and the file that hangs times out alone', async () => {
  const s = await session({ 'a.sh': 'true', 'hang.sh': 'sleep 60', 'z.sh': 'true' });
  await runLane(deps(), job(s, { timeoutMs: 1_500 }));
  const rows = await results(s.sessionId);
  expect(rows.map((r) => [r.path, r.status])).toEqual([
    ['test/a.sh', 'passed'],
    ['test/hang.sh', 'error'],
    ['test/z.sh', 'passed'],
  ]);
  expect(rows.find((r) => r.path === 'test/hang.sh')!.output).toContain('timed out after 1500 ms');
  const [batch] = await listSessionBatches(db.pool, s.sessionId);
  expect(batch!.note).toMatch(/^the batch failed \(timed out after \d+ ms\)/);
}, 30_000);

it('short files claimed together run from one shell, each in a process of its own, and a slow one streams its output while it runs', async () => {
  // The slow file prints its second line only once this test has seen its first (bounded: 30 s).
  const slow = 'echo tick; for i in $(seq 1 600); do [ -e release ] && break; sleep 0.05; done; echo tock';
  const s = await session({ 'a.sh': 'echo a', 'slow.sh': slow, 'z.sh': 'echo z; exit 2' });
  const running = runLane(deps(), job(s, { command: 'sh' }));
  // Its first line is in the database before it ends.
  let seen = '';
  for (let i = 0; i < 200 && !seen.includes('tick'); i++) {
    seen = (await readOutput(db.pool, s.sessionId, 0, 100)).filter((r) => r.path === 'test/slow.sh').map((r) => r.text).join('');
    if (!seen.includes('tick')) await new Promise((r) => setTimeout(r, 50));
  }
  expect(seen).toContain('tick');
  expect(seen).not.toContain('tock');
  await writeFile(join(s.workdir, 'release'), '');
  await running;
  const rows = await results(s.sessionId);
  expect(rows.map((r) => [r.path, r.status, r.output, r.batch_id])).toEqual([
    ['test/a.sh', 'passed', 'a\n', null],
    ['test/slow.sh', 'passed', 'tick\ntock\n', null],
    ['test/z.sh', 'failed', 'z\n', null],
  ]);
  const ended = await readOutput(db.pool, s.sessionId, 0, 100);
  expect(ended.filter((r) => r.path === 'test/slow.sh').map((r) => r.text).join('')).toBe('tick\ntock\n');
  // The fast ones never streamed.
  expect(ended.some((r) => r.path === 'test/a.sh' || r.path === 'test/z.sh')).toBe(false);
});

describe('retry_failed', () => {
  it('a file that fails, then passes, counts as passed and flaky, with both runs’ output', async () => {
    const marker = join(tmp, `flaked-${Date.now()}`);
    const s = await session({ 'steady.sh': 'true', 'flaky.sh': `if [ ! -e ${marker} ]; then touch ${marker}; echo first run fails; exit 1; fi; echo now it passes` });
    await runLane(deps(), job(s, { command: 'sh', retryFailed: 2 }));
    const rows = await results(s.sessionId);
    expect(rows.map((r) => [r.path, r.status, r.attempts, r.flaky])).toEqual([
      ['test/flaky.sh', 'passed', 2, true],
      ['test/steady.sh', 'passed', 1, false],
    ]);
    const flaky = rows.find((r) => r.path === 'test/flaky.sh')!.output;
    expect(flaky).toContain('now it passes');
    expect(flaky).toContain("[sluice] passed on run 2, after 1 failed; the first run's output:\nfirst run fails");
  });

  it('a file that keeps failing fails after its retries, not flaky; in a batch it runs again alone', async () => {
    const s = await session({ 'ok.sh': 'true', 'broken.sh': 'exit 3' });
    await runLane(deps(), job(s, { retryFailed: 2, env: { FILE_ATTRIBUTE: '1' } }));
    const rows = await results(s.sessionId);
    expect(rows.map((r) => [r.path, r.status, r.attempts, r.flaky])).toEqual([
      ['test/broken.sh', 'failed', 3, false],
      ['test/ok.sh', 'passed', 1, false],
    ]);
    // The batch, then broken.sh alone twice; it is still the batch's file.
    expect(await processes(s.runs)).toHaveLength(3);
    expect(rows.every((r) => r.batch_id !== null)).toBe(true);
  });
});

it('a mapping run (issue 40) runs each file alone, even with {files}, and records what each read; a failing one stays unmapped', async () => {
  const s = await session({ 'a.sh': 'cat test/fixture.txt > /dev/null', 'b.sh': 'true', 'c.sh': 'exit 1' });
  await writeFile(join(s.workdir, 'test', 'fixture.txt'), 'data\n');
  await mkdir(`${s.workdir}.home`, { recursive: true });
  await db.pool.query('INSERT INTO dependency_maps (session_id, repo_id, profile_name, commit_id) SELECT id, (SELECT repo_id FROM suites WHERE id = suite_id), $2, $3 FROM sessions WHERE id = $1', [s.sessionId, 'default', 'd'.repeat(40)]);
  const out = await runLane(deps(), job(s, { trace: true }));
  expect(out.ran).toBe(3);
  // One process a file, though the command takes many.
  expect(await processes(s.runs)).toHaveLength(3);
  const { rows } = await db.pool.query<{ path: string; reads: string[] }>('SELECT path, reads FROM dependency_map_files WHERE session_id = $1 ORDER BY path', [s.sessionId]);
  expect(rows.map((r) => r.path)).toEqual(['test/a.sh', 'test/b.sh']);
  expect(rows[0]!.reads).toEqual(expect.arrayContaining(['run.sh', 'test/a.sh', 'test/fixture.txt']));
  expect(rows[1]!.reads).not.toContain('test/fixture.txt');
  expect((await results(s.sessionId)).map((r) => [r.path, r.status])).toEqual([['test/a.sh', 'passed'], ['test/b.sh', 'passed'], ['test/c.sh', 'failed']]);
});
