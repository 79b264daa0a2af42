/**
 * Batches and flaky files in the session's views (issue 22): GET /api/v1/sessions/:id and the
 * report (JSON and HTML) list each batch with its worker, files, status, duration and note, say
 * which batch ran each file, how many runs it took and whether it was flaky, and list the
 * build's flaky files with how often each was flaky over the suite's last 20 builds. The
 * results are written the way a lane writes them (db/testQueue.ts, db/testBatches.ts), on a real
 * PostgreSQL behind the real API.
 */
import { FLAKY_WINDOW } from '../../src/db/flaky';
import { finishBatch, startBatch } from '../../src/db/testBatches';
import { claimFiles, enqueueTests, recordFileResults, type Claim } from '../../src/db/testQueue';
import { startApiHarness, type ApiHarness } from '../support/apiApp';
import { insertPostSession } from '../support/postSession';
import { reportPath } from '../support/reports';

let h: ApiHarness;

beforeAll(async () => {
  h = await startApiHarness();
});
afterAll(async () => {
  await h?.close();
});

/** Another build of the same suite, its results written directly: path → flaky (or not run). */
async function earlierBuild(of: number, results: Record<string, boolean>): Promise<number> {
  const { rows } = await h.db.pool.query<{ id: string }>(
    `INSERT INTO sessions (ci_event_id, suite_id, branch, head, status) SELECT ci_event_id, suite_id, branch, head, 'passed' FROM sessions WHERE id = $1 RETURNING id`,
    [of],
  );
  const id = Number(rows[0]!.id);
  for (const [path, flaky] of Object.entries(results)) {
    await h.db.pool.query(`INSERT INTO test_results (session_id, path, status, duration_ms, attempts, flaky) VALUES ($1, $2, 'passed', 10, $3, $4)`, [
      id,
      path,
      flaky ? 2 : 1,
      flaky,
    ]);
  }
  return id;
}

it('lists batches, which batch ran each file, its runs, and the flaky files with their history over the last 20 builds', async () => {
  // The suite's history, oldest first: 22 builds that ran test/flaky_test.sh, flaky in the two
  // oldest (outside the window) and in two recent ones; a build stopped before its tests
  // (no results: not one of the 20); then this build.
  const first = await insertPostSession(h.db.pool, h.config.secretKey);
  await h.db.pool.query(`UPDATE sessions SET status = 'passed' WHERE id = $1`, [first.sessionId]);
  const earlier: number[] = [];
  for (let i = 1; i < 22; i += 1) {
    earlier[i] = await earlierBuild(first.sessionId, { 'test/flaky_test.sh': [1, 15, 20].includes(i), 'test/ok_test.sh': false });
    if (i === 10) await earlierBuild(first.sessionId, {});
  }
  await h.db.pool.query(`INSERT INTO test_results (session_id, path, status, duration_ms, attempts, flaky) VALUES ($1, 'test/flaky_test.sh', 'passed', 10, 2, true)`, [first.sessionId]);
  // Another suite's flakes are not this suite's.
  const other = await insertPostSession(h.db.pool, h.config.secretKey);
  await h.db.pool.query(`INSERT INTO test_results (session_id, path, status, duration_ms, attempts, flaky) VALUES ($1, 'test/flaky_test.sh', 'passed', 10, 2, true)`, [other.sessionId]);

  // This build, as two lanes write it: lane 0 ran a batch of three that failed, one file pinned
  // by its JUnit results, two run again alone (one of them flaky on a retry); lane 1 ran a file alone.
  const sessionId = await earlierBuild(first.sessionId, {});
  await h.db.pool.query(`UPDATE sessions SET status = 'failed', workers = 2 WHERE id = $1`, [sessionId]);
  await enqueueTests(h.db.pool, sessionId, ['test/a_test.sh', 'test/b_test.sh', 'test/flaky_test.sh', 'test/ok_test.sh'].map((path) => ({ path, estimateMs: 50 })));
  const lane0: Claim = { token: 'lane 0 attempt 1 on host-1', lane: 0, leaseMs: 60_000 };
  const lane1: Claim = { token: 'lane 1 attempt 1 on host-2', lane: 1, leaseMs: 60_000 };
  const taken = await claimFiles(h.db.pool, sessionId, lane0, { budgetMs: 150, unknownMs: 50, maxFiles: 3 });
  expect(taken.map((f) => f.path)).toEqual(['test/a_test.sh', 'test/b_test.sh', 'test/flaky_test.sh']);
  expect(await claimFiles(h.db.pool, sessionId, lane1, { budgetMs: 150, unknownMs: 50, maxFiles: 3 })).toHaveLength(1);

  const batch = await startBatch(h.db.pool, { sessionId, lane: 0, runner: 'host-1', files: 3 });
  const note = 'the batch failed (exit code 1): 1 file by its JUnit results, 2 run again one by one';
  await finishBatch(h.db.pool, batch, { status: 'failed', exitCode: 1, durationMs: 1234, output: `${'x'.repeat(5000)}\nnot ok 1 a works`, note });
  const startedAt = new Date();
  await recordFileResults(h.db.pool, sessionId, lane0, [
    { path: 'test/a_test.sh', status: 'failed', exitCode: 1, durationMs: 400, output: 'not ok 1', runner: 'host-1', batchId: batch, startedAt },
    { path: 'test/b_test.sh', status: 'passed', exitCode: 0, durationMs: 300, output: '', runner: 'host-1', batchId: batch, startedAt },
    { path: 'test/flaky_test.sh', status: 'passed', exitCode: 0, durationMs: 200, output: '', runner: 'host-1', batchId: batch, attempts: 2, flaky: true, startedAt },
  ]);
  await recordFileResults(h.db.pool, sessionId, lane1, [{ path: 'test/ok_test.sh', status: 'passed', exitCode: 0, durationMs: 100, output: 'ok', runner: 'host-2', startedAt }]);

  const res = await h.admin('GET', `/api/v1/sessions/${sessionId}`);
  expect(res.statusCode).toBe(200);
  const view = res.json();
  expect(view.batches).toEqual([
    {
      id: batch,
      worker: 1,
      runner: 'host-1',
      files: 3,
      status: 'failed',
      exit_code: 1,
      duration_ms: 1234,
      note,
      output_tail: expect.stringMatching(/^x{3000,}\nnot ok 1 a works$/),
      output_truncated: true,
      started_at: expect.any(String),
      finished_at: expect.any(String),
    },
  ]);
  expect(view.batches[0].output_tail.length).toBe(4000);
  expect(view.tests).toEqual([
    expect.objectContaining({ path: 'test/a_test.sh', status: 'failed', worker: 1, batch, attempts: 1, flaky: false, started_at: startedAt.toISOString() }),
    expect.objectContaining({ path: 'test/b_test.sh', status: 'passed', worker: 1, batch, attempts: 1, flaky: false }),
    expect.objectContaining({ path: 'test/flaky_test.sh', status: 'passed', worker: 1, batch, attempts: 2, flaky: true }),
    expect.objectContaining({ path: 'test/ok_test.sh', status: 'passed', worker: 2, batch: null, attempts: 1, flaky: false, runner: 'host-2' }),
  ]);
  // Over the last 20 builds that ran tests (this one and the 19 before it, the stopped one not
  // counted): flaky here and in the builds numbered 15 and 20, not in 0 and 1 (too old), nor in the other suite.
  expect(FLAKY_WINDOW).toBe(20);
  expect(view.flaky_files).toEqual([{ path: 'test/flaky_test.sh', attempts: 2, flaked: 3, ran: 20, builds: 20 }]);

  // The report says the same, as JSON and as HTML.
  const report = await h.request({ method: 'GET', url: await reportPath(h.db.pool, sessionId), headers: { accept: 'application/json' } });
  expect(report.json()).toMatchObject({ batches: view.batches, flaky_files: view.flaky_files, tests: [{ batch, worker: 1 }, { batch }, { flaky: true, attempts: 2 }, { batch: null }] });
  const html = (await h.request({ method: 'GET', url: await reportPath(h.db.pool, sessionId) })).body;
  expect(html).toContain('<h2>Batches</h2>');
  expect(html).toContain(note);
  expect(html).toContain("test/flaky_test.sh: passed on run 2; flaky in 3 of its 20 runs in the suite's last 20 builds");
  expect(html).toMatch(/<span class="flaky">flaky<\/span> test\/flaky_test\.sh<\/h3>\n<p>0\.20 s, exit code 0, 2 runs, batch #\d+, worker 1<\/p>/);

  // A build with no flaky file lists none, and no batch.
  expect((await h.admin('GET', `/api/v1/sessions/${other.sessionId}`)).json()).toMatchObject({ batches: [], flaky_files: [{ path: 'test/flaky_test.sh', flaked: 1, ran: 1, builds: 1 }] });
  const plain = (await h.admin('GET', `/api/v1/sessions/${earlier[2]}`)).json();
  expect(plain).toMatchObject({ batches: [], flaky_files: [] });
});
