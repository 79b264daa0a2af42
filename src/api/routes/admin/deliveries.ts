/**
 * The delivery log, one attempt at a time: `GET /api/v1/deliveries/:id` shows an attempt in
 * full, `POST /api/v1/deliveries/:id/redeliver` sends its event again. A redelivery (like a
 * ping, see webhooks.ts) is one attempt, made in the API process (app/webhooks.ts) and
 * answered with its log row, as deliveryDetailView shows it.
 */
import { parseId } from '../../../app/errors';
import type { FastifyInstance } from 'fastify';
import type { ApiDeps } from '../../deps';
import { loadDelivery, redeliver } from '../../../app/webhooks';
import type { DeliveryDetail } from '../../../db/webhooks';
import { described, documented, errors, IdParams } from '../../openapi/shapes';

const DeliveryDetailDoc = described('the attempt in full: the log row, the payload, the request and the response as sent and received (credentials redacted)');

/** An attempt in full, as the JSON API shows it (the pages show it their own way). */
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

export function registerDeliveryRoutes(app: FastifyInstance, deps: ApiDeps): void {
  app.get<{ Params: { id: string } }>('/deliveries/:id', documented({ tag: 'webhooks', summary: 'Show one delivery attempt', params: IdParams('delivery'), response: { 200: DeliveryDetailDoc, ...errors(404) } }), async (request) => deliveryDetailView(await loadDelivery(deps.pool, parseId(request.params.id, 'delivery'))));

  app.post<{ Params: { id: string } }>('/deliveries/:id/redeliver', documented({ tag: 'webhooks', summary: 'Send an attempt’s event again, now, once', description: 'Same `xid` and payload; answers the new attempt.', params: IdParams('delivery'), response: { 200: DeliveryDetailDoc, ...errors(404, 409) } }), async (request) =>
    deliveryDetailView(await redeliver(deps, await loadDelivery(deps.pool, parseId(request.params.id, 'delivery')))),
  );
}
