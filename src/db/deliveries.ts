/**
 * SQL of a delivery attempt: the webhook as an attempt needs it (sealed credentials included,
 * for the delivery code to unseal) and the log row each attempt writes. The log's readers are
 * in webhooks.ts beside the other webhook queries.
 */
import { storableTextOrNull } from './text';
import type { Db } from './transaction';
import type { WebhookFields } from './webhooks';

/** The webhook with its sealed password and signing secret: for sending, never for showing. */
export async function findWebhookForDelivery(db: Db, id: number): Promise<WebhookFields | undefined> {
  const { rows } = await db.query<WebhookFields>(
    'SELECT url, username, password_sealed, secret_sealed, closure, active FROM webhooks WHERE id = $1',
    [id],
  );
  return rows[0];
}

/** One attempt as the delivery log keeps it (the `deliveries` table). */
export interface DeliveryAttempt {
  webhookId: number;
  sessionId: number | null;
  event: string;
  xid: string;
  attempt: number;
  statusCode: number | null;
  outcome: 'delivered' | 'retrying' | 'gave_up' | 'dropped';
  error: string | null;
  durationMs: number;
  /** The event as Sluice made it, before any closure. */
  payload: unknown;
  requestBody: string | null;
  origin: 'event' | 'redeliver' | 'ping';
  url: string;
  requestHeaders: Record<string, string> | null;
  responseHeaders: Record<string, string | string[]> | null;
  responseBody: string | null;
  errorClass: string | null;
  /** The wait before the next attempt; null when there is none. */
  nextDelayMs: number | null;
  closureOutcome: string | null;
  closureDetail: string | null;
}

/**
 * Writes the attempt's log row; the next attempt is due `nextDelayMs` after it, by the database's
 * clock. An attempt for a session deleted meanwhile (its repository was, app/remove.ts) is logged
 * without it, as the ones before were kept when it went (ON DELETE SET NULL).
 */
export async function insertDeliveryAttempt(db: Db, a: DeliveryAttempt): Promise<{ id: number; nextAttemptAt: Date | null }> {
  const { rows } = await db.query<{ id: number; next_attempt_at: Date | null }>(
    `INSERT INTO deliveries
       (webhook_id, session_id, event, xid, attempt, status_code, outcome, error, duration_ms, payload, request_body,
        origin, url, request_headers, response_headers, response_body, error_class, next_attempt_at, closure_outcome, closure_detail)
     VALUES ($1, (SELECT id FROM sessions WHERE id = $2), $3, $4, $5, $6, $7, $8, $9, $10::jsonb, $11, $12, $13, $14::jsonb, $15::jsonb, $16, $17,
             now() + $18::bigint * interval '1 millisecond', $19, $20)
     RETURNING id, next_attempt_at`,
    [
      a.webhookId,
      a.sessionId,
      a.event,
      a.xid,
      a.attempt,
      a.statusCode,
      a.outcome,
      a.error,
      Math.round(a.durationMs),
      JSON.stringify(a.payload),
      storableTextOrNull(a.requestBody),
      a.origin,
      a.url,
      a.requestHeaders ? JSON.stringify(a.requestHeaders) : null,
      a.responseHeaders ? JSON.stringify(a.responseHeaders) : null,
      storableTextOrNull(a.responseBody),
      a.errorClass,
      a.nextDelayMs,
      a.closureOutcome,
      a.closureDetail,
    ],
  );
  return { id: rows[0]!.id, nextAttemptAt: rows[0]!.next_attempt_at };
}

/**
 * Claims the first attempt of `event` of a session to a webhook (migration 011): true when this
 * caller got it. A claim older than `takeOverAfterMs` with no attempt logged is handed to this
 * caller (its holder died before it could send).
 */
export async function claimFirstAttempt(
  db: Db,
  key: { sessionId: number; webhookId: number; event: string },
  takeOverAfterMs: number,
): Promise<boolean> {
  // A session or webhook deleted meanwhile (app/remove.ts): nobody else will make the attempt.
  const gone = (err: unknown) => {
    if ((err as { code?: string }).code === '23503') return { rows: [{ claimed: true }] };
    throw err;
  };
  const { rows } = await db.query<{ claimed: boolean }>(
    `INSERT INTO first_attempt_claims AS c (session_id, webhook_id, event) VALUES ($1, $2, $3)
     ON CONFLICT (session_id, webhook_id, event) DO UPDATE SET claimed_at = now()
       WHERE c.claimed_at < now() - $4::bigint * interval '1 millisecond'
         AND NOT EXISTS (SELECT 1 FROM deliveries d
                          WHERE d.session_id = c.session_id AND d.webhook_id = c.webhook_id AND d.event = c.event AND d.origin = 'event')
     RETURNING true AS claimed`,
    [key.sessionId, key.webhookId, key.event, takeOverAfterMs],
  ).catch(gone);
  return rows.length > 0;
}

export interface EventAttempts {
  attempts: number;
  /** The last attempt's outcome, status code, payload (the event as first made: its xid) and when the next is due. */
  last: { outcome: DeliveryAttempt['outcome']; statusCode: number | null; payload: unknown; nextAttemptAt: Date | null } | null;
}

/** What the log says of a session's `event` to a webhook so far: how many attempts, and the last one. */
export async function eventAttempts(db: Db, key: { sessionId: number; webhookId: number; event: string }): Promise<EventAttempts> {
  const { rows } = await db.query<{
    attempts: number;
    outcome: DeliveryAttempt['outcome'];
    status_code: number | null;
    payload: unknown;
    next_attempt_at: Date | null;
  }>(
    `SELECT count(*) OVER ()::int AS attempts, outcome, status_code, payload, next_attempt_at FROM deliveries
      WHERE session_id = $1 AND webhook_id = $2 AND event = $3 AND origin = 'event'
      ORDER BY id DESC LIMIT 1`,
    [key.sessionId, key.webhookId, key.event],
  );
  const row = rows[0];
  if (!row) return { attempts: 0, last: null };
  return {
    attempts: row.attempts,
    last: { outcome: row.outcome, statusCode: row.status_code, payload: row.payload, nextAttemptAt: row.next_attempt_at },
  };
}
