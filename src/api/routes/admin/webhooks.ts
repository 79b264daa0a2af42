/**
 * Outgoing webhooks: `/api/v1/orgs/:org/webhooks` and `/api/v1/webhooks/:id`, their delivery
 * log, a preview of what the closure makes of an event, and a test delivery (ping).
 *
 * The URL is trimmed (spec §5: trailing whitespace must be removed) and must be http(s)
 * without credentials in it (those go in username/password, where the password is sealed and
 * only ever reported as `has_password`). A closure is compiled when it is saved: one that does
 * not parse or defines no `transform_payload` is refused. A signing secret (`sign: true`) is
 * shown once, in the answer that made it, and kept sealed.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { compileClosure } from '../../../delivery/closure';
import { composeRequest, type PingPayload } from '../../../delivery/compose';
import { REDACTED, redactHeaders } from '../../../delivery/send';
import { newSigningSecret } from '../../../delivery/signature';
import type { Config } from '../../../config';
import { buildPayload, type PayloadContext, type SessionSnapshot } from '../../../core/payload';
import { COUNT_KEYS, EVENTS, type Counts, type EventName } from '../../../core/types';
import { seal } from '../../../crypto/sealed';
import type { ApiDeps } from '../../deps';
import { HttpError, parseId } from '../../http';
import { notFound, validate } from '../../../app/errors';
import type { Db } from '../../../db/transaction';
import { findOrg, findOrgWithFirstRepo, type OrgRow } from '../../../db/orgs';
import {
  deleteWebhook,
  findWebhook,
  insertWebhook,
  listDeliveries,
  listWebhooks,
  updateWebhook,
  type DeliveryDetail,
  type DeliveryRow,
  type WebhookFields,
  type WebhookRow,
} from '../../../db/webhooks';
import { deliveryDetailView, manualAttempt } from './deliveries';
import { httpUrl, plainText, withoutCredentials } from './fields';
import { loadOrg } from '../../../app/orgs';
import { described, documented, errors, IdParams, NoBody, OrgParams } from '../../openapi/shapes';
import { reportUrl } from '../../../core/reportUrl';

const webhookUrl = httpUrl.refine(withoutCredentials, 'must not contain credentials; use username and password');

const MAX_CLOSURE_CHARS = 64 * 1024;

const fields = {
  url: webhookUrl,
  username: plainText(255).nullish(),
  password: z.string().max(1024).nullish(),
  // The closure's source; compiled on save (checkClosure), run in QuickJS on every event.
  closure: z.string().max(MAX_CLOSURE_CHARS).nullish(),
  // Sign every attempt (Standard Webhooks) with a secret made now and shown once.
  sign: z.boolean().optional(),
};

const CreateWebhook = z.strictObject(fields).meta({
  examples: [
    { url: 'https://hooks.example.com/sluice' },
    { url: 'https://hooks.example.com/sluice', username: 'sluice', password: 'example-password', sign: true },
    { url: 'https://chat.example.com/hooks/builds', closure: 'function transform_payload(p) { return { status: "ok", payload: { text: p.event + ": " + p.status } }; }' },
  ],
});
const PatchWebhook = z.strictObject({ ...fields, url: webhookUrl.optional(), active: z.boolean().optional() }).meta({ examples: [{ active: false }, { password: null }] });

const Webhook = z.object({
  id: z.number().int(),
  org_id: z.number().int(),
  url: z.string(),
  username: z.string().nullable(),
  has_password: z.boolean(),
  signed: z.boolean().describe('attempts carry Standard Webhooks signatures'),
  closure: z.string().nullable(),
  active: z.boolean(),
  created_at: z.date(),
});
const WebhookWithSecret = Webhook.extend({ secret: z.string().optional().describe('the signing secret, in the answer that made it only') });
const WebhookParams = IdParams('webhook');
const Delivery = described('one delivery attempt as the log keeps it: `id, webhook_id, xid, event, session, attempt, origin, outcome, status_code, error, duration_ms, created_at`, and in full the request and response');

/** Events a delivery can be of: the lifecycle's, and the test event. */
export const DELIVERY_EVENTS = [...EVENTS, 'ping'] as const;

/** What became of an attempt. */
export const DELIVERY_OUTCOMES = ['delivered', 'retrying', 'gave_up', 'dropped'] as const;

const DeliveryPage = z.object({
  limit: z.coerce.number().int().min(1).max(500).default(50),
  before: z.coerce.number().int().min(1).optional(),
  event: z.enum(DELIVERY_EVENTS).optional(),
  outcome: z.enum(DELIVERY_OUTCOMES).optional(),
  session: z.coerce.number().int().min(1).optional(),
});

const Preview = z.strictObject({
  event: z.enum(EVENTS).optional(),
  // Try a closure before saving it; the webhook's own otherwise.
  closure: z.string().max(MAX_CLOSURE_CHARS).nullish(),
});

export const webhookView = (w: WebhookRow): z.output<typeof Webhook> => ({
  id: w.id,
  org_id: w.org_id,
  url: w.url,
  username: w.username,
  has_password: w.has_password,
  signed: w.signed,
  closure: w.closure,
  active: w.active,
  created_at: w.created_at,
});

/** `undefined` leaves the password alone, `null` clears it, a string replaces it (sealed). */
function sealPassword(config: Config, password: string | null | undefined): string | null | undefined {
  return typeof password === 'string' ? seal(config.secretKey, password) : password;
}

/** A closure that does not compile (or defines no transform_payload) is a 400 naming the problem. */
async function checkClosure(closure: string | null | undefined): Promise<void> {
  if (typeof closure !== 'string') return;
  const compiled = await compileClosure(closure);
  if (!compiled.ok) throw new HttpError(400, 'invalid request', compiled.error, 'closure');
}

/** The webhook a `:id` path parameter names, or a 404. */
export async function loadWebhook(db: Db, idParam: string): Promise<WebhookRow> {
  const hook = await findWebhook(db, parseId(idParam, 'webhook'));
  if (!hook) throw notFound('webhook');
  return hook;
}

/** A webhook and, when this call made one, its signing secret: shown once, never again. */
export interface WebhookWithSecret {
  hook: WebhookRow;
  secret: string | null;
}

/** The answer that shows a webhook, with its new secret when there is one. */
const withSecretView = ({ hook, secret }: WebhookWithSecret) => (secret === null ? webhookView(hook) : { ...webhookView(hook), secret });

/** Creates a webhook of `org` from a body of POST /orgs/:org/webhooks: a 400 naming a bad field (a closure that does not compile included). */
export async function createWebhook({ pool, config }: ApiDeps, org: OrgRow, input: unknown): Promise<WebhookWithSecret> {
  const body = validate(CreateWebhook, input);
  await checkClosure(body.closure);
  const secret = body.sign ? newSigningSecret() : null;
  const hook = await insertWebhook(pool, org.id, {
    url: body.url,
    username: body.username ?? null,
    password_sealed: sealPassword(config, body.password) ?? null,
    secret_sealed: secret === null ? null : seal(config.secretKey, secret),
    closure: body.closure ?? null,
  });
  return { hook, secret };
}

/** Changes a webhook from a body of PATCH /webhooks/:id; `sign: true` on one without a secret makes one. */
export async function patchWebhook({ pool, config }: ApiDeps, hook: WebhookRow, input: unknown): Promise<WebhookWithSecret> {
  const body = validate(PatchWebhook, input);
  await checkClosure(body.closure);
  // `sign: true` on a webhook that signs already keeps its secret (rotate-secret replaces it).
  const secret = body.sign === true && !hook.signed ? newSigningSecret() : null;
  const patch: Partial<WebhookFields> = {
    url: body.url,
    username: body.username,
    password_sealed: sealPassword(config, body.password),
    secret_sealed: secret !== null ? seal(config.secretKey, secret) : body.sign === false ? null : undefined,
    closure: body.closure,
    active: body.active,
  };
  const updated = await updateWebhook(pool, hook.id, patch);
  if (!updated) throw notFound('webhook');
  return { hook: updated, secret };
}

/** A new signing secret, replacing the old one at once; shown once. Turns signing on. */
export async function rotateSecret({ pool, config }: ApiDeps, hook: WebhookRow): Promise<WebhookWithSecret & { secret: string }> {
  const secret = newSigningSecret();
  const updated = await updateWebhook(pool, hook.id, { secret_sealed: seal(config.secretKey, secret) });
  if (!updated) throw notFound('webhook');
  return { hook: updated, secret };
}

/** Deletes the webhook a `:id` path parameter names (its delivery log goes with it), or a 404. */
export async function removeWebhook(db: Db, idParam: string): Promise<void> {
  if (!(await deleteWebhook(db, parseId(idParam, 'webhook')))) throw notFound('webhook');
}

/** One page of a webhook's delivery log from a query of GET /webhooks/:id/deliveries: a 400 naming a bad filter. */
export async function webhookDeliveries(db: Db, hook: WebhookRow, query: unknown): Promise<DeliveryRow[]> {
  return listDeliveries(db, hook.id, validate(DeliveryPage, query, 'query'));
}

/** What the webhook would send for a sample `event`, from a body of POST /webhooks/:id/preview. Nothing is sent. */
export async function previewWebhook({ pool, config }: ApiDeps, hook: WebhookRow, input: unknown) {
  const body = validate(Preview, input ?? {});
  const closure = body.closure === undefined ? hook.closure : body.closure;
  const payload = await samplePayload(pool, config, hook.org_id, body.event ?? 'stop');
  const composed = await composeRequest(payload, closure, {
    credentials: hook.username !== null,
    // A throwaway secret: the signature is shown redacted, as in the log, so only its presence counts.
    secret: hook.signed ? newSigningSecret() : null,
  });
  const headers = { ...composed.headers, ...(hook.username !== null ? { authorization: REDACTED } : {}) };
  return { payload, result: composed.closure, would_send: { headers: redactHeaders(headers), body: composed.body } };
}

/** Sends a test event to the webhook now, once; its log row. */
export async function pingWebhook(deps: ApiDeps, hook: WebhookRow): Promise<DeliveryDetail> {
  const org = await findOrg(deps.pool, String(hook.org_id));
  const payload: PingPayload = {
    event: 'ping',
    timestamp: new Date().toISOString(),
    xid: randomUUID(),
    webhook_id: hook.id,
    org_name: org?.name ?? '',
  };
  return manualAttempt(deps, { webhookId: hook.id, sessionId: null, payload, origin: 'ping' });
}

export function registerWebhookRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const { pool } = deps;

  app.post<{ Params: { org: string } }>('/orgs/:org/webhooks', documented({ tag: 'webhooks', summary: 'Create an outgoing webhook', params: OrgParams, body: CreateWebhook, response: { 201: WebhookWithSecret, ...errors(400, 404) } }), async (request, reply) => {
    const made = await createWebhook(deps, await loadOrg(pool, request.params.org), request.body);
    return reply.code(201).send(withSecretView(made));
  });

  app.get<{ Params: { org: string } }>('/orgs/:org/webhooks', documented({ tag: 'webhooks', summary: 'List an organization’s webhooks', params: OrgParams, response: { 200: z.array(Webhook), ...errors(404) } }), async (request) => {
    const org = await loadOrg(pool, request.params.org);
    return (await listWebhooks(pool, org.id)).map(webhookView);
  });

  app.get<{ Params: { id: string } }>('/webhooks/:id', documented({ tag: 'webhooks', summary: 'Show a webhook', params: WebhookParams, response: { 200: Webhook, ...errors(404) } }), async (request) => webhookView(await loadWebhook(pool, request.params.id)));

  app.patch<{ Params: { id: string } }>('/webhooks/:id', documented({ tag: 'webhooks', summary: 'Change a webhook', description: '`sign: true` on one that does not sign yet makes a secret, shown once.', params: WebhookParams, body: PatchWebhook, response: { 200: WebhookWithSecret, ...errors(400, 404) } }), async (request) =>
    withSecretView(await patchWebhook(deps, await loadWebhook(pool, request.params.id), request.body)),
  );

  app.post<{ Params: { id: string } }>('/webhooks/:id/rotate-secret', documented({ tag: 'webhooks', summary: 'Replace a webhook’s signing secret', description: 'The old one stops at once; the new one is shown once. Turns signing on.', params: WebhookParams, response: { 200: WebhookWithSecret, ...errors(404) } }), async (request) =>
    withSecretView(await rotateSecret(deps, await loadWebhook(pool, request.params.id))),
  );

  app.delete<{ Params: { id: string } }>('/webhooks/:id', documented({ tag: 'webhooks', summary: 'Delete a webhook with its delivery log', params: WebhookParams, response: { 204: NoBody, ...errors(404) } }), async (request, reply) => {
    await removeWebhook(pool, request.params.id);
    return reply.code(204).send();
  });

  app.get<{ Params: { id: string } }>('/webhooks/:id/deliveries', documented({ tag: 'webhooks', summary: 'A webhook’s delivery log', description: 'Every attempt, newest first; `before` (the last `id` of a page) gives the next page.', params: WebhookParams, querystring: DeliveryPage, response: { 200: z.array(Delivery), ...errors(400, 404) } }), async (request) =>
    webhookDeliveries(pool, await loadWebhook(pool, request.params.id), request.query),
  );

  app.post<{ Params: { id: string } }>('/webhooks/:id/preview', documented({ tag: 'webhooks', summary: 'What the webhook would send for a sample event', description: 'Nothing is sent. `closure` tries one before saving it.', params: WebhookParams, body: Preview, response: { 200: described('`payload` (the default), `result` (what the closure made of it) and `would_send` (headers, body)'), ...errors(400, 404) } }), async (request) =>
    previewWebhook(deps, await loadWebhook(pool, request.params.id), request.body),
  );

  app.post<{ Params: { id: string } }>('/webhooks/:id/ping', documented({ tag: 'webhooks', summary: 'Send a test event now, once', params: WebhookParams, response: { 200: Delivery, ...errors(404) } }), async (request) =>
    deliveryDetailView(await pingWebhook(deps, await loadWebhook(pool, request.params.id))),
  );
}

/**
 * A realistic payload of `event` for a preview: built by the same code as real events, with
 * the organization's first repository (or a made-up one) and a build that passed, or failed
 * for `first-fail`.
 */
async function samplePayload(db: Db, config: Config, orgId: number, event: EventName) {
  const first = await findOrgWithFirstRepo(db, orgId);
  const orgName = first?.org_name ?? 'example';
  const repoName = first?.name ?? 'example';
  const session = 1234;
  const ctx: PayloadContext = {
    sessionId: session,
    guid: randomUUID(),
    parentSession: null,
    url: reportUrl(config.baseUrl, session, 'sample-token'),
    profileName: 'default',
    branch: 'master',
    ref: null,
    workers: 1,
    repo: { name: repoName, url: first?.pull_url ?? `git@git.example.com:${orgName}/${repoName}.git`, orgName },
  };
  const now = Date.now() / 1000;
  const keys = ['ci_received_at', 'queue_first_seen_at', 'queue_first_allowed_at', 'workers_assigned_at', 'setup', 'exec', 'post_build', 'done'];
  const upTo = { received: 2, start: 4, test: 6, 'first-fail': 6, stop: 8 }[event];
  const timing = Object.fromEntries(keys.slice(0, upTo).map((k, i) => [k, Math.round((now - 60 + i * 5) * 1000) / 1000]));
  const counts = (c: Partial<Counts>): Counts => ({ ...Object.fromEntries(COUNT_KEYS.map((k) => [k, 0])), ...c }) as Counts;
  const snapshots: Record<EventName, Omit<SessionSnapshot, 'timing' | 'stoppedBy'>> = {
    received: { status: 'queued', counts: counts({}), commitId: null, committers: [] },
    start: { status: 'running', counts: counts({}), commitId: null, committers: [] },
    test: { status: 'running', counts: counts({ notstarted: 3 }), commitId: 'f'.repeat(40), committers: ['dev@example.com'] },
    'first-fail': { status: 'running', counts: counts({ passed: 1, failed: 1, notstarted: 1 }), commitId: 'f'.repeat(40), committers: ['dev@example.com'] },
    stop: { status: 'passed', counts: counts({ passed: 3 }), commitId: 'f'.repeat(40), committers: ['dev@example.com'] },
  };
  return buildPayload(event, ctx, { ...snapshots[event], timing, stoppedBy: null }, randomUUID(), new Date());
}
