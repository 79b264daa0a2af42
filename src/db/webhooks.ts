/** SQL for outgoing webhooks and their delivery log. The sealed password and secret are never selected. */
import type { Db } from './transaction';

export interface WebhookRow {
  id: number;
  org_id: number;
  url: string;
  username: string | null;
  has_password: boolean;
  /** Whether attempts carry Standard Webhooks signatures (a signing secret is set). */
  signed: boolean;
  closure: string | null;
  active: boolean;
  created_at: Date;
}

export interface WebhookFields {
  url: string;
  username: string | null;
  password_sealed: string | null;
  secret_sealed: string | null;
  closure: string | null;
  active: boolean;
}

const COLUMNS =
  'id, org_id, url, username, password_sealed IS NOT NULL AS has_password, secret_sealed IS NOT NULL AS signed, closure, active, created_at';

export async function insertWebhook(db: Db, orgId: number, w: Omit<WebhookFields, 'active'>): Promise<WebhookRow> {
  const { rows } = await db.query<WebhookRow>(
    `INSERT INTO webhooks (org_id, url, username, password_sealed, secret_sealed, closure) VALUES ($1, $2, $3, $4, $5, $6)
     RETURNING ${COLUMNS}`,
    [orgId, w.url, w.username, w.password_sealed, w.secret_sealed, w.closure],
  );
  return rows[0]!;
}

export async function findWebhook(db: Db, id: number): Promise<WebhookRow | undefined> {
  return (await db.query<WebhookRow>(`SELECT ${COLUMNS} FROM webhooks WHERE id = $1`, [id])).rows[0];
}

export async function listWebhooks(db: Db, orgId: number): Promise<WebhookRow[]> {
  return (await db.query<WebhookRow>(`SELECT ${COLUMNS} FROM webhooks WHERE org_id = $1 ORDER BY id`, [orgId])).rows;
}

const FIELDS: readonly (keyof WebhookFields)[] = ['url', 'username', 'password_sealed', 'secret_sealed', 'closure', 'active'];

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

/** A row of the delivery list (DESIGN.md's HTTP contract); the full attempt is DeliveryDetail. */
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

export interface DeliveryFilter {
  limit: number;
  /** An id: only older attempts (the next page). */
  before?: number;
  event?: string;
  outcome?: string;
  session?: number;
}

/** One page of a webhook's delivery attempts, newest first, filtered. */
export async function listDeliveries(db: Db, webhookId: number, page: DeliveryFilter): Promise<DeliveryRow[]> {
  const { rows } = await db.query<DeliveryRow>(
    `SELECT id, xid, event, session_id AS session, attempt, status_code, outcome, error, duration_ms, created_at
       FROM deliveries
      WHERE webhook_id = $1
        AND ($2::bigint IS NULL OR id < $2)
        AND ($3::text IS NULL OR event = $3)
        AND ($4::text IS NULL OR outcome = $4)
        AND ($5::bigint IS NULL OR session_id = $5)
      ORDER BY id DESC
      LIMIT $6`,
    [webhookId, page.before ?? null, page.event ?? null, page.outcome ?? null, page.session ?? null, page.limit],
  );
  return rows;
}

/** One attempt in full: what was sent, what came back, and what the closure did. */
export interface DeliveryDetail extends DeliveryRow {
  webhook_id: number;
  origin: 'event' | 'redeliver' | 'ping';
  url: string | null;
  error_class: string | null;
  next_attempt_at: Date | null;
  closure_outcome: string | null;
  closure_detail: string | null;
  /** The event payload, before any closure. */
  payload: Record<string, unknown> | null;
  request_headers: Record<string, string> | null;
  request_body: string | null;
  response_headers: Record<string, string | string[]> | null;
  response_body: string | null;
}

const DETAIL_COLUMNS = `id, webhook_id, xid, event, session_id AS session, attempt, origin, outcome, status_code, error, error_class,
  duration_ms, created_at, next_attempt_at, url, closure_outcome, closure_detail, payload, request_headers, request_body,
  response_headers, response_body`;

export async function findDelivery(db: Db, id: number): Promise<DeliveryDetail | undefined> {
  return (await db.query<DeliveryDetail>(`SELECT ${DETAIL_COLUMNS} FROM deliveries WHERE id = $1`, [id])).rows[0];
}

/** The highest attempt number logged for one event to one webhook (0 if none). */
export async function lastAttempt(db: Db, webhookId: number, xid: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    'SELECT coalesce(max(attempt), 0)::int AS n FROM deliveries WHERE webhook_id = $1 AND xid = $2',
    [webhookId, xid],
  );
  return rows[0]!.n;
}

/** The ids of an organization's active webhooks, in order. */
export async function listActiveWebhookIds(db: Db, orgId: number): Promise<number[]> {
  const { rows } = await db.query<{ id: number }>('SELECT id FROM webhooks WHERE org_id = $1 AND active ORDER BY id', [orgId]);
  return rows.map((r) => r.id);
}

/**
 * Serialises attempts at one event's delivery to one webhook until the transaction ends, so two
 * at once do not share an attempt number.
 */
export async function lockDeliveryAttempts(db: Db, webhookId: number, xid: string): Promise<void> {
  await db.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`sluice-delivery:${webhookId}:${xid}`]);
}
