/**
 * SQL of the daily retention cleanup (workflows/cleanup.ts): old ended sessions, the triggers
 * no session refers to any more, and old delivery attempts, each deleted in bounded batches
 * (one short statement each) so the cleanup never holds locks for long. A session that is
 * queued or running is never deleted, however old.
 */
import type { Db } from './transaction';

/** Rows one statement deletes at most. */
export const RETENTION_BATCH = 500;

/**
 * Sessions one statement deletes at most: each takes about 75 rows of other tables with it (a
 * year's busy suite: 20 file results, 50 cases, reports, status attempts), so that a statement
 * stays near a tenth of a second (issue 39).
 */
export const SESSION_RETENTION_BATCH = 200;

/**
 * Deletes the rows of `table` whose ids `select` names (a SELECT of the oldest first, `$1` the
 * days, `$2` the limit), locking them as it goes: rows another transaction holds are skipped
 * until the next batch, never waited for.
 */
async function deleteBatch(db: Db, table: 'sessions' | 'ci_events' | 'deliveries', days: number, limit: number, select: string): Promise<number> {
  const { rowCount } = await db.query(`DELETE FROM ${table} WHERE id IN (${select} FOR UPDATE SKIP LOCKED)`, [days, limit]);
  return rowCount ?? 0;
}

/**
 * Deletes up to `limit` sessions that ended more than `days` days ago, with everything recorded
 * of them (test results and their output, JUnit cases and files, the shared list, post-build
 * steps: the foreign keys cascade). A plan's parts go with their parent, never on their own,
 * and a parent goes only once none of its parts is under way. Their delivery attempts stay in
 * the log, without the session, until deleteOldDeliveries. Returns how many were deleted.
 */
export async function deleteOldSessions(db: Db, days: number, limit = SESSION_RETENTION_BATCH): Promise<number> {
  return deleteBatch(db, 'sessions', days, limit, `SELECT s.id FROM sessions s
      WHERE s.status NOT IN ('queued', 'running') AND s.parent_id IS NULL
        AND s.updated_at < now() - make_interval(days => $1::int)
        AND NOT EXISTS (SELECT 1 FROM sessions p WHERE p.parent_id = s.id AND p.status IN ('queued', 'running'))
      ORDER BY s.updated_at LIMIT $2`);
}

/**
 * Deletes up to `limit` triggers received more than `days` days ago that no session refers to
 * any more (their sessions deleted, or none: skipped). Their status URL then answers 404.
 */
export async function deleteOldCiEvents(db: Db, days: number, limit = RETENTION_BATCH): Promise<number> {
  return deleteBatch(db, 'ci_events', days, limit, `SELECT e.id FROM ci_events e
      WHERE e.received_at < now() - make_interval(days => $1::int)
        AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.ci_event_id = e.id)
      ORDER BY e.received_at LIMIT $2`);
}

/** Deletes up to `limit` delivery attempts (pings and redeliveries too) made more than `days` days ago. */
export async function deleteOldDeliveries(db: Db, days: number, limit = RETENTION_BATCH): Promise<number> {
  return deleteBatch(db, 'deliveries', days, limit, `SELECT id FROM deliveries WHERE created_at < now() - make_interval(days => $1::int)
      ORDER BY created_at LIMIT $2`);
}
