/** SQL for outgoing webhooks and their delivery log. The sealed password is never selected. */
import type { Db } from './db';

export interface WebhookRow {
  id: number;
  org_id: number;
  url: string;
  username: string | null;
  has_password: boolean;
  closure: string | null;
  active: boolean;
  created_at: Date;
}

export interface WebhookFields {
  url: string;
  username: string | null;
  password_sealed: string | null;
  closure: string | null;
  active: boolean;
}

const COLUMNS = 'id, org_id, url, username, password_sealed IS NOT NULL AS has_password, closure, active, created_at';

export async function insertWebhook(db: Db, orgId: number, w: Omit<WebhookFields, 'active'>): Promise<WebhookRow> {
  const { rows } = await db.query<WebhookRow>(
    `INSERT INTO webhooks (org_id, url, username, password_sealed, closure) VALUES ($1, $2, $3, $4, $5) RETURNING ${COLUMNS}`,
    [orgId, w.url, w.username, w.password_sealed, w.closure],
  );
  return rows[0]!;
}

export async function findWebhook(db: Db, id: number): Promise<WebhookRow | undefined> {
  return (await db.query<WebhookRow>(`SELECT ${COLUMNS} FROM webhooks WHERE id = $1`, [id])).rows[0];
}

export async function listWebhooks(db: Db, orgId: number): Promise<WebhookRow[]> {
  return (await db.query<WebhookRow>(`SELECT ${COLUMNS} FROM webhooks WHERE org_id = $1 ORDER BY id`, [orgId])).rows;
}

const FIELDS: readonly (keyof WebhookFields)[] = ['url', 'username', 'password_sealed', 'closure', 'active'];

/** Sets the given fields (`null` clears); column names come from the fixed list above. */
export async function updateWebhook(db: Db, id: number, patch: Partial<WebhookFields>): Promise<WebhookRow | undefined> {
  const columns = FIELDS.filter((c) => patch[c] !== undefined);
  if (columns.length === 0) return findWebhook(db, id);
  const sets = columns.map((c, i) => `${c} = $${i + 2}`).join(', ');
  const { rows } = await db.query<WebhookRow>(`UPDATE webhooks SET ${sets} WHERE id = $1 RETURNING ${COLUMNS}`, [
    id,
    ...columns.map((c) => patch[c]),
  ]);
  return rows[0];
}

export async function deleteWebhook(db: Db, id: number): Promise<boolean> {
  return ((await db.query('DELETE FROM webhooks WHERE id = $1', [id])).rowCount ?? 0) > 0;
}

export interface DeliveryRow {
  id: number;
  xid: string;
  event: string;
  session: number | null;
  attempt: number;
  status_code: number | null;
  outcome: string;
  error: string | null;
  duration_ms: number;
  created_at: Date;
}

/** One page of a webhook's delivery attempts, newest first; `before` is an id to page below. */
export async function listDeliveries(db: Db, webhookId: number, page: { limit: number; before?: number }): Promise<DeliveryRow[]> {
  const { rows } = await db.query<DeliveryRow>(
    `SELECT id, xid, event, session_id AS session, attempt, status_code, outcome, error, duration_ms, created_at
       FROM deliveries
      WHERE webhook_id = $1 AND ($2::bigint IS NULL OR id < $2)
      ORDER BY id DESC
      LIMIT $3`,
    [webhookId, page.before ?? null, page.limit],
  );
  return rows;
}
