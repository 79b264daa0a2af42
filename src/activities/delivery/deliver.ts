/**
 * The `deliverWebhook` activity: one attempt to send one event to one receiver, logged in
 * `deliveries` whatever happens. Temporal's retry policy decides when the next attempt runs;
 * this code only tells it whether there should be one (and, from Retry-After, when).
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { Dispatcher } from 'undici';
import type { DeliverInput, DeliverResult } from '../types';
import type { Pool } from '../../db/pool';
import { unseal } from '../../crypto/sealed';
import { redact, sendWebhook, type AttemptResult } from './send';
import type { Cidr } from './ssrf';

export interface DeliverDeps {
  pool: Pool;
  secretKey: Buffer;
  /** Deadline of one HTTP attempt; the activity's startToCloseTimeout must be longer. */
  timeoutMs?: number;
  /**
   * Upper bound on a receiver's Retry-After, so one receiver cannot park a session's events
   * for a day. The worker should pass the retry policy's maximum interval.
   */
  maxRetryAfterMs?: number;
  /**
   * Non-public ranges webhooks may reach despite the SSRF guard: SLUICE_WEBHOOK_ALLOW, parsed
   * with parseAllowList by whoever reads the environment. Default none.
   */
  allow?: readonly Cidr[];
  dispatcher?: Dispatcher;
}

export type DeliveryOutcome = 'delivered' | 'retrying' | 'gave_up' | 'dropped';

/** `ApplicationFailure.type` of what this activity throws, for workflows and the Temporal UI. */
export const FAILURE_TYPES = {
  retrying: 'WebhookDeliveryRetrying',
  gaveUp: 'WebhookDeliveryGaveUp',
  dropped: 'WebhookDeliveryDropped',
} as const;

const DEFAULT_MAX_RETRY_AFTER_MS = 10 * 60_000;

export function createDeliverActivity(deps: DeliverDeps): (input: DeliverInput) => Promise<DeliverResult> {
  return (input) => deliverAttempt(deps, input, Context.current().info.attempt);
}

interface WebhookRow {
  url: string;
  username: string | null;
  password_sealed: string | null;
  active: boolean;
}

/**
 * One attempt, numbered from 1 as Temporal numbers them. Records the attempt, then returns
 * (delivered), or throws an ApplicationFailure: retryable while attempts remain, non-retryable
 * once the receiver refused for good, or the last attempt failed.
 */
export async function deliverAttempt(deps: DeliverDeps, input: DeliverInput, attempt: number): Promise<DeliverResult> {
  const { rows } = await deps.pool.query<WebhookRow>(
    'SELECT url, username, password_sealed, active FROM webhooks WHERE id = $1',
    [input.webhookId],
  );
  const hook = rows[0];
  // Deleted or switched off since the event was queued: nobody to tell, nothing to log.
  if (!hook || !hook.active) return { outcome: 'dropped', statusCode: null };

  let password: string | null = null;
  if (hook.password_sealed !== null) {
    try {
      password = unseal(deps.secretKey, hook.password_sealed);
    } catch {
      // Sent without it, the receiver would only answer 401; no retry can fix a wrong key.
      const result: AttemptResult = {
        kind: 'fatal',
        statusCode: null,
        error: 'cannot unseal the webhook password (was SLUICE_SECRET_KEY changed?)',
        durationMs: 0,
      };
      await record(deps.pool, input, attempt, 'dropped', result);
      throw ApplicationFailure.nonRetryable(describe(input, attempt, result), FAILURE_TYPES.dropped);
    }
  }

  const result = await sendWebhook({
    url: hook.url,
    body: JSON.stringify(input.payload),
    headers: { 'X-Sluice-Event': input.payload.event, 'X-Sluice-Delivery': input.payload.xid },
    username: hook.username,
    password,
    timeoutMs: deps.timeoutMs,
    allow: deps.allow,
    dispatcher: deps.dispatcher,
  });
  // send.ts already redacts; this is the belt to its braces, since rows are shown to org admins.
  if (result.error !== null && password) result.error = redact(result.error, [password]);

  const outcome = outcomeOf(result, attempt, input.maxAttempts);
  await record(deps.pool, input, attempt, outcome, result);

  switch (outcome) {
    case 'delivered':
      return { outcome: 'delivered', statusCode: result.statusCode };
    case 'retrying':
      throw ApplicationFailure.create({
        message: describe(input, attempt, result),
        type: FAILURE_TYPES.retrying,
        nonRetryable: false,
        nextRetryDelay: retryDelay(result, deps.maxRetryAfterMs ?? DEFAULT_MAX_RETRY_AFTER_MS),
      });
    case 'gave_up':
      // Non-retryable, not merely retryable: the log says "gave up", so Temporal must stop
      // here too, even if its policy would allow more attempts than the workflow told us.
      throw ApplicationFailure.nonRetryable(describe(input, attempt, result), FAILURE_TYPES.gaveUp);
    case 'dropped':
      throw ApplicationFailure.nonRetryable(describe(input, attempt, result), FAILURE_TYPES.dropped);
  }
}

/** maxAttempts of 0 (or less) means unlimited, as in Temporal's retry policy. */
export function outcomeOf(result: AttemptResult, attempt: number, maxAttempts: number): DeliveryOutcome {
  if (result.kind === 'delivered') return 'delivered';
  if (result.kind === 'fatal') return 'dropped';
  return maxAttempts > 0 && attempt >= maxAttempts ? 'gave_up' : 'retrying';
}

/** Undefined leaves the policy's exponential backoff in charge. */
function retryDelay(result: AttemptResult, maxMs: number): number | undefined {
  if (result.retryAfterMs === undefined || result.retryAfterMs <= 0) return undefined;
  return Math.min(result.retryAfterMs, maxMs);
}

function describe(input: DeliverInput, attempt: number, result: AttemptResult): string {
  return `webhook ${input.webhookId} ${input.payload.event} (xid ${input.payload.xid}) attempt ${attempt}: ${result.error ?? 'failed'}`;
}

async function record(
  pool: Pool,
  input: DeliverInput,
  attempt: number,
  outcome: DeliveryOutcome,
  result: AttemptResult,
): Promise<void> {
  await pool.query(
    `INSERT INTO deliveries
       (webhook_id, session_id, event, xid, attempt, status_code, outcome, error, duration_ms, request_body)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::jsonb)`,
    [
      input.webhookId,
      input.sessionId,
      input.payload.event,
      input.payload.xid,
      attempt,
      result.statusCode,
      outcome,
      result.error,
      Math.round(result.durationMs),
      JSON.stringify(input.payload),
    ],
  );
}
