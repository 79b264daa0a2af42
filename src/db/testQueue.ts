/**
 * SQL of a build's shared list of test files (queue mode, migration 007). Runners' lanes take
 * files from it, hold each under a lease they renew, and mark it done once; the counts every
 * payload carries are read from it, so they are exact whichever runner ran what.
 */
import type { Pool } from 'pg';
import type { Counts, TestStatus } from '../core/types';
import { storableText } from './text';
import { withTransaction, type Db } from './transaction';

export interface QueuedFile {
  path: string;
  /** Recorded duration in an earlier build, or null for a file never run. */
  estimateMs: number | null;
  /** Why it runs before the usual order (core/firstFailures.ts); absent or null: it does not. */
  first?: string | null;
}

/** How many of the suite's latest builds (of the profile, that ran tests) the estimates come from. */
export const HISTORY_BUILDS = 10;
/** How many of a file's latest durations its estimate is the middle of. */
export const HISTORY_RUNS = 3;

/**
 * Each of `paths`' estimate from earlier builds of the suite (and the same profile, whose
 * command may differ), for ordering the list longest first and sizing batches: the middle of its
 * last HISTORY_RUNS durations in the latest HISTORY_BUILDS builds. One duration swings with what
 * else ran on the machine (on two cores, the same file took 4.3, 5.0, 7.8 and 6.6 s in four
 * builds in a row); the middle of three is steadier, and one build whose runner was busy, or a
 * file that hung until its time-out, no longer skews the next plan alone. Reading only the
 * latest builds keeps the read the same size however long the suite's history grows.
 */
export async function recordedDurations(db: Db, suiteId: number, profileName: string, paths: readonly string[]): Promise<Map<string, number>> {
  const { rows } = await db.query<{ path: string; duration_ms: number }>(
    `WITH recent AS (
       SELECT s.id FROM sessions s
        WHERE s.suite_id = $1 AND s.profile_name = $2 AND EXISTS (SELECT 1 FROM test_results tr WHERE tr.session_id = s.id)
          -- A mapping run's files ran under strace, slower than any other build runs them (issue 40).
          AND NOT EXISTS (SELECT 1 FROM dependency_maps m WHERE m.session_id = s.id)
        ORDER BY s.id DESC LIMIT $4
     ), runs AS (
       SELECT tr.path, tr.duration_ms, row_number() OVER (PARTITION BY tr.path ORDER BY tr.session_id DESC) AS n
         FROM test_results tr
        WHERE tr.session_id IN (SELECT id FROM recent) AND tr.path = ANY($3::text[]) AND tr.status <> 'skipped'
     )
     SELECT path, round(percentile_cont(0.5) WITHIN GROUP (ORDER BY duration_ms))::int AS duration_ms
       FROM runs WHERE n <= $5 GROUP BY path`,
    [suiteId, profileName, paths, HISTORY_BUILDS, HISTORY_RUNS],
  );
  return new Map(rows.map((r) => [r.path, r.duration_ms]));
}

export interface FailureHistory {
  /** The suite's last built commit (what the build's change is measured from), if any. */
  lastBuiltCommit: string | null;
  /** Test file → builds it failed, erred or passed only on a retry in, and builds that ran it; files that never failed are absent. */
  failures: Map<string, { failed: number; builds: number }>;
}

/**
 * What tells which of `paths` are likeliest to fail (core/firstFailures.ts): the suite's last
 * built commit, and how often each file failed in the suite's recent builds (the same
 * HISTORY_BUILDS builds of the profile the estimates come from).
 */
export async function failureHistory(db: Db, suiteId: number, profileName: string, paths: readonly string[]): Promise<FailureHistory> {
  const built = await db.query<{ last_built_commit: string | null }>('SELECT last_built_commit FROM suites WHERE id = $1', [suiteId]);
  const { rows } = await db.query<{ path: string; failed: number; builds: number }>(
    `WITH recent AS (
       SELECT s.id FROM sessions s
        WHERE s.suite_id = $1 AND s.profile_name = $2 AND EXISTS (SELECT 1 FROM test_results tr WHERE tr.session_id = s.id)
        ORDER BY s.id DESC LIMIT $4
     )
     SELECT tr.path, count(*) FILTER (WHERE tr.status IN ('failed', 'error') OR tr.flaky)::int AS failed, count(*)::int AS builds
       FROM test_results tr
      WHERE tr.session_id IN (SELECT id FROM recent) AND tr.path = ANY($3::text[]) AND tr.status <> 'skipped'
      GROUP BY tr.path`,
    [suiteId, profileName, paths, HISTORY_BUILDS],
  );
  return {
    lastBuiltCommit: built.rows[0]?.last_built_commit ?? null,
    failures: new Map(rows.filter((r) => r.failed > 0).map((r) => [r.path, { failed: r.failed, builds: r.builds }])),
  };
}

/**
 * Writes the session's list in the order given, unless it is already there (a retried
 * activity, or another checkout of the same commit, found the same files). Returns its size.
 * `skipped` files (not affected by the change: core/affected.ts) are listed done, as skipped,
 * with their result saying why; the size counts only the files to run.
 */
export async function enqueueTests(pool: Pool, sessionId: number, files: readonly QueuedFile[], skipped: readonly string[] = []): Promise<number> {
  return withTransaction(pool, async (client) => {
    // One writer per session at a time; the second finds the list made.
    await client.query('SELECT pg_advisory_xact_lock(hashtext($1), $2::int)', ['sluice-test-queue', sessionId]);
    const existing = await client.query<{ n: number; made: boolean }>(
      "SELECT count(*) FILTER (WHERE status IS DISTINCT FROM 'skipped')::int AS n, count(*) > 0 AS made FROM test_queue WHERE session_id = $1",
      [sessionId],
    );
    if (existing.rows[0]!.made) return existing.rows[0]!.n;
    if (skipped.length > 0) {
      await client.query(
        `WITH listed AS (
           INSERT INTO test_queue (session_id, path, position, state, status)
           SELECT $1::bigint, path, -ord::int, 'done', 'skipped' FROM unnest($2::text[]) WITH ORDINALITY AS f(path, ord)
           RETURNING path
         )
         INSERT INTO test_results (session_id, path, status, duration_ms, output) SELECT $1, path, 'skipped', 0, $3 FROM listed
         ON CONFLICT (session_id, path) DO NOTHING`,
        [sessionId, skipped, NOT_AFFECTED],
      );
    }
    for (let at = 0; at < files.length; at += 5000) {
      const chunk = files.slice(at, at + 5000);
      await client.query(
        `INSERT INTO test_queue (session_id, path, position, estimate_ms, first_reason)
         SELECT $1::bigint, path, $2::int + ord::int, est, first FROM unnest($3::text[], $4::int[], $5::text[]) WITH ORDINALITY AS f(path, est, first, ord)`,
        [sessionId, at, chunk.map((f) => f.path), chunk.map((f) => f.estimateMs), chunk.map((f) => (f.first ? storableText(f.first) : null))],
      );
    }
    return files.length;
  });
}

/** The output of a file a selecting build left out. */
export const NOT_AFFECTED = '[sluice] not affected: the change touches nothing its run read in the dependency map\n';

export interface Claim {
  /** Who holds the claim: `lane <n> attempt <a> on <runner>`. */
  token: string;
  lane: number;
  leaseMs: number;
}

/**
 * Takes the next files in list order, whether never taken or held by a lease that ran out
 * (its runner died), as many as fit in `budgetMs` by their estimates (`unknownMs` for a file
 * without one), at least one and at most `maxFiles`; with `restBelowMs`, also all the rest when the
 * rest is estimated under it. With `stride` n, every n-th file of the list (the first, the
 * n+1-th, ...) until the budget is spent, then the files passed over in order. Files listed to
 * run first (first_reason) that are still takeable are a claim of their own. Concurrent lanes
 * never take the same file: the UPDATE re-checks each row's state under its row lock.
 */
export async function claimFiles(
  db: Db,
  sessionId: number,
  claim: Claim,
  opts: { budgetMs: number; unknownMs: number; maxFiles: number; restBelowMs?: number; stride?: number },
): Promise<QueuedFile[]> {
  const stride = Math.max(1, Math.floor(opts.stride ?? 1));
  const limit = opts.maxFiles * stride;
  const { rows: listed } = await db.query<{ path: string; estimate_ms: number | null; first: boolean }>(
    `SELECT path, estimate_ms, first_reason IS NOT NULL AS first FROM test_queue
      WHERE session_id = $1 AND (state = 'pending' OR (state = 'claimed' AND lease_until < now()))
      ORDER BY position LIMIT $2`,
    [sessionId, limit],
  );
  if (listed.length === 0) return [];
  // The files listed to run first are a claim of their own: their results are written, and a
  // failure among them told, as soon as they end, not after a batch's share of the rest.
  const head = listed.filter((c) => c.first);
  // Otherwise every stride-th file first, then those passed over: a lane's share is then a slice
  // of the whole list rather than its head.
  const candidates = head.length > 0 ? head : stride === 1 ? listed : [...listed.filter((_, i) => i % stride === 0), ...listed.filter((_, i) => i % stride !== 0)];
  const take: string[] = [];
  let planned = 0;
  for (const c of candidates) {
    const cost = c.estimate_ms ?? opts.unknownMs;
    if (take.length > 0 && (planned + cost > opts.budgetMs || take.length >= opts.maxFiles)) break;
    take.push(c.path);
    planned += cost;
  }
  // What the budget leaves may be too little to be worth a claim (a batch's process start) of
  // its own: a lane that took it last would run it after everyone else had finished.
  const rest = candidates.slice(take.length);
  if (opts.restBelowMs !== undefined && rest.length > 0 && listed.length < limit) {
    if (rest.reduce((sum, c) => sum + (c.estimate_ms ?? opts.unknownMs), 0) < opts.restBelowMs) take.push(...rest.map((c) => c.path));
  }
  const { rows } = await db.query<{ path: string; estimate_ms: number | null }>(
    `UPDATE test_queue SET state = 'claimed', claimed_by = $3, lane = $4, lease_until = now() + $5 * interval '1 millisecond', claimed_at = now()
      WHERE session_id = $1 AND path = ANY($2::text[])
        AND (state = 'pending' OR (state = 'claimed' AND lease_until < now()))
      RETURNING path, estimate_ms, position`,
    [sessionId, take, claim.token, claim.lane, claim.leaseMs],
  );
  const order = new Map(take.map((p, i) => [p, i]));
  return rows.sort((a, b) => order.get(a.path)! - order.get(b.path)!).map((r) => ({ path: r.path, estimateMs: r.estimate_ms }));
}

/** Extends the lane's leases; returns the paths it still holds (a path missing was taken from it). */
export async function renewClaims(db: Db, sessionId: number, claim: Claim): Promise<Set<string>> {
  const { rows } = await db.query<{ path: string }>(
    `UPDATE test_queue SET lease_until = now() + $3 * interval '1 millisecond'
      WHERE session_id = $1 AND claimed_by = $2 AND state = 'claimed' RETURNING path`,
    [sessionId, claim.token, claim.leaseMs],
  );
  return new Set(rows.map((r) => r.path));
}

/** Puts back what the lane holds and has not finished (it was stopped), or what an earlier attempt of the same lane held. */
export async function releaseClaims(db: Db, sessionId: number, match: { token: string } | { lane: number; exceptToken: string }): Promise<number> {
  const { rowCount } =
    'token' in match
      ? await db.query(
          `UPDATE test_queue SET state = 'pending', claimed_by = NULL, lane = NULL, lease_until = NULL
            WHERE session_id = $1 AND claimed_by = $2 AND state = 'claimed'`,
          [sessionId, match.token],
        )
      : await db.query(
          `UPDATE test_queue SET state = 'pending', claimed_by = NULL, lane = NULL, lease_until = NULL
            WHERE session_id = $1 AND lane = $2 AND claimed_by <> $3 AND state = 'claimed'`,
          [sessionId, match.lane, match.exceptToken],
        );
  return rowCount ?? 0;
}

export interface FileResult {
  path: string;
  status: TestStatus;
  exitCode: number | null;
  durationMs: number;
  output: string;
  runner: string;
  /** The batch that ran it (steps/tests/batch.ts); absent: a process of its own. */
  batchId?: number | null;
  /** How many runs its verdict took (retry_failed); 1 by default. */
  attempts?: number;
  /** It passed only on a retry. */
  flaky?: boolean;
  /** When its (last) run began. */
  startedAt?: Date | null;
}

export interface RecordedResults {
  /** The paths recorded: those the lane still held (a path another runner took over is not counted). */
  recorded: Set<string>;
  /** Set when one of these was the build's first failing file: the counts as they stood then. */
  firstFailure: Counts | null;
}

/**
 * Marks files done and stores their results, once each, by the lane holding them, and notes the
 * build's first failure: one statement, one round trip, for any number of files.
 */
export async function recordFileResults(db: Db, sessionId: number, claim: Claim, results: readonly FileResult[]): Promise<RecordedResults> {
  if (results.length === 0) return { recorded: new Set(), firstFailure: null };
  const runner = results[0]!.runner;
  const { rows } = await db.query<{ recorded: string[] | null; first: boolean }>(
    `WITH input AS (
       SELECT * FROM unnest($3::text[], $4::text[], $5::int[], $6::int[], $7::text[], $8::bigint[], $9::int[], $10::bool[], $11::timestamptz[])
         AS r(path, status, exit_code, duration_ms, output, batch_id, attempts, flaky, started_at)
     ), done AS (
       UPDATE test_queue q SET state = 'done', status = i.status, lease_until = NULL
         FROM input i
        WHERE q.session_id = $1 AND q.path = i.path AND q.claimed_by = $2 AND q.state = 'claimed'
        RETURNING q.path
     ), saved AS (
       INSERT INTO test_results (session_id, path, status, exit_code, duration_ms, output, runner, batch_id, attempts, flaky, started_at)
       SELECT $1, i.path, i.status, i.exit_code, i.duration_ms, i.output, $12, i.batch_id, i.attempts, i.flaky, i.started_at
         FROM input i JOIN done d ON d.path = i.path
       ON CONFLICT (session_id, path) DO UPDATE
         SET status = EXCLUDED.status, exit_code = EXCLUDED.exit_code, duration_ms = EXCLUDED.duration_ms,
             output = EXCLUDED.output, runner = EXCLUDED.runner, batch_id = EXCLUDED.batch_id,
             attempts = EXCLUDED.attempts, flaky = EXCLUDED.flaky, started_at = EXCLUDED.started_at, finished_at = now()
       RETURNING path, status
     ), first AS (
       UPDATE sessions SET first_failure = (SELECT path FROM saved WHERE status IN ('failed', 'error') LIMIT 1)
        WHERE id = $1 AND first_failure IS NULL AND EXISTS (SELECT 1 FROM saved WHERE status IN ('failed', 'error'))
        RETURNING 1
     )
     SELECT (SELECT array_agg(path) FROM saved) AS recorded, EXISTS (SELECT 1 FROM first) AS first`,
    [
      sessionId,
      claim.token,
      results.map((r) => r.path),
      results.map((r) => r.status),
      results.map((r) => r.exitCode),
      results.map((r) => Math.round(r.durationMs)),
      // Test output sometimes holds NUL, which PostgreSQL text cannot.
      results.map((r) => storableText(r.output)),
      results.map((r) => r.batchId ?? null),
      results.map((r) => r.attempts ?? 1),
      results.map((r) => r.flaky ?? false),
      results.map((r) => r.startedAt ?? null),
      runner,
    ],
  );
  const { recorded, first } = rows[0]!;
  // The counts just after: a lane finishing meanwhile may be in them; the first failure always is.
  return { recorded: new Set(recorded ?? []), firstFailure: first ? await queueCounts(db, sessionId) : null };
}

export interface RecordedResult {
  /** False when the lane no longer held the file (another runner took it over): not counted. */
  recorded: boolean;
  /** Set when this was the build's first failing file: the counts as they stood then. */
  firstFailure: Counts | null;
}

/** One file's result (recordFileResults for one). */
export async function recordFileResult(db: Db, sessionId: number, claim: Claim, r: FileResult): Promise<RecordedResult> {
  const { recorded, firstFailure } = await recordFileResults(db, sessionId, claim, [r]);
  return { recorded: recorded.has(r.path), firstFailure };
}

/** The work left in a build's list by the files' estimates (a file never run counts as `unknownMs`). */
export interface WorkLeft {
  /** Files no lane has taken yet (or whose lease ran out). */
  pendingMs: number;
  /** What the batches lanes hold now still have to run: each batch's estimate less the time since it was taken. */
  runningMs: number;
}

/** What is left to do in the build's list, for sizing the next batch. */
export async function workLeftMs(db: Db, sessionId: number, unknownMs: number): Promise<WorkLeft> {
  const { rows } = await db.query<{ pending: string | null; running: string | null }>(
    `WITH open AS (
       SELECT claimed_by, coalesce(estimate_ms, $2) AS est, claimed_at,
              state = 'claimed' AND lease_until >= now() AS held
         FROM test_queue WHERE session_id = $1 AND state <> 'done'
     ), held AS (
       SELECT greatest(0, sum(est) - extract(epoch FROM now() - min(claimed_at)) * 1000) AS left_ms
         FROM open WHERE held GROUP BY claimed_by
     )
     SELECT (SELECT sum(est) FROM open WHERE NOT held) AS pending, (SELECT sum(left_ms) FROM held) AS running`,
    [sessionId, unknownMs],
  );
  return { pendingMs: Number(rows[0]?.pending ?? 0), runningMs: Math.round(Number(rows[0]?.running ?? 0)) };
}

export interface QueueProgress {
  /** Files not done yet, wherever they are. */
  unfinished: number;
  /** Files a lane could take now: never taken, or their lease ran out. */
  takeable: number;
}

export async function queueProgress(db: Db, sessionId: number): Promise<QueueProgress> {
  const { rows } = await db.query<QueueProgress>(
    `SELECT count(*) FILTER (WHERE state <> 'done')::int AS unfinished,
            count(*) FILTER (WHERE state = 'pending' OR (state = 'claimed' AND lease_until < now()))::int AS takeable
       FROM test_queue WHERE session_id = $1`,
    [sessionId],
  );
  return rows[0]!;
}

export interface OpenFile {
  path: string;
  status: 'started' | 'notstarted';
  runner: string | null;
  /** 1..N: the worker (lane) holding a started file; null for one not taken. */
  worker: number | null;
  /** Why it runs before the usual order (core/firstFailures.ts); null: it does not. */
  ran_first: string | null;
}

/**
 * The files of the build's list not done yet, in list order: taken by a lane (`started`, as the
 * counts have it, with the runner holding it) or not yet (`notstarted`). The build page shows
 * them beside the files that ended (test_results).
 */
export async function listOpenFiles(db: Db, sessionId: number): Promise<OpenFile[]> {
  const { rows } = await db.query<OpenFile>(
    `SELECT path, CASE WHEN state = 'claimed' THEN 'started' ELSE 'notstarted' END AS status,
            substring(claimed_by FROM ' on (.*)$') AS runner, CASE WHEN state = 'claimed' THEN lane + 1 END AS worker,
            first_reason AS ran_first
       FROM test_queue WHERE session_id = $1 AND state <> 'done' ORDER BY position`,
    [sessionId],
  );
  return rows;
}

/** The build's counts (spec §2 keys) from its list: every file in exactly one bucket. */
export async function queueCounts(db: Db, sessionId: number): Promise<Counts> {
  const { rows } = await db.query<Counts>(
    `SELECT count(*) FILTER (WHERE state = 'pending')::int AS notstarted,
            count(*) FILTER (WHERE state = 'claimed')::int AS started,
            count(*) FILTER (WHERE status = 'passed')::int AS passed,
            count(*) FILTER (WHERE status = 'failed')::int AS failed,
            0 AS pending,
            count(*) FILTER (WHERE status = 'skipped')::int AS skipped,
            count(*) FILTER (WHERE status = 'error')::int AS error
       FROM test_queue WHERE session_id = $1`,
    [sessionId],
  );
  return rows[0]!;
}
