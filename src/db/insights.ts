/**
 * SQL of a suite's history at a glance (issue 37): its last builds with their times, its slowest
 * files and the tests that flaked or failed most across those builds. Every query is bounded by
 * the last `window` ended builds of the suite, so its cost does not grow with its history.
 */
import type { Db } from './transaction';

export interface InsightBuildRow {
  id: number;
  status: string;
  branch: string;
  created_at: Date;
  timing: Record<string, number>;
}

/** The suite's last `window` ended builds (plans' parts included), newest first. */
export async function recentBuilds(db: Db, suiteId: number, window: number): Promise<InsightBuildRow[]> {
  const { rows } = await db.query<InsightBuildRow & { id: string }>(
    `SELECT id, status, branch, created_at, timing FROM sessions
      WHERE suite_id = $1 AND status IN ('passed', 'failed', 'error', 'stopped')
      ORDER BY id DESC LIMIT $2`,
    [suiteId, window],
  );
  return rows.map((r) => ({ ...r, id: Number(r.id) }));
}

export interface SlowFileRow {
  path: string;
  /** Median duration over the builds that ran it. */
  median_ms: number;
  last_ms: number;
  runs: number;
}

/** The files that took longest, by their median over `sessions`. */
export async function slowestFiles(db: Db, sessions: readonly number[], limit: number): Promise<SlowFileRow[]> {
  const { rows } = await db.query<SlowFileRow>(
    `SELECT path, round(percentile_cont(0.5) WITHIN GROUP (ORDER BY duration_ms))::int AS median_ms,
            (array_agg(duration_ms ORDER BY session_id DESC))[1]::int AS last_ms, count(*)::int AS runs
       FROM test_results WHERE session_id = ANY($1::bigint[]) AND duration_ms IS NOT NULL
      GROUP BY path ORDER BY median_ms DESC, path LIMIT $2`,
    [sessions, limit],
  );
  return rows;
}

export interface TestHistoryRow {
  test_file: string | null;
  classname: string;
  name: string;
  /** Builds where it flaked (failed, then passed on a retry), or failed, as asked. */
  count: number;
  /** Builds of the window that ran it. */
  ran: number;
  /** Those builds, newest first (at most 20). */
  sessions: number[];
}

/**
 * The tests that flaked (`kind` flaky) or failed (`failing`: failed or erred) in most of
 * `sessions`, with how many of them ran the test and which builds it was.
 */
export async function testsThat(db: Db, kind: 'flaky' | 'failing', sessions: readonly number[], limit: number): Promise<TestHistoryRow[]> {
  const hit = kind === 'flaky' ? 'flaky' : `status IN ('failed', 'error')`;
  const { rows } = await db.query<TestHistoryRow & { sessions: string[] }>(
    `WITH hits AS (
       SELECT test_file, classname, name, count(DISTINCT session_id)::int AS count,
              (array_agg(DISTINCT session_id ORDER BY session_id DESC))[1:20] AS sessions
         FROM test_cases WHERE session_id = ANY($1::bigint[]) AND ${hit}
        GROUP BY test_file, classname, name
        ORDER BY count DESC, classname, name LIMIT $2
     )
     SELECT h.test_file, h.classname, h.name, h.count, h.sessions,
            (SELECT count(DISTINCT c.session_id)::int FROM test_cases c
              WHERE c.session_id = ANY($1::bigint[]) AND c.classname = h.classname AND c.name = h.name
                AND c.test_file IS NOT DISTINCT FROM h.test_file) AS ran
       FROM hits h ORDER BY h.count DESC, h.classname, h.name`,
    [sessions, limit],
  );
  return rows.map((r) => ({ ...r, sessions: r.sessions.map(Number) }));
}

export interface TestRunRow {
  session_id: number;
  status: string;
  time: number | null;
  flaky: boolean;
  muted: boolean;
}

/** One test (classname and name) in each of `sessions` that ran it, newest first. */
export async function testRuns(db: Db, sessions: readonly number[], test: { classname: string; name: string }): Promise<TestRunRow[]> {
  const { rows } = await db.query<TestRunRow & { session_id: string }>(
    `SELECT DISTINCT ON (session_id) session_id, status, time, flaky, muted FROM test_cases
      WHERE session_id = ANY($1::bigint[]) AND classname = $2 AND name = $3
      ORDER BY session_id DESC, id DESC`,
    [sessions, test.classname, test.name],
  );
  return rows.map((r) => ({ ...r, session_id: Number(r.session_id) }));
}
