/**
 * SQL of flaky test files (issue 22): a file that failed and then passed on a retry
 * (retry_failed) is recorded passed and `flaky` (migration 020). A build's flaky files are
 * listed with how often each flaked over its suite's last builds, so that flakiness shows as a
 * trend rather than as one lucky retry.
 */
import type { Db } from './transaction';

/** How many of the suite's latest builds the history looks back over (this one included). */
export const FLAKY_WINDOW = 20;

export interface FlakyFileRow {
  path: string;
  /** How many runs its verdict took in this build. */
  attempts: number;
  /** In how many of the suite's last FLAKY_WINDOW builds it was flaky (this one included). */
  flaked: number;
  /** In how many of those builds it ran at all. */
  ran: number;
  /** How many builds the window held (fewer than FLAKY_WINDOW for a young suite). */
  builds: number;
}

/**
 * The build's flaky files, most often flaky first, each with its history over the suite's last
 * `window` builds up to this one that recorded any result (a build stopped before its tests,
 * or a plan's parent, is not one). Index use: sessions (suite_id, id DESC) walks the suite's
 * builds newest first; test_results (session_id, path) finds each file in each of them.
 */
export async function listFlakyFiles(db: Db, sessionId: number, window = FLAKY_WINDOW): Promise<FlakyFileRow[]> {
  const { rows } = await db.query<FlakyFileRow>(
    `WITH flaky AS (
       SELECT path, attempts FROM test_results WHERE session_id = $1 AND flaky
     ), recent AS (
       SELECT s.id FROM sessions s
        WHERE s.suite_id = (SELECT suite_id FROM sessions WHERE id = $1) AND s.id <= $1
          AND EXISTS (SELECT 1 FROM flaky) AND EXISTS (SELECT 1 FROM test_results t WHERE t.session_id = s.id)
        ORDER BY s.id DESC LIMIT $2
     )
     SELECT f.path, f.attempts,
            count(tr.session_id) FILTER (WHERE tr.flaky)::int AS flaked,
            count(tr.session_id)::int AS ran,
            (SELECT count(*) FROM recent)::int AS builds
       FROM flaky f
       LEFT JOIN test_results tr ON tr.path = f.path AND tr.session_id IN (SELECT id FROM recent)
      GROUP BY f.path, f.attempts
      ORDER BY flaked DESC, f.path`,
    [sessionId, window],
  );
  return rows;
}
