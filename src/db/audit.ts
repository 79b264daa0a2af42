/**
 * SQL of the audit trail (migration 028): every change, stop and rebuild, with who made it,
 * from where and what it changed. Entries are only ever added.
 */
import type { Db } from './transaction';

export interface AuditEntry {
  actor: string;
  userId: number | null;
  tokenId: number | null;
  ip: string | null;
  orgId: number | null;
  action: string;
  target: string;
  details: Record<string, unknown>;
}

export interface AuditRow {
  id: number;
  at: Date;
  actor: string;
  user_id: number | null;
  token_id: number | null;
  ip: string | null;
  org_id: number | null;
  org_name: string | null;
  action: string;
  target: string;
  details: Record<string, unknown>;
}

export async function insertAudit(db: Db, e: AuditEntry): Promise<void> {
  await db.query('INSERT INTO audit_log (actor, user_id, token_id, ip, org_id, action, target, details) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)', [
    e.actor,
    e.userId,
    e.tokenId,
    e.ip,
    e.orgId,
    e.action,
    e.target,
    e.details,
  ]);
}

/**
 * Entries newest first, `limit` of them before id `before` (paging); of these organizations
 * only (null: all, with the installation's own entries).
 */
export async function listAudit(db: Db, q: { orgIds: number[] | null; before?: number; limit: number }): Promise<AuditRow[]> {
  const { rows } = await db.query<AuditRow>(
    `SELECT a.id::int AS id, a.at, a.actor, a.user_id::int AS user_id, a.token_id::int AS token_id, a.ip, a.org_id::int AS org_id, o.name AS org_name,
            a.action, a.target, a.details
       FROM audit_log a LEFT JOIN orgs o ON o.id = a.org_id
      WHERE ($1::bigint[] IS NULL OR a.org_id = ANY($1)) AND ($2::bigint IS NULL OR a.id < $2)
      ORDER BY a.id DESC LIMIT $3`,
    [q.orgIds, q.before ?? null, q.limit],
  );
  return rows;
}
