/**
 * Outgoing webhooks: `/api/v1/orgs/:org/webhooks` and `/api/v1/webhooks/:id`, their delivery
 * log, a preview of what the closure makes of an event, and a test delivery (ping). What each
 * decides is the application layer's (app/webhooks.ts); here is only HTTP. A signing secret
 * is shown once, in the answer that made it.
 */
import { parseId } from '../../../app/errors';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { ApiDeps } from '../../deps';
import { loadOrg } from '../../../app/orgs';
import {
  CreateWebhook,
  createWebhook,
  DeliveryPage,
  loadWebhook,
  PatchWebhook,
  patchWebhook,
  pingWebhook,
  Preview,
  previewWebhook,
  removeWebhook,
  rotateSecret,
  Webhook,
  webhookDeliveries,
  webhooksOf,
  webhookView,
  type WebhookWithSecret as Saved,
} from '../../../app/webhooks';
import { deliveryDetailView } from './deliveries';
import { described, documented, errors, IdParams, NoBody, OrgParams } from '../../openapi/shapes';

const WebhookWithSecret = Webhook.extend({ secret: z.string().optional().describe('the signing secret, in the answer that made it only') });
const WebhookParams = IdParams('webhook');
const Delivery = described('one delivery attempt as the log keeps it: `id, webhook_id, xid, event, session, attempt, origin, outcome, status_code, error, duration_ms, created_at`, and in full the request and response');

/** The answer that shows a webhook, with its new secret when there is one. */
const withSecretView = ({ hook, secret }: Saved) => (secret === null ? webhookView(hook) : { ...webhookView(hook), secret });

export function registerWebhookRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const { pool } = deps;
  const hookOf = (id: string) => loadWebhook(pool, parseId(id, 'webhook'));

  app.post<{ Params: { org: string } }>('/orgs/:org/webhooks', documented({ tag: 'webhooks', summary: 'Create an outgoing webhook', params: OrgParams, body: CreateWebhook, response: { 201: WebhookWithSecret, ...errors(400, 404) } }), async (request, reply) => {
    const made = await createWebhook(deps, await loadOrg(pool, request.params.org), request.body);
    return reply.code(201).send(withSecretView(made));
  });

  app.get<{ Params: { org: string } }>('/orgs/:org/webhooks', documented({ tag: 'webhooks', summary: 'List an organization’s webhooks', params: OrgParams, response: { 200: z.array(Webhook), ...errors(404) } }), async (request) => {
    const org = await loadOrg(pool, request.params.org);
    return (await webhooksOf(pool, org)).map(webhookView);
  });

  app.get<{ Params: { id: string } }>('/webhooks/:id', documented({ tag: 'webhooks', summary: 'Show a webhook', params: WebhookParams, response: { 200: Webhook, ...errors(404) } }), async (request) => webhookView(await hookOf(request.params.id)));

  app.patch<{ Params: { id: string } }>('/webhooks/:id', documented({ tag: 'webhooks', summary: 'Change a webhook', description: '`sign: true` on one that does not sign yet makes a secret, shown once.', params: WebhookParams, body: PatchWebhook, response: { 200: WebhookWithSecret, ...errors(400, 404) } }), async (request) =>
    withSecretView(await patchWebhook(deps, await hookOf(request.params.id), request.body)),
  );

  app.post<{ Params: { id: string } }>('/webhooks/:id/rotate-secret', documented({ tag: 'webhooks', summary: 'Replace a webhook’s signing secret', description: 'The old one stops at once; the new one is shown once. Turns signing on.', params: WebhookParams, response: { 200: WebhookWithSecret, ...errors(404) } }), async (request) =>
    withSecretView(await rotateSecret(deps, await hookOf(request.params.id))),
  );

  app.delete<{ Params: { id: string } }>('/webhooks/:id', documented({ tag: 'webhooks', summary: 'Delete a webhook with its delivery log', params: WebhookParams, response: { 204: NoBody, ...errors(404) } }), async (request, reply) => {
    await removeWebhook(pool, parseId(request.params.id, 'webhook'));
    return reply.code(204).send();
  });

  app.get<{ Params: { id: string } }>('/webhooks/:id/deliveries', documented({ tag: 'webhooks', summary: 'A webhook’s delivery log', description: 'Every attempt, newest first; `before` (the last `id` of a page) gives the next page.', params: WebhookParams, querystring: DeliveryPage, response: { 200: z.array(Delivery), ...errors(400, 404) } }), async (request) =>
    webhookDeliveries(pool, await hookOf(request.params.id), request.query),
  );

  app.post<{ Params: { id: string } }>('/webhooks/:id/preview', documented({ tag: 'webhooks', summary: 'What the webhook would send for a sample event', description: 'Nothing is sent. `closure` tries one before saving it.', params: WebhookParams, body: Preview, response: { 200: described('`payload` (the default), `result` (what the closure made of it) and `would_send` (headers, body)'), ...errors(400, 404) } }), async (request) =>
    previewWebhook(deps, await hookOf(request.params.id), request.body),
  );

  app.post<{ Params: { id: string } }>('/webhooks/:id/ping', documented({ tag: 'webhooks', summary: 'Send a test event now, once', params: WebhookParams, response: { 200: Delivery, ...errors(404) } }), async (request) =>
    deliveryDetailView(await pingWebhook(deps, await hookOf(request.params.id))),
  );
}
