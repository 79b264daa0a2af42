/**
 * The `deliverWebhook` activity: one attempt to send one event to one receiver, logged in
 * `deliveries` whatever happens. Temporal's retry policy decides when the next attempt runs;
 * this code only tells it whether there should be one (and, from Retry-After, when).
 *
 * attemptOnce is the machinery of one attempt (load the webhook, run its closure, sign, send,
 * log); the activity wraps it for Temporal, and the API uses it as it is for a redelivery or a
 * ping (one attempt, answered with its log row).
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure, type RetryPolicy } from '@temporalio/common';
import type { Dispatcher } from 'undici';
import type { DeliverInput, DeliverResult } from '../activities/types';
import type { Pool, PoolClient } from '../db/pool';
import type { OutgoingPayload } from '../core/types';
import { unseal } from '../crypto/sealed';
import { runClosure, type ClosureLimits, type ClosureResult } from './closure';
import { redact, sendWebhook, USER_AGENT, type AttemptResult } from './send';
import { signatureHeaders } from './signature';
import type { Cidr } from './ssrf';

export interface DeliverDeps {
  /** The pool, or one client (the API holds a transaction around a redelivery). */
  pool: Pool | PoolClient;
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
  /** Limits of the closure sandbox; its defaults otherwise. */
  closureLimits?: ClosureLimits;
}

export type DeliveryOutcome = 'delivered' | 'retrying' | 'gave_up' | 'dropped';

/** How an attempt came about: a session's event (the workflow), a redelivery, or a ping. */
export type DeliveryOrigin = 'event' | 'redeliver' | 'ping';

/** The test event `POST /api/v1/webhooks/:id/ping` sends. */
export interface PingPayload {
  event: 'ping';
  timestamp: string;
  xid: string;
  webhook_id: number;
  org_name: string;
}

/** What an attempt sends (before any closure): a lifecycle event (spec §2) or a ping. */
export type EventPayload = OutgoingPayload | PingPayload;

/** The numbers of a Temporal retry policy that fix when the next attempt is due. */
export interface RetrySchedule {
  initialIntervalMs?: number;
  backoffCoefficient?: number;
  maximumIntervalMs?: number;
}

/** `ApplicationFailure.type` of what this activity throws, for workflows and the Temporal UI. */
export const FAILURE_TYPES = {
  retrying: 'WebhookDeliveryRetrying',
  gaveUp: 'WebhookDeliveryGaveUp',
  dropped: 'WebhookDeliveryDropped',
} as const;

const DEFAULT_MAX_RETRY_AFTER_MS = 10 * 60_000;

export function createDeliverActivity(deps: DeliverDeps): (input: DeliverInput) => Promise<DeliverResult> {
  return (input) => {
    const info = Context.current().info;
    return deliverAttempt(deps, input, info.attempt, scheduleOf(info.retryPolicy));
  };
}

/** The policy Temporal runs this activity under, as the server sent it (durations in ms). */
function scheduleOf(policy: RetryPolicy | undefined): RetrySchedule | undefined {
  if (!policy) return undefined;
  const ms = (d: RetryPolicy['initialInterval']) => (typeof d === 'number' ? d : undefined);
  return {
    initialIntervalMs: ms(policy.initialInterval),
    backoffCoefficient: policy.backoffCoefficient,
    maximumIntervalMs: ms(policy.maximumInterval),
  };
}

/**
 * One attempt, numbered from 1 as Temporal numbers them. Records the attempt, then returns
 * (delivered), or throws an ApplicationFailure: retryable while attempts remain, non-retryable
 * once the receiver refused for good, or the last attempt failed. `retry` is the policy the
 * attempt runs under, to log when the next attempt is due; Temporal's defaults without it.
 */
export async function deliverAttempt(deps: DeliverDeps, input: DeliverInput, attempt: number, retry?: RetrySchedule): Promise<DeliverResult> {
  const done = await attemptOnce(deps, {
    webhookId: input.webhookId,
    sessionId: input.sessionId,
    payload: input.payload,
    attempt,
    maxAttempts: input.maxAttempts,
    origin: 'event',
    retry,
  });
  // Deleted or switched off since the event was queued: nobody to tell, nothing to log.
  if (!done) return { outcome: 'dropped', statusCode: null };

  const { outcome, result } = done;
  const message = describe(input.webhookId, input.payload, attempt, result);
  switch (outcome) {
    case 'delivered':
      return { outcome: 'delivered', statusCode: result.statusCode };
    case 'retrying':
      throw ApplicationFailure.create({
        message,
        type: FAILURE_TYPES.retrying,
        nonRetryable: false,
        nextRetryDelay: done.nextDelayMs,
      });
    case 'gave_up':
      // Non-retryable, not merely retryable: the log says "gave up", so Temporal must stop
      // here too, even if its policy would allow more attempts than the workflow told us.
      throw ApplicationFailure.nonRetryable(message, FAILURE_TYPES.gaveUp);
    case 'dropped':
      throw ApplicationFailure.nonRetryable(message, FAILURE_TYPES.dropped);
  }
}

export interface AttemptSpec {
  webhookId: number;
  sessionId: number | null;
  payload: EventPayload;
  /** This attempt's number, from 1. */
  attempt: number;
  /** The last attempt's number; 0 (or less) means unlimited, as in Temporal's retry policy. */
  maxAttempts: number;
  origin: DeliveryOrigin;
  retry?: RetrySchedule;
  /** Send even if the webhook is switched off (a redelivery or a ping asked for by hand). */
  evenIfInactive?: boolean;
}

export interface AttemptDone {
  /** The log row's id. */
  id: number;
  outcome: DeliveryOutcome;
  result: AttemptResult;
  /** Outcome `retrying`: the wait before the next attempt (Retry-After, or jittered backoff). */
  nextDelayMs?: number;
  /** When the next attempt is due (outcome `retrying` only). */
  nextAttemptAt: Date | null;
}

interface WebhookRow {
  url: string;
  username: string | null;
  password_sealed: string | null;
  secret_sealed: string | null;
  closure: string | null;
  active: boolean;
}

/**
 * One attempt of one event to one webhook, logged. Null when the webhook is gone (or switched
 * off, unless `evenIfInactive`): then nothing is sent and nothing is logged.
 */
export async function attemptOnce(deps: DeliverDeps, spec: AttemptSpec): Promise<AttemptDone | null> {
  const { rows } = await deps.pool.query<WebhookRow>(
    'SELECT url, username, password_sealed, secret_sealed, closure, active FROM webhooks WHERE id = $1',
    [spec.webhookId],
  );
  const hook = rows[0];
  if (!hook || (!hook.active && !spec.evenIfInactive)) return null;
  const log: LogEntry = { url: safeUrl(hook.url), requestBody: null, closure: null };

  let password: string | null;
  let secret: string | null;
  try {
    password = hook.password_sealed === null ? null : unseal(deps.secretKey, hook.password_sealed);
    secret = hook.secret_sealed === null ? null : unseal(deps.secretKey, hook.secret_sealed);
  } catch {
    // Sent without them, the receiver would only answer 401 or reject the signature; no
    // retry can fix a wrong key.
    const result: AttemptResult = {
      kind: 'fatal',
      statusCode: null,
      error: 'cannot unseal the webhook password or signing secret (was SLUICE_SECRET_KEY changed?)',
      errorClass: 'configuration',
      durationMs: 0,
    };
    const { id } = await record(deps.pool, spec, 'dropped', result, log, null);
    return { id, outcome: 'dropped', result, nextAttemptAt: null };
  }

  const request = await composeRequest(spec.payload, hook.closure, {
    credentials: hook.username !== null,
    secret,
    closureLimits: deps.closureLimits,
  });
  log.requestBody = request.body;
  log.closure = request.closure;

  const result = await sendWebhook({
    url: hook.url,
    body: request.body,
    headers: request.headers,
    username: hook.username,
    password,
    timeoutMs: deps.timeoutMs,
    allow: deps.allow,
    dispatcher: deps.dispatcher,
    redact: [request.headers['webhook-signature'], secret].filter((v): v is string => !!v),
  });
  // send.ts already redacts; this is the belt to its braces, since rows are shown to org admins.
  if (password) {
    if (result.error !== null) result.error = redact(result.error, [password]);
    if (result.responseBody !== undefined) result.responseBody = redact(result.responseBody, [password]);
  }

  const outcome = outcomeOf(result, spec.attempt, spec.maxAttempts);
  // The receiver's Retry-After when it gave one, else the policy's backoff with jitter (so the
  // receivers of a burst of failed events are not all retried in the same instant).
  const retryAfterMs = outcome === 'retrying' ? retryDelay(result, deps.maxRetryAfterMs ?? DEFAULT_MAX_RETRY_AFTER_MS) : undefined;
  const nextDelayMs = outcome === 'retrying' ? (retryAfterMs ?? jittered(backoffDelay(spec.attempt, spec.retry ?? {}))) : null;
  const { id, nextAttemptAt } = await record(deps.pool, spec, outcome, result, log, nextDelayMs);
  return { id, outcome, result, nextDelayMs: nextDelayMs ?? undefined, nextAttemptAt };
}

export interface ComposedRequest {
  /** Every header but Authorization (send.ts adds it from the credentials), lower-case names. */
  headers: Record<string, string>;
  body: string;
  /** What the closure made of the payload; null when the webhook has none. */
  closure: ClosureResult | null;
}

/**
 * Headers that are always ours: a closure's headers of these names (any case) are dropped.
 * Besides these, `Authorization` is ours when the webhook has credentials, and framing and
 * hop-by-hop headers are dropped by the closure sandbox already.
 */
function isOurHeader(lower: string): boolean {
  return lower === 'user-agent' || lower.startsWith('x-sluice-') || lower === 'webhook-id' || lower === 'webhook-timestamp' || lower === 'webhook-signature';
}

/**
 * What one attempt sends: the closure's body and headers when it ran `ok` (its headers under
 * ours), else the default payload as JSON. Signed when the webhook has a secret.
 */
export async function composeRequest(
  payload: EventPayload,
  closure: string | null,
  opts: { credentials: boolean; secret: string | null; closureLimits?: ClosureLimits; now?: Date },
): Promise<ComposedRequest> {
  const ran = closure === null ? null : await runClosure(closure, payload, opts.closureLimits);
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  let body = JSON.stringify(payload);
  if (ran?.kind === 'ok') {
    body = ran.body;
    for (const [name, value] of Object.entries(ran.headers)) {
      const lower = name.toLowerCase();
      if (isOurHeader(lower) || (opts.credentials && lower === 'authorization')) continue;
      headers[lower] = value;
    }
  }
  headers['user-agent'] = USER_AGENT;
  headers['x-sluice-event'] = payload.event;
  headers['x-sluice-delivery'] = payload.xid;
  if (opts.secret !== null) Object.assign(headers, signatureHeaders(opts.secret, payload.xid, body, opts.now));
  return { headers, body, closure: ran };
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

/**
 * `delayMs` spread evenly over ±25%: Temporal's retry policy has no jitter of its own, so the
 * activity sets each next delay itself.
 */
export function jittered(delayMs: number, random: () => number = Math.random): number {
  return Math.round(delayMs * (0.75 + 0.5 * random()));
}

/**
 * The wait after failed attempt `attempt` under a Temporal retry policy: the initial interval
 * times the coefficient to the power attempt - 1, capped at the maximum interval. Temporal's
 * defaults fill what the policy leaves out (1 s, 2, 100 × the initial interval).
 */
export function backoffDelay(attempt: number, retry: RetrySchedule): number {
  const initial = retry.initialIntervalMs ?? 1_000;
  const coefficient = retry.backoffCoefficient ?? 2;
  const maximum = retry.maximumIntervalMs ?? 100 * initial;
  return Math.round(Math.min(maximum, initial * Math.pow(coefficient, Math.max(0, attempt - 1))));
}

function describe(webhookId: number, payload: EventPayload, attempt: number, result: AttemptResult): string {
  return `webhook ${webhookId} ${payload.event} (xid ${payload.xid}) attempt ${attempt}: ${result.error ?? 'failed'}`;
}

/** The URL as logged: without credentials (the API refuses them, but a URL is no place for them anyway). */
function safeUrl(raw: string): string {
  try {
    const u = new URL(raw.trim());
    u.username = '';
    u.password = '';
    return u.toString();
  } catch {
    return raw.trim();
  }
}

/** PostgreSQL text cannot hold NUL; a closure's string body or a receiver's answer may. */
function noNul(text: string | null): string | null {
  return text === null ? null : text.replace(/\0/g, '\uFFFD');
}

interface LogEntry {
  url: string;
  requestBody: string | null;
  closure: ClosureResult | null;
}

async function record(
  pool: Pool | PoolClient,
  spec: AttemptSpec,
  outcome: DeliveryOutcome,
  result: AttemptResult,
  log: LogEntry,
  /** The wait before the next attempt; null when there is none. */
  nextDelayMs: number | null,
): Promise<{ id: number; nextAttemptAt: Date | null }> {
  const closure = log.closure;
  // The next attempt is due that long after the row's own time, both by the database's clock.
  const { rows } = await pool.query<{ id: number; next_attempt_at: Date | null }>(
    `INSERT INTO deliveries
       (webhook_id, session_id, event, xid, attempt, status_code, outcome, error, duration_ms, payload, request_body,
        origin, url, request_headers, response_headers, response_body, error_class, next_attempt_at, closure_outcome, closure_detail)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::jsonb, $11, $12, $13, $14::jsonb, $15::jsonb, $16, $17,
             now() + $18::bigint * interval '1 millisecond', $19, $20)
     RETURNING id, next_attempt_at`,
    [
      spec.webhookId,
      spec.sessionId,
      spec.payload.event,
      spec.payload.xid,
      spec.attempt,
      result.statusCode,
      outcome,
      result.error,
      Math.round(result.durationMs),
      JSON.stringify(spec.payload),
      noNul(log.requestBody),
      spec.origin,
      log.url,
      result.requestHeaders ? JSON.stringify(result.requestHeaders) : null,
      result.responseHeaders ? JSON.stringify(result.responseHeaders) : null,
      noNul(result.responseBody ?? null),
      result.kind === 'delivered' ? null : (result.errorClass ?? null),
      nextDelayMs,
      closure === null ? null : closure.kind === 'ok' ? 'ok' : closure.reason,
      closure?.kind === 'fallback' ? closure.detail : null,
    ],
  );
  return { id: rows[0]!.id, nextAttemptAt: rows[0]!.next_attempt_at };
}
