/**
 * SQL of signed-in browsers (migration 028): the cookie holds a random id, the table its sha256,
 * who it is and when the provider is to be asked again.
 */
import type { Db } from './transaction';

export interface WebSessionRow {
  user_id: number | null;
  name: string;
  provider: string | null;
  /** Sealed with the secret key. */
  refresh_token: string | null;
  refresh_at: Date | null;
  expires_at: Date;
}

/** A browser's session as it is written, but for the hash of its id. */
export interface NewWebSessionRow {
  userId: number | null;
  name: string;
  provider: string | null;
  refreshToken: string | null;
  refreshAt: Date | null;
  expiresAt: Date;
  ip: string;
}

export async function insertWebSession(db: Db, s: NewWebSessionRow & { idHash: Buffer }): Promise<void> {
  await db.query(
    'INSERT INTO web_sessions (id_hash, user_id, name, provider, refresh_token, refresh_at, expires_at, ip) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)',
    [s.idHash, s.userId, s.name, s.provider, s.refreshToken, s.refreshAt, s.expiresAt, s.ip],
  );
}

/** The live session with this id hash; an expired one is deleted on the way. */
export async function findWebSession(db: Db, idHash: Buffer): Promise<WebSessionRow | undefined> {
  const { rows } = await db.query<WebSessionRow & { expired: boolean }>(
    `SELECT user_id::int AS user_id, name, provider, refresh_token, refresh_at, expires_at, expires_at <= now() AS expired FROM web_sessions WHERE id_hash = $1`,
    [idHash],
  );
  const row = rows[0];
  if (row?.expired) {
    await deleteWebSession(db, idHash);
    return undefined;
  }
  return row;
}

/**
 * Claims a session's turn to ask its provider again: one request of the many a page makes at
 * once (providers that rotate refresh tokens refuse the second use of one), and none for
 * `graceMs` after (a provider that does not answer is not asked on every request). The sealed
 * refresh token to use, or undefined when another request has the turn.
 */
export async function claimRefresh(db: Db, idHash: Buffer, graceMs: number): Promise<{ refresh_token: string | null } | undefined> {
  const { rows } = await db.query<{ refresh_token: string | null }>(
    `UPDATE web_sessions SET refresh_at = now() + $2 * interval '1 millisecond' WHERE id_hash = $1 AND refresh_at <= now() RETURNING refresh_token`,
    [idHash, graceMs],
  );
  return rows[0];
}

/** After the provider said yes again: its new refresh token (if it gave one) and the next time to ask. */
export async function refreshedWebSession(db: Db, idHash: Buffer, refreshToken: string | null, refreshAt: Date): Promise<void> {
  await db.query('UPDATE web_sessions SET refresh_token = coalesce($2, refresh_token), refresh_at = $3 WHERE id_hash = $1', [idHash, refreshToken, refreshAt]);
}

export async function deleteWebSession(db: Db, idHash: Buffer): Promise<void> {
  await db.query('DELETE FROM web_sessions WHERE id_hash = $1', [idHash]);
}

/** Sign-out everywhere: every browser of this user. */
export async function deleteWebSessionsOf(db: Db, userId: number): Promise<number> {
  const { rowCount } = await db.query('DELETE FROM web_sessions WHERE user_id = $1', [userId]);
  return rowCount ?? 0;
}

/** The daily cleanup: sessions past their end. */
export async function deleteExpiredWebSessions(db: Db): Promise<number> {
  const { rowCount } = await db.query('DELETE FROM web_sessions WHERE expires_at <= now()');
  return rowCount ?? 0;
}
