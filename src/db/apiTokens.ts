/**
 * SQL of personal API tokens (migration 028): only a token's sha256 is kept; the token is shown
 * once, when it is made.
 */
import type { Db } from './transaction';

export interface ApiTokenRow {
  id: number;
  user_id: number;
  name: string;
  read_only: boolean;
  org_id: number | null;
  org_name: string | null;
  expires_at: Date | null;
  last_used_at: Date | null;
  created_at: Date;
  revoked_at: Date | null;
}

const COLUMNS = `t.id::int AS id, t.user_id::int AS user_id, t.name, t.read_only, t.org_id::int AS org_id, o.name AS org_name,
  t.expires_at, t.last_used_at, t.created_at, t.revoked_at`;

export async function insertApiToken(
  db: Db,
  t: { userId: number; name: string; hash: Buffer; readOnly: boolean; orgId: number | null; expiresAt: Date | null },
): Promise<ApiTokenRow> {
  const { rows } = await db.query<{ id: number }>(
    'INSERT INTO api_tokens (user_id, name, token_hash, read_only, org_id, expires_at) VALUES ($1, $2, $3, $4, $5, $6) RETURNING id::int AS id',
    [t.userId, t.name, t.hash, t.readOnly, t.orgId, t.expiresAt],
  );
  return (await findApiToken(db, t.userId, rows[0]!.id))!;
}

export async function findApiToken(db: Db, userId: number, id: number): Promise<ApiTokenRow | undefined> {
  const { rows } = await db.query<ApiTokenRow>(`SELECT ${COLUMNS} FROM api_tokens t LEFT JOIN orgs o ON o.id = t.org_id WHERE t.user_id = $1 AND t.id = $2`, [
    userId,
    id,
  ]);
  return rows[0];
}

/** A user's tokens, live ones first, newest first. */
export async function listApiTokens(db: Db, userId: number): Promise<ApiTokenRow[]> {
  const { rows } = await db.query<ApiTokenRow>(
    `SELECT ${COLUMNS} FROM api_tokens t LEFT JOIN orgs o ON o.id = t.org_id WHERE t.user_id = $1 ORDER BY t.revoked_at IS NOT NULL, t.id DESC`,
    [userId],
  );
  return rows;
}

/** Revokes one of a user's tokens; undefined when they have no such token. Revoking twice is no error. */
export async function revokeApiToken(db: Db, userId: number, id: number): Promise<ApiTokenRow | undefined> {
  await db.query('UPDATE api_tokens SET revoked_at = coalesce(revoked_at, now()) WHERE user_id = $1 AND id = $2', [userId, id]);
  return findApiToken(db, userId, id);
}

/**
 * The live token with this hash (not revoked, not expired), and notes its use: `last_used_at`
 * moves at most once a minute, so a busy script does not write a row per request.
 */
export async function useApiToken(db: Db, hash: Buffer): Promise<ApiTokenRow | undefined> {
  const { rows } = await db.query<ApiTokenRow>(
    `WITH live AS (
       SELECT id FROM api_tokens WHERE token_hash = $1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())
     ), touched AS (
       UPDATE api_tokens SET last_used_at = now()
        WHERE id IN (SELECT id FROM live) AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')
     )
     SELECT ${COLUMNS} FROM api_tokens t LEFT JOIN orgs o ON o.id = t.org_id WHERE t.id IN (SELECT id FROM live)`,
    [hash],
  );
  return rows[0];
}
