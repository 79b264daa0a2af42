/**
 * The delivery log, one attempt at a time: `GET /api/v1/deliveries/:id` shows an attempt in
 * full, `POST /api/v1/deliveries/:id/redeliver` sends its event again. A redelivery (like a
 * ping, see webhooks.ts) is one attempt, made here in the API process with the worker's own
 * machinery (deliver.ts: closure, signature, SSRF guard, log) and answered with its log row.
 */
import type { FastifyInstance } from 'fastify';
import { attemptOnce, type AttemptSpec, type DeliverDeps } from '../../../delivery/attempt';
import type { EventPayload } from '../../../delivery/compose';
import type { ApiDeps } from '../../deps';
import { HttpError, parseId } from '../../http';
import { notFound } from '../../../app/errors';
import { withTransaction, type Db } from '../../../db/transaction';
import { findDelivery, lastAttempt, lockDeliveryAttempts, type DeliveryDetail } from '../../../db/webhooks';
import { described, documented, errors, IdParams } from '../../openapi/shapes';

const DeliveryDetailDoc = described('the attempt in full: the log row, the payload, the request and the response as sent and received (credentials redacted)');

export const deliveryDetailView = (d: DeliveryDetail) => ({
  id: d.id,
  webhook_id: d.webhook_id,
  xid: d.xid,
  event: d.event,
  session: d.session,
  attempt: d.attempt,
  origin: d.origin,
  outcome: d.outcome,
  status_code: d.status_code,
  error: d.error,
  error_class: d.error_class,
  duration_ms: d.duration_ms,
  created_at: d.created_at,
  next_attempt_at: d.next_attempt_at,
  url: d.url,
  closure_outcome: d.closure_outcome,
  closure_detail: d.closure_detail,
  payload: d.payload,
  request_headers: d.request_headers,
  request_body: d.request_body,
  response_headers: d.response_headers,
  response_body: d.response_body,
});

/** What a hand-made attempt needs from the API's configuration: the same allow-list as the workers'. */
export function manualDeliverDeps(deps: ApiDeps): DeliverDeps {
  return { pool: deps.pool, secretKey: deps.config.secretKey, allow: deps.config.webhookAllow };
}

/**
 * One attempt asked for by hand: sent even if the webhook is switched off, never retried (a
 * retryable failure is logged as `gave_up`), answered with its log row. Attempts of one event
 * are numbered on from the highest logged, under a lock so two at once do not share a number.
 */
export async function manualAttempt(
  deps: ApiDeps,
  spec: Omit<AttemptSpec, 'attempt' | 'maxAttempts' | 'evenIfInactive'>,
): Promise<DeliveryDetail> {
  return withTransaction(deps.pool, async (client) => {
    await lockDeliveryAttempts(client, spec.webhookId, spec.payload.xid);
    const attempt = (await lastAttempt(client, spec.webhookId, spec.payload.xid)) + 1;
    const done = await attemptOnce(
      { ...manualDeliverDeps(deps), pool: client },
      { ...spec, attempt, maxAttempts: attempt, evenIfInactive: true },
    );
    if (!done) throw notFound('webhook');
    return (await findDelivery(client, done.id))!;
  });
}

/** The attempt a `:id` path parameter names, or a 404. */
export async function loadDelivery(db: Db, idParam: string): Promise<DeliveryDetail> {
  const d = await findDelivery(db, parseId(idParam, 'delivery'));
  if (!d) throw notFound('delivery');
  return d;
}

/** Sends an attempt's event again, now, once (same xid and payload); the new attempt's log row. */
export async function redeliver(deps: ApiDeps, d: DeliveryDetail): Promise<DeliveryDetail> {
  if (!d.payload) throw new HttpError(409, 'conflict', 'this attempt has no stored payload to send again');
  return manualAttempt(deps, {
    webhookId: d.webhook_id,
    sessionId: d.session,
    payload: d.payload as unknown as EventPayload,
    origin: 'redeliver',
  });
}

export function registerDeliveryRoutes(app: FastifyInstance, deps: ApiDeps): void {
  app.get<{ Params: { id: string } }>('/deliveries/:id', documented({ tag: 'webhooks', summary: 'Show one delivery attempt', params: IdParams('delivery'), response: { 200: DeliveryDetailDoc, ...errors(404) } }), async (request) => deliveryDetailView(await loadDelivery(deps.pool, request.params.id)));

  app.post<{ Params: { id: string } }>('/deliveries/:id/redeliver', documented({ tag: 'webhooks', summary: 'Send an attempt’s event again, now, once', description: 'Same `xid` and payload; answers the new attempt.', params: IdParams('delivery'), response: { 200: DeliveryDetailDoc, ...errors(404, 409) } }), async (request) =>
    deliveryDetailView(await redeliver(deps, await loadDelivery(deps.pool, request.params.id))),
  );
}
