/**
 * One attempt to send one event to one webhook, logged in `deliveries` whatever happens: load
 * the webhook, unseal its credentials, run its closure, sign, send, log. The Temporal activity
 * (activities/delivery.ts) wraps it and tells Temporal whether to try again; the API uses it as
 * it is for a redelivery or a ping (one attempt, answered with its log row).
 */
import type { Dispatcher } from 'undici';
import { unseal } from '../crypto/sealed';
import { findWebhookForDelivery, insertDeliveryAttempt } from '../db/deliveries';
import type { Db } from '../db/transaction';
import type { WebhookFields } from '../db/webhooks';
import { countDelivery } from '../metrics/counts';
import { nextDelay, outcomeOf, type DeliveryOutcome, type RetrySchedule } from './backoff';
import type { ClosureLimits, ClosureResult } from './closure';
import { composeRequest, type EventPayload } from './compose';
import { redact, sendWebhook, type AttemptResult } from './send';
import type { Cidr } from '../ip/ranges';
import { DELIVERY_ATTEMPT, DELIVERY_ORIGIN, DELIVERY_OUTCOME, sessionAttributes, WEBHOOK_EVENT, WEBHOOK_ID } from '../tracing/attributes';
import { inSpan } from '../tracing/spans';
import { SpanStatusCode } from '@opentelemetry/api';

export interface DeliverDeps {
  /** The pool, or one client (the API holds a transaction around a redelivery). */
  pool: Db;
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
  /**
   * The webhooks read so far, by id, shared by the attempts of one batch (the `received` of a
   * burst's sessions, a squash's): one read per webhook instead of one per attempt.
   */
  webhooks?: Map<number, Promise<WebhookFields | undefined>>;
}

/** The webhook to send to: from the batch's memo when there is one. */
function webhookOf(deps: DeliverDeps, id: number): Promise<WebhookFields | undefined> {
  if (!deps.webhooks) return findWebhookForDelivery(deps.pool, id);
  let found = deps.webhooks.get(id);
  if (!found) {
    found = findWebhookForDelivery(deps.pool, id);
    deps.webhooks.set(id, found);
    // A failed read is not kept: the next attempt reads again.
    found.catch(() => deps.webhooks?.delete(id));
  }
  return found;
}

/** How an attempt came about: a session's event (the workflow), a redelivery, or a ping. */
export type DeliveryOrigin = 'event' | 'redeliver' | 'ping';

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

const DEFAULT_MAX_RETRY_AFTER_MS = 10 * 60_000;

/**
 * One attempt of one event to one webhook, logged. Null when the webhook is gone (or switched
 * off, unless `evenIfInactive`): then nothing is sent and nothing is logged.
 */
export function attemptOnce(deps: DeliverDeps, spec: AttemptSpec): Promise<AttemptDone | null> {
  // A span of its own in the caller's trace (the session's, or the trigger's for `received`):
  // ids, event, attempt and outcome, never the URL or the body.
  const attributes = {
    [WEBHOOK_ID]: spec.webhookId,
    [WEBHOOK_EVENT]: spec.payload.event,
    [DELIVERY_ATTEMPT]: spec.attempt,
    [DELIVERY_ORIGIN]: spec.origin,
    ...(spec.sessionId === null ? {} : sessionAttributes(spec.sessionId)),
  };
  return inSpan(`deliver ${spec.payload.event}`, attributes, async (span) => {
    const done = await attempt(deps, spec);
    span?.setAttributes({
      [DELIVERY_OUTCOME]: done?.outcome ?? 'not sent',
      ...(done?.result.statusCode == null ? {} : { 'http.response.status_code': done.result.statusCode }),
    });
    if (done !== null && done.outcome !== 'delivered') span?.setStatus({ code: SpanStatusCode.ERROR });
    return done;
  });
}

async function attempt(deps: DeliverDeps, spec: AttemptSpec): Promise<AttemptDone | null> {
  const hook = await webhookOf(deps, spec.webhookId);
  if (!hook || (!hook.active && !spec.evenIfInactive)) return null;
  const url = safeUrl(hook.url);

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
    const { id } = await log(deps.pool, spec, 'dropped', result, { url, requestBody: null, closure: null }, null);
    return { id, outcome: 'dropped', result, nextAttemptAt: null };
  }

  const request = await composeRequest(spec.payload, hook.closure, {
    credentials: hook.username !== null,
    secret,
    closureLimits: deps.closureLimits,
  });
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
  const nextDelayMs =
    outcome === 'retrying' ? nextDelay(result, spec.attempt, spec.retry ?? {}, deps.maxRetryAfterMs ?? DEFAULT_MAX_RETRY_AFTER_MS) : null;
  const { id, nextAttemptAt } = await log(deps.pool, spec, outcome, result, { url, requestBody: request.body, closure: request.closure }, nextDelayMs);
  return { id, outcome, result, nextDelayMs: nextDelayMs ?? undefined, nextAttemptAt };
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

async function log(
  db: Db,
  spec: AttemptSpec,
  outcome: DeliveryOutcome,
  result: AttemptResult,
  sent: { url: string; requestBody: string | null; closure: ClosureResult | null },
  nextDelayMs: number | null,
) {
  const closure = sent.closure;
  const row = await insertDeliveryAttempt(db, {
    webhookId: spec.webhookId,
    sessionId: spec.sessionId,
    event: spec.payload.event,
    xid: spec.payload.xid,
    attempt: spec.attempt,
    statusCode: result.statusCode,
    outcome,
    error: result.error,
    durationMs: result.durationMs,
    payload: spec.payload,
    requestBody: sent.requestBody,
    origin: spec.origin,
    url: sent.url,
    requestHeaders: result.requestHeaders ?? null,
    responseHeaders: result.responseHeaders ?? null,
    responseBody: result.responseBody ?? null,
    errorClass: result.kind === 'delivered' ? null : (result.errorClass ?? null),
    nextDelayMs,
    closureOutcome: closure === null ? null : closure.kind === 'ok' ? 'ok' : closure.reason,
    closureDetail: closure?.kind === 'fallback' ? closure.detail : null,
  });
  // Counted once logged, by the process that sent it (the API's `received`, a worker's lane).
  countDelivery({ event: spec.payload.event, outcome, attempt: spec.attempt, origin: spec.origin, durationMs: result.durationMs });
  return row;
}
