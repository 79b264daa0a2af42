/**
 * Test lanes (steps/tests/lane.ts) sharing one session's list in a real PostgreSQL, running
 * real test processes in a real directory. Temporal plays no part here (the e2e tests run lanes
 * in real runners): what is checked is the queue itself, that every file runs and counts once
 * whichever lane takes it, longest first, in batches, and that a lane whose runner died gives its
 * files back.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runLane, LEASE_MS, type LaneDeps, type LaneJob } from '../../src/steps/tests/lane';
import type { Counts } from '../../src/core/types';
import { claimFiles, enqueueTests, failureHistory, HISTORY_BUILDS, queueCounts, recordedDurations, recordFileResult, workLeftMs, type QueuedFile } from '../../src/db/testQueue';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { insertPostSession } from '../support/postSession';
import { eventually } from '../support/wait';
import { pgBuildRecords } from '../../src/db/buildRecords';

let db: TestDatabase;
let tmp: string;
const secretKey = Buffer.alloc(32, 1);

beforeAll(async () => {
  db = await createTestDatabase();
  tmp = await mkdtemp(join(tmpdir(), 'sluice-lanes-'));
});

afterAll(async () => {
  await db.drop();
  await rm(tmp, { recursive: true, force: true });
});

/** A session, and a directory of test files each appending `<name> <lane>` to a log when it runs. */
async function setup(files: Record<string, { exit?: number; sleep?: number }>): Promise<{ sessionId: number; repoId: number; workdir: string; log: string }> {
  const s = await insertPostSession(db.pool, secretKey);
  const workdir = join(tmp, `session-${s.sessionId}`);
  const log = join(tmp, `runs-${s.sessionId}.log`);
  await mkdir(join(workdir, 'test'), { recursive: true });
  for (const [name, f] of Object.entries(files)) {
    const body = `#!/bin/sh\necho "${name} $LANE" >> ${log}\n${f.sleep ? `sleep ${f.sleep}\n` : ''}exit ${f.exit ?? 0}\n`;
    await writeFile(join(workdir, 'test', name), body, { mode: 0o755 });
  }
  return { sessionId: s.sessionId, repoId: s.repoId, workdir, log };
}

const queued = (names: string[], estimates: Record<string, number> = {}): QueuedFile[] =>
  names.map((n) => ({ path: `test/${n}`, estimateMs: estimates[n] ?? null }));

function deps(over: Partial<LaneDeps> = {}): LaneDeps & { firstFailures: Counts[] } {
  const firstFailures: Counts[] = [];
  return {
    records: pgBuildRecords(db.pool, secretKey),
    runner: 'host-1',
    firstFailure: async (c) => {
      firstFailures.push(c);
    },
    firstFailures,
    ...over,
  };
}

const job = (s: { sessionId: number; repoId: number; workdir: string }, lane: number, over: Partial<LaneJob> = {}): LaneJob => ({
  sessionId: s.sessionId,
  lane,
  attempt: 1,
  workdir: s.workdir,
  command: null,
  env: { LANE: String(lane) },
  secretValues: [],
  timeoutMs: 10_000,
  ...over,
});

async function runs(log: string): Promise<string[]> {
  const text = await readFile(log, 'utf8').catch(() => '');
  return text.split('\n').filter(Boolean);
}

describe('lanes sharing a list', () => {
  it('run every file once between them, and the counts are exact', async () => {
    const names = Array.from({ length: 30 }, (_, i) => `f${String(i).padStart(2, '0')}_test.sh`);
    const s = await setup(Object.fromEntries(names.map((n, i) => [n, { exit: i === 7 ? 1 : 0 }])));
    expect(await enqueueTests(db.pool, s.sessionId, queued(names))).toBe(30);
    const d = deps();
    const outcomes = await Promise.all([0, 1, 2].map((lane) => runLane({ ...d, runner: `host-${lane}` }, job(s, lane))));

    expect(outcomes.reduce((n, o) => n + o.ran, 0)).toBe(30);
    const ran = (await runs(s.log)).map((l) => l.split(' ')[0]);
    expect(ran.sort()).toEqual(names);
    // Only f07 did not pass; any other file shows here with its output, which says why.
    const { rows: notPassed } = await db.pool.query<{ path: string; status: string; output: string }>(
      "SELECT path, status, output FROM test_results WHERE session_id = $1 AND status <> 'passed' ORDER BY path",
      [s.sessionId],
    );
    expect(notPassed.map((r) => (r.path === 'test/f07_test.sh' ? { path: r.path, status: r.status } : r))).toEqual([{ path: 'test/f07_test.sh', status: 'failed' }]);
    expect(await queueCounts(db.pool, s.sessionId)).toEqual({ notstarted: 0, started: 0, passed: 29, failed: 1, pending: 0, skipped: 0, error: 0 });
    // One first failure, whichever lane met it, with the counts as they stood.
    expect(d.firstFailures).toHaveLength(1);
    expect(d.firstFailures[0]!.failed).toBe(1);
    const { rows } = await db.pool.query('SELECT count(*)::int AS n, count(DISTINCT runner)::int AS runners FROM test_results WHERE session_id = $1', [s.sessionId]);
    expect(rows[0]!.n).toBe(30);
    expect(rows[0]!.runners).toBeGreaterThanOrEqual(1);
  });

  it('take the longest files first by recorded durations, new files before them', async () => {
    const s = await setup({ 'a_test.sh': {}, 'b_test.sh': {}, 'c_test.sh': {}, 'new_test.sh': {} });
    await enqueueTests(db.pool, s.sessionId, [
      { path: 'test/new_test.sh', estimateMs: null },
      { path: 'test/c_test.sh', estimateMs: 3000 },
      { path: 'test/a_test.sh', estimateMs: 2000 },
      { path: 'test/b_test.sh', estimateMs: 1000 },
    ]);
    await runLane(deps(), job(s, 0));
    expect((await runs(s.log)).map((l) => l.split(' ')[0])).toEqual(['new_test.sh', 'c_test.sh', 'a_test.sh', 'b_test.sh']);
  });

  it('claim short files in batches by their estimates, long ones one at a time', async () => {
    const s = await setup({});
    await enqueueTests(db.pool, s.sessionId, [
      { path: 'test/long_test.sh', estimateMs: 5000 },
      ...Array.from({ length: 20 }, (_, i) => ({ path: `test/s${i}_test.sh`, estimateMs: 10 })),
    ]);
    const claim = { token: 'lane 0 attempt 1 on host', lane: 0, leaseMs: LEASE_MS };
    const opts = { budgetMs: 250, unknownMs: 1000, maxFiles: 100 };
    expect((await claimFiles(db.pool, s.sessionId, claim, opts)).map((f) => f.path)).toEqual(['test/long_test.sh']);
    expect(await claimFiles(db.pool, s.sessionId, claim, opts)).toHaveLength(20);
    expect(await claimFiles(db.pool, s.sessionId, claim, opts)).toEqual([]);
  });

  it('with a stride, take a slice across the list (every other file for two lanes), then the files passed over', async () => {
    const s = await setup({});
    const durations = [8000, 7000, 6000, 5000, 4000, 3000, 2000, 1000];
    await enqueueTests(db.pool, s.sessionId, durations.map((ms) => ({ path: `test/f${ms}_test.sh`, estimateMs: ms })));
    const lane = (n: number) => ({ token: `lane ${n} attempt 1 on host`, lane: n, leaseMs: LEASE_MS });
    // Half of 36 s each: the first lane takes 8+6+4 (18 s), the second the rest (7+5+3+2+1).
    const first = await claimFiles(db.pool, s.sessionId, lane(0), { budgetMs: 18_000, unknownMs: 1000, maxFiles: 100, stride: 2 });
    expect(first.map((f) => f.estimateMs)).toEqual([8000, 6000, 4000]);
    const second = await claimFiles(db.pool, s.sessionId, lane(1), { budgetMs: 18_000, unknownMs: 1000, maxFiles: 100, stride: 1 });
    expect(second.map((f) => f.estimateMs)).toEqual([7000, 5000, 3000, 2000, 1000]);
  });

  it('take the files listed to run first as a claim of their own, with a stride or without', async () => {
    for (const stride of [1, 2]) {
      const s = await setup({});
      await enqueueTests(db.pool, s.sessionId, [
        { path: 'test/changed_test.sh', estimateMs: 100, first: 'changed' },
        { path: 'test/flaky_test.sh', estimateMs: 200, first: 'failed in 2 of the last 10 builds' },
        ...[8000, 7000, 6000, 5000].map((ms) => ({ path: `test/f${ms}_test.sh`, estimateMs: ms })),
      ]);
      const claim = { token: 'lane 0 attempt 1 on host', lane: 0, leaseMs: LEASE_MS };
      const opts = { budgetMs: 18_000, unknownMs: 1000, maxFiles: 100, stride };
      expect((await claimFiles(db.pool, s.sessionId, claim, opts)).map((f) => f.path)).toEqual(['test/changed_test.sh', 'test/flaky_test.sh']);
      expect((await claimFiles(db.pool, s.sessionId, claim, opts)).map((f) => f.estimateMs)).toEqual(stride === 2 ? [8000, 6000] : [8000, 7000]);
    }
  });

  it('with a stride, still take no more than maxFiles', async () => {
    const s = await setup({});
    await enqueueTests(db.pool, s.sessionId, Array.from({ length: 10 }, (_, i) => ({ path: `test/f${i}_test.sh`, estimateMs: 10 })));
    const taken = await claimFiles(db.pool, s.sessionId, { token: 'lane 0 attempt 1 on host', lane: 0, leaseMs: LEASE_MS }, { budgetMs: 10_000, unknownMs: 1000, maxFiles: 3, stride: 2 });
    expect(taken.map((f) => f.path)).toEqual(['test/f0_test.sh', 'test/f2_test.sh', 'test/f4_test.sh']);
  });

  it('count, as work left, the untaken files and what the batches under way have still to run', async () => {
    const s = await setup({});
    await enqueueTests(db.pool, s.sessionId, [
      { path: 'test/a_test.sh', estimateMs: 6_000 },
      { path: 'test/b_test.sh', estimateMs: 4_000 },
      { path: 'test/c_test.sh', estimateMs: null },
    ]);
    expect(await workLeftMs(db.pool, s.sessionId, 1_000)).toEqual({ pendingMs: 11_000, runningMs: 0 });
    const claim = { token: 'lane 0 attempt 1 on host', lane: 0, leaseMs: LEASE_MS };
    await claimFiles(db.pool, s.sessionId, claim, { budgetMs: 10_000, unknownMs: 1_000, maxFiles: 100 });
    // Taken 4 s ago: 6 s of its 10 s are left.
    await db.pool.query(`UPDATE test_queue SET claimed_at = now() - interval '4 seconds' WHERE session_id = $1 AND state = 'claimed'`, [s.sessionId]);
    const left = await workLeftMs(db.pool, s.sessionId, 1_000);
    expect(left.pendingMs).toBe(1_000);
    expect(left.runningMs).toBeGreaterThan(5_000);
    expect(left.runningMs).toBeLessThanOrEqual(6_000);
    // A batch past its estimate has nothing left, not less than nothing.
    await db.pool.query(`UPDATE test_queue SET claimed_at = now() - interval '1 minute' WHERE session_id = $1 AND state = 'claimed'`, [s.sessionId]);
    expect(await workLeftMs(db.pool, s.sessionId, 1_000)).toEqual({ pendingMs: 1_000, runningMs: 0 });
  });
});

describe("a file's estimate from the suite's history", () => {
  /** Another build of the suite `s` (a profile of its own when given) that ran `durations` (path → ms). */
  async function pastBuild(s: { sessionId: number; suiteId: number }, durations: Record<string, number>, profile = 'default'): Promise<void> {
    const { rows } = await db.pool.query<{ id: number }>(
      `INSERT INTO sessions (ci_event_id, suite_id, branch, head, profile_name)
       SELECT ci_event_id, suite_id, branch, head, $2 FROM sessions WHERE id = $1 RETURNING id`,
      [s.sessionId, profile],
    );
    for (const [path, ms] of Object.entries(durations)) {
      await db.pool.query(`INSERT INTO test_results (session_id, path, status, duration_ms) VALUES ($1, $2, 'passed', $3)`, [rows[0]!.id, path, ms]);
    }
  }

  it("is the middle of the file's last three durations: one slow build does not move it", async () => {
    const s = await insertPostSession(db.pool, secretKey);
    for (const ms of [9_000, 1_000, 1_200, 5_000]) await pastBuild(s, { 'test/a_test.sh': ms, 'test/b_test.sh': ms / 10 });
    await pastBuild(s, { 'test/b_test.sh': 700 }); // a build that did not run a
    const known = await recordedDurations(db.pool, s.suiteId, 'default', ['test/a_test.sh', 'test/b_test.sh', 'test/new_test.sh']);
    // a: 1,000, 1,200 and 5,000 (the 9,000 is older); b: 120, 500 and 700.
    expect(Object.fromEntries(known)).toEqual({ 'test/a_test.sh': 1_200, 'test/b_test.sh': 500 });
  });

  it("comes from the profile's own builds, and from the suite's latest builds only", async () => {
    const s = await insertPostSession(db.pool, secretKey);
    await pastBuild(s, { 'test/old_test.sh': 4_000, 'test/a_test.sh': 100 });
    for (let i = 0; i < HISTORY_BUILDS; i++) await pastBuild(s, { 'test/a_test.sh': 2_000 });
    await pastBuild(s, { 'test/a_test.sh': 60_000, 'test/old_test.sh': 60_000 }, 'slow');
    const known = await recordedDurations(db.pool, s.suiteId, 'default', ['test/a_test.sh', 'test/old_test.sh']);
    // old_test.sh last ran before the latest builds: it counts as new (the median file), not as its old time.
    expect(Object.fromEntries(known)).toEqual({ 'test/a_test.sh': 2_000 });
  });
});

describe("a file's failures in the suite's history", () => {
  it('counts the recent builds of the profile it failed, erred or flaked in, beside those that ran it, and gives the last built commit', async () => {
    const s = await insertPostSession(db.pool, secretKey);
    const past = async (results: Record<string, [status: string, flaky?: boolean]>, profile = 'default') => {
      const { rows } = await db.pool.query<{ id: number }>(
        `INSERT INTO sessions (ci_event_id, suite_id, branch, head, profile_name)
         SELECT ci_event_id, suite_id, branch, head, $2 FROM sessions WHERE id = $1 RETURNING id`,
        [s.sessionId, profile],
      );
      for (const [path, [status, flaky]] of Object.entries(results)) {
        await db.pool.query('INSERT INTO test_results (session_id, path, status, duration_ms, flaky) VALUES ($1, $2, $3, 10, $4)', [rows[0]!.id, path, status, flaky === true]);
      }
    };
    await past({ 'test/old_test.sh': ['failed'] }); // older than the latest builds
    for (let i = 0; i < HISTORY_BUILDS - 3; i++) await past({ 'test/a_test.sh': ['passed'], 'test/b_test.sh': ['passed'] });
    await past({ 'test/a_test.sh': ['failed'], 'test/b_test.sh': ['passed', true] });
    await past({ 'test/a_test.sh': ['error'], 'test/b_test.sh': ['passed'], 'test/old_test.sh': ['skipped'] });
    await past({ 'test/a_test.sh': ['passed'], 'test/c_test.sh': ['passed'] });
    await past({ 'test/c_test.sh': ['failed'] }, 'other');
    await db.pool.query("UPDATE suites SET last_built_commit = 'c0ffee' WHERE id = $1", [s.suiteId]);
    const history = await failureHistory(db.pool, s.suiteId, 'default', ['test/a_test.sh', 'test/b_test.sh', 'test/c_test.sh', 'test/old_test.sh']);
    expect(history.lastBuiltCommit).toBe('c0ffee');
    expect(Object.fromEntries(history.failures)).toEqual({
      'test/a_test.sh': { failed: 2, builds: HISTORY_BUILDS },
      'test/b_test.sh': { failed: 1, builds: HISTORY_BUILDS - 1 },
    });
  });
});

describe('a lane whose runner died', () => {
  it('gives its files back when its lease runs out; the late result is not counted', async () => {
    const s = await setup({ 'a_test.sh': {}, 'b_test.sh': {} });
    await enqueueTests(db.pool, s.sessionId, queued(['a_test.sh', 'b_test.sh']));
    // The dead runner's lane took a file, with a lease that has run out, and never renewed it.
    const dead = { token: 'lane 1 attempt 1 on gone-host', lane: 1, leaseMs: 1 };
    expect(await claimFiles(db.pool, s.sessionId, dead, { budgetMs: 0, unknownMs: 1, maxFiles: 1 })).toHaveLength(1);
    await db.pool.query("UPDATE test_queue SET lease_until = now() - interval '1 second' WHERE claimed_by = $1", [dead.token]);

    const out = await runLane(deps(), job(s, 0));
    expect(out.ran).toBe(2);
    expect((await runs(s.log)).sort()).toEqual(['a_test.sh 0', 'b_test.sh 0']);
    // The dead lane's result, arriving late, changes nothing: each file counts once.
    const late = await recordFileResult(db.pool, s.sessionId, dead, { path: 'test/a_test.sh', status: 'failed', exitCode: 1, durationMs: 5, output: '', runner: 'gone-host' });
    expect(late).toEqual({ recorded: false, firstFailure: null });
    expect(await queueCounts(db.pool, s.sessionId)).toMatchObject({ passed: 2, failed: 0, started: 0, notstarted: 0 });
  });

  it("the lane's next attempt takes back what its last attempt held at once", async () => {
    const s = await setup({ 'a_test.sh': {} });
    await enqueueTests(db.pool, s.sessionId, queued(['a_test.sh']));
    // Attempt 1 of lane 0 holds the file under a fresh lease (its runner was just lost).
    await claimFiles(db.pool, s.sessionId, { token: 'lane 0 attempt 1 on gone-host', lane: 0, leaseMs: 60_000 }, { budgetMs: 0, unknownMs: 1, maxFiles: 1 });
    const started = Date.now();
    const out = await runLane(deps(), job(s, 0, { attempt: 2 }));
    expect(out.ran).toBe(1);
    expect(Date.now() - started).toBeLessThan(LEASE_MS);
  });

  it('a stopped lane kills its test and puts the file back, not counted', async () => {
    const s = await setup({ 'slow_test.sh': { sleep: 30 } });
    await enqueueTests(db.pool, s.sessionId, queued(['slow_test.sh']));
    const stop = new AbortController();
    const lane = runLane(deps({ signal: stop.signal }), job(s, 0));
    await eventually('the slow test to start', async () => (await runs(s.log)).length > 0, 5_000);
    expect(await runs(s.log)).toEqual(['slow_test.sh 0']);
    stop.abort();
    expect(await lane).toEqual({ ran: 0, stopped: true });
    expect(await queueCounts(db.pool, s.sessionId)).toMatchObject({ notstarted: 1, started: 0, passed: 0, failed: 0, error: 0 });
  });
});
