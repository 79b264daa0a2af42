/**
 * Outgoing webhooks: `/api/v1/orgs/:org/webhooks` and `/api/v1/webhooks/:id`, plus the
 * delivery log. The URL is trimmed (spec §5: trailing whitespace must be removed) and must be
 * http(s) without credentials in it (those go in username/password, where the password is
 * sealed and only ever reported as `has_password`).
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Config } from '../../../config';
import { seal } from '../../../crypto/sealed';
import type { ApiDeps } from '../../app';
import { notFound, parseId, validate } from '../../http';
import { deleteWebhook, findWebhook, insertWebhook, listDeliveries, listWebhooks, updateWebhook, type WebhookFields, type WebhookRow } from '../../store/webhooks';
import { httpUrl, plainText } from './fields';
import { loadOrg } from './orgs';

// zod runs this check even after httpUrl's failed, so it must not assume a parsable URL.
const webhookUrl = httpUrl.refine((s) => !URL.canParse(s) || (new URL(s).username === '' && new URL(s).password === ''), 'must not contain credentials; use username and password');

const fields = {
  url: webhookUrl,
  username: plainText(255).nullish(),
  password: z.string().max(1024).nullish(),
  // The closure's source; QuickJS judges it when it runs (a broken one falls back to the default payload).
  closure: z.string().max(64 * 1024).nullish(),
};

const CreateWebhook = z.strictObject(fields);
const PatchWebhook = z.strictObject({ ...fields, url: webhookUrl.optional(), active: z.boolean().optional() });

const DeliveryPage = z.object({
  limit: z.coerce.number().int().min(1).max(500).default(50),
  before: z.coerce.number().int().min(1).optional(),
});

export const webhookView = (w: WebhookRow) => ({
  id: w.id,
  org_id: w.org_id,
  url: w.url,
  username: w.username,
  has_password: w.has_password,
  closure: w.closure,
  active: w.active,
  created_at: w.created_at,
});

/** `undefined` leaves the password alone, `null` clears it, a string replaces it (sealed). */
function sealPassword(config: Config, password: string | null | undefined): string | null | undefined {
  return typeof password === 'string' ? seal(config.secretKey, password) : password;
}

export function registerWebhookRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const { pool, config } = deps;

  async function loadWebhook(idParam: string): Promise<WebhookRow> {
    const hook = await findWebhook(pool, parseId(idParam, 'webhook'));
    if (!hook) throw notFound('webhook');
    return hook;
  }

  app.post<{ Params: { org: string } }>('/orgs/:org/webhooks', async (request, reply) => {
    const org = await loadOrg(pool, request.params.org);
    const body = validate(CreateWebhook, request.body);
    const hook = await insertWebhook(pool, org.id, {
      url: body.url,
      username: body.username ?? null,
      password_sealed: sealPassword(config, body.password) ?? null,
      closure: body.closure ?? null,
    });
    return reply.code(201).send(webhookView(hook));
  });

  app.get<{ Params: { org: string } }>('/orgs/:org/webhooks', async (request) => {
    const org = await loadOrg(pool, request.params.org);
    return (await listWebhooks(pool, org.id)).map(webhookView);
  });

  app.get<{ Params: { id: string } }>('/webhooks/:id', async (request) => webhookView(await loadWebhook(request.params.id)));

  app.patch<{ Params: { id: string } }>('/webhooks/:id', async (request) => {
    const hook = await loadWebhook(request.params.id);
    const body = validate(PatchWebhook, request.body);
    const patch: Partial<WebhookFields> = {
      url: body.url,
      username: body.username,
      password_sealed: sealPassword(config, body.password),
      closure: body.closure,
      active: body.active,
    };
    const updated = await updateWebhook(pool, hook.id, patch);
    if (!updated) throw notFound('webhook');
    return webhookView(updated);
  });

  app.delete<{ Params: { id: string } }>('/webhooks/:id', async (request, reply) => {
    if (!(await deleteWebhook(pool, parseId(request.params.id, 'webhook')))) throw notFound('webhook');
    return reply.code(204).send();
  });

  app.get<{ Params: { id: string } }>('/webhooks/:id/deliveries', async (request) => {
    const hook = await loadWebhook(request.params.id);
    const page = validate(DeliveryPage, request.query, 'query');
    return listDeliveries(pool, hook.id, page);
  });
}
