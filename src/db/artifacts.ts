/**
 * SQL of a build's artifacts (migration 018): one row a kept file of one worker's checkout,
 * whose bytes are in the blob store under `store_key`. A row is made before its blob is stored,
 * which reserves its size against the build's limit (workers collect at the same time: one
 * session's reservations are serialized by an advisory lock), and is shown once `stored_at`
 * says the blob is there.
 *
 * Blobs of deleted sessions: the trigger of migration 018 queues each deleted session that had
 * artifacts in `artifact_deletions`, in the deleting transaction; whoever has the store drains
 * the queue (the cleanup activity, the API after a delete) and forgets an entry once its blobs
 * are gone.
 */
import type { Pool } from 'pg';
import { storableText } from './text';
import { foreignKeyViolation, withTransaction, type Db } from './transaction';

export interface ArtifactRow {
  id: number;
  session_id: number;
  worker: number;
  path: string;
  size: number;
  store_key: string;
}

/** Any constant works: the first half of the two-key advisory lock that serializes one session's reservations. */
const RESERVE_LOCK = 0x51_1c_a7;

/** Where a session's artifacts are in the store: `artifacts/<session>`, one folder a session. */
export function artifactPrefix(sessionId: number): string {
  return `artifacts/${sessionId}`;
}

/** The store key of one artifact: its session, worker and row id; nothing of the path the build chose. */
export function artifactKey(sessionId: number, worker: number, id: number): string {
  return `${artifactPrefix(sessionId)}/${worker}/${id}`;
}

export type Reservation =
  | { ok: true; id: number; storeKey: string }
  /** Refused: the build's artifacts would pass a limit (`bytes` or `files` already reserved). */
  | { ok: false; why: 'bytes' | 'files'; bytes: number; files: number }
  /** The session is gone (deleted meanwhile). */
  | { ok: false; why: 'gone' };

/**
 * Reserves room for one file of `size` bytes in the build's artifacts, unless the session's
 * artifacts (every worker's, stored or being stored) would pass `maxBuildBytes` or `maxFiles`.
 */
export async function reserveArtifact(
  pool: Pool,
  a: { sessionId: number; worker: number; path: string; size: number },
  limits: { maxBuildBytes: number; maxFiles: number },
): Promise<Reservation> {
  return withTransaction<Reservation>(pool, async (client) => {
    // A bigint session id folded into the lock's int4 half: two sessions sharing one only wait for each other.
    await client.query('SELECT pg_advisory_xact_lock($1, ($2::bigint % 2147483647)::int)', [RESERVE_LOCK, a.sessionId]);
    const used = await client.query<{ bytes: number; files: number; session: number | null }>(
      `SELECT coalesce(sum(a.size), 0)::float8 AS bytes, count(a.id)::int AS files, (SELECT id FROM sessions WHERE id = $1) AS session
         FROM artifacts a WHERE a.session_id = $1`,
      [a.sessionId],
    );
    const { bytes, files, session } = used.rows[0]!;
    if (session === null) return { ok: false, why: 'gone' };
    if (files + 1 > limits.maxFiles) return { ok: false, why: 'files', bytes, files };
    if (bytes + a.size > limits.maxBuildBytes) return { ok: false, why: 'bytes', bytes, files };
    const { rows } = await client.query<{ id: number; store_key: string }>(
      `INSERT INTO artifacts (id, session_id, worker, path, size, store_key)
       SELECT n, $1, $2, $3, $4, format('%s/%s/%s', $5::text, $2::int, n) FROM nextval(pg_get_serial_sequence('artifacts', 'id')) AS n
       RETURNING id, store_key`,
      [a.sessionId, a.worker, storableText(a.path), a.size, artifactPrefix(a.sessionId)],
    );
    return { ok: true, id: rows[0]!.id, storeKey: rows[0]!.store_key };
  }).catch((err: unknown): Reservation => {
    // Deleted between the check and the insert.
    if (foreignKeyViolation(err)) return { ok: false, why: 'gone' };
    throw err;
  });
}

/** The reserved artifact's blob is in place, `size` bytes long; false when its row is gone meanwhile (its blob then belongs to nobody). */
export async function markArtifactStored(db: Db, id: number, size: number): Promise<boolean> {
  const { rowCount } = await db.query('UPDATE artifacts SET stored_at = now(), size = $2 WHERE id = $1', [id, size]);
  return (rowCount ?? 0) > 0;
}

/** Gives a reservation back (its blob could not be stored). */
export async function dropArtifact(db: Db, id: number): Promise<void> {
  await db.query('DELETE FROM artifacts WHERE id = $1', [id]);
}

/**
 * Deletes a worker's artifacts (a retried worker replaces what its earlier attempt kept);
 * the store keys of their blobs, for the caller to delete.
 */
export async function deleteWorkerArtifacts(db: Db, sessionId: number, worker: number): Promise<string[]> {
  const { rows } = await db.query<{ store_key: string }>('DELETE FROM artifacts WHERE session_id = $1 AND worker = $2 RETURNING store_key', [sessionId, worker]);
  return rows.map((r) => r.store_key);
}

const COLUMNS = 'id, session_id, worker, path, size::float8 AS size, store_key';

/** A session's stored artifacts, by worker and path. */
export async function listSessionArtifacts(db: Db, sessionId: number): Promise<ArtifactRow[]> {
  const { rows } = await db.query<ArtifactRow>(
    `SELECT ${COLUMNS} FROM artifacts WHERE session_id = $1 AND stored_at IS NOT NULL ORDER BY worker, path COLLATE "C", id`,
    [sessionId],
  );
  return rows;
}

/** One stored artifact of the session; undefined when there is none (or it is another session's). */
export async function findArtifact(db: Db, sessionId: number, id: number): Promise<ArtifactRow | undefined> {
  const { rows } = await db.query<ArtifactRow>(`SELECT ${COLUMNS} FROM artifacts WHERE id = $1 AND session_id = $2 AND stored_at IS NOT NULL`, [id, sessionId]);
  return rows[0];
}

/** Up to `limit` deleted sessions whose artifacts' blobs are still to be deleted, oldest first. */
export async function queuedArtifactDeletions(db: Db, limit: number): Promise<number[]> {
  const { rows } = await db.query<{ session_id: number }>('SELECT session_id FROM artifact_deletions ORDER BY queued_at, session_id LIMIT $1', [limit]);
  return rows.map((r) => r.session_id);
}

/** These sessions' blobs are gone from the store. */
export async function forgetArtifactDeletions(db: Db, sessionIds: number[]): Promise<void> {
  if (sessionIds.length === 0) return;
  await db.query('DELETE FROM artifact_deletions WHERE session_id = ANY($1::bigint[])', [sessionIds]);
}

/** How far a drain of the queue got. */
export interface ArtifactDrain {
  /** Deleted sessions whose blobs are now gone, and how many blobs that was. */
  sessions: number;
  blobs: number;
  /** The first failure, which ended the drain (the rest stays queued for the next one); null when none. */
  error: string | null;
}

/**
 * Deletes the blobs of the queued sessions with `deletePrefix` (the store's, given by whoever
 * has one), forgetting each session once its blobs are gone, until the queue is empty or a
 * deletion fails. Safe to run in several processes at once: deleting twice is no error.
 */
export async function drainArtifactDeletions(db: Db, deletePrefix: (prefix: string) => Promise<number>, batch = 100): Promise<ArtifactDrain> {
  const out: ArtifactDrain = { sessions: 0, blobs: 0, error: null };
  for (;;) {
    const ids = await queuedArtifactDeletions(db, batch);
    for (const id of ids) {
      try {
        out.blobs += await deletePrefix(artifactPrefix(id));
      } catch (err) {
        out.error = `session ${id}: ${(err as Error).message}`;
        return out;
      }
      await forgetArtifactDeletions(db, [id]);
      out.sessions += 1;
    }
    if (ids.length < batch) return out;
  }
}
