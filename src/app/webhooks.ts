/**
 * Outgoing webhooks, as the JSON API and the web pages both decide about them: an
 * organization's receivers (made, changed, their signing secret replaced, deleted), their
 * delivery log, a preview of what the closure makes of an event, and the attempts made by hand
 * (a test event, ping; an attempt's event sent again, redeliver).
 *
 * The URL is trimmed (spec §5: trailing whitespace must be removed) and must be http(s)
 * without credentials in it (those go in username/password, where the password is sealed and
 * only ever reported as `has_password`). A closure is compiled when it is saved: one that does
 * not parse or defines no `transform_payload` is refused. A signing secret (`sign: true`) is
 * shown once, in the answer that made it, and kept sealed.
 *
 * An attempt made by hand is made here, in the API process, with the worker's own machinery
 * (delivery/attempt.ts: closure, signature, SSRF guard, log) and answered with its log row.
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { Config } from '../config';
import { buildPayload, type PayloadContext, type SessionSnapshot } from '../core/payload';
import { reportUrl } from '../core/reportUrl';
import { COUNT_KEYS, EVENTS, type Counts, type EventName } from '../core/types';
import { seal } from '../crypto/sealed';
import { findOrg, findOrgWithFirstRepo, type OrgRow } from '../db/orgs';
import { withTransaction, type Db } from '../db/transaction';
import {
  deleteWebhook,
  findDelivery,
  findWebhook,
  insertWebhook,
  lastAttempt,
  listDeliveries,
  listWebhooks,
  lockDeliveryAttempts,
  updateWebhook,
  type DeliveryDetail,
  type DeliveryRow,
  type WebhookFields,
  type WebhookRow,
} from '../db/webhooks';
import { attemptOnce, type AttemptSpec, type DeliverDeps } from '../delivery/attempt';
import { compileClosure } from '../delivery/closure';
import { composeRequest, type EventPayload, type PingPayload } from '../delivery/compose';
import { REDACTED, redactHeaders } from '../delivery/send';
import { newSigningSecret } from '../delivery/signature';
import type { AppDeps } from './deps';
import { AppError, notFound, validate } from './errors';
import { httpUrl, plainText, withoutCredentials } from './fields';

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

export const CreateWebhook = z.strictObject(fields).meta({
  examples: [
    { url: 'https://hooks.example.com/sluice' },
    { url: 'https://hooks.example.com/sluice', username: 'sluice', password: 'example-password', sign: true },
    { url: 'https://chat.example.com/hooks/builds', closure: 'function transform_payload(p) { return { status: "ok", payload: { text: p.event + ": " + p.status } }; }' },
  ],
});
export const PatchWebhook = z.strictObject({ ...fields, url: webhookUrl.optional(), active: z.boolean().optional() }).meta({ examples: [{ active: false }, { password: null }] });

/** A webhook as the API shows it: never its password or signing secret. */
export const Webhook = z.object({
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

/** Events a delivery can be of: the lifecycle's, and the test event. */
export const DELIVERY_EVENTS = [...EVENTS, 'ping'] as const;

/** What became of an attempt. */
export const DELIVERY_OUTCOMES = ['delivered', 'retrying', 'gave_up', 'dropped'] as const;

export const DeliveryPage = z.object({
  limit: z.coerce.number().int().min(1).max(500).default(50),
  before: z.coerce.number().int().min(1).optional(),
  event: z.enum(DELIVERY_EVENTS).optional(),
  outcome: z.enum(DELIVERY_OUTCOMES).optional(),
  session: z.coerce.number().int().min(1).optional(),
});

export const Preview = z.strictObject({
  event: z.enum(EVENTS).optional(),
  // Try a closure before saving it; the webhook's own otherwise.
  closure: z.string().max(MAX_CLOSURE_CHARS).nullish(),
});

/** A webhook as both front ends show it (Webhook). */
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

/** A closure that does not compile (or defines no transform_payload) is invalid, naming the problem. */
async function checkClosure(closure: string | null | undefined): Promise<void> {
  if (typeof closure !== 'string') return;
  const compiled = await compileClosure(closure);
  if (!compiled.ok) throw new AppError('invalid', compiled.error, 'closure');
}

/** The webhook `id` names, or not found. */
export async function loadWebhook(db: Db, id: number): Promise<WebhookRow> {
  const hook = await findWebhook(db, id);
  if (!hook) throw notFound('webhook');
  return hook;
}

/** An organization's webhooks. */
export const webhooksOf = (db: Db, org: OrgRow): Promise<WebhookRow[]> => listWebhooks(db, org.id);

/** A webhook and, when this call made one, its signing secret: shown once, never again. */
export interface WebhookWithSecret {
  hook: WebhookRow;
  secret: string | null;
}

/** Creates a webhook of `org` from a body of POST /orgs/:org/webhooks: invalid naming a bad field (a closure that does not compile included). */
export async function createWebhook({ pool, config }: Pick<AppDeps, 'pool' | 'config'>, org: OrgRow, input: unknown): Promise<WebhookWithSecret> {
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
export async function patchWebhook({ pool, config }: Pick<AppDeps, 'pool' | 'config'>, hook: WebhookRow, input: unknown): Promise<WebhookWithSecret> {
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
export async function rotateSecret({ pool, config }: Pick<AppDeps, 'pool' | 'config'>, hook: WebhookRow): Promise<WebhookWithSecret & { secret: string }> {
  const secret = newSigningSecret();
  const updated = await updateWebhook(pool, hook.id, { secret_sealed: seal(config.secretKey, secret) });
  if (!updated) throw notFound('webhook');
  return { hook: updated, secret };
}

/** Deletes the webhook `id` names (its delivery log goes with it), or not found. */
export async function removeWebhook(db: Db, id: number): Promise<void> {
  if (!(await deleteWebhook(db, id))) throw notFound('webhook');
}

/** One page of a webhook's delivery log from a query of GET /webhooks/:id/deliveries: invalid naming a bad filter. */
export async function webhookDeliveries(db: Db, hook: WebhookRow, query: unknown): Promise<DeliveryRow[]> {
  return listDeliveries(db, hook.id, validate(DeliveryPage, query, 'query'));
}

/** What the webhook would send for a sample `event`, from a body of POST /webhooks/:id/preview. Nothing is sent. */
export async function previewWebhook({ pool, config }: Pick<AppDeps, 'pool' | 'config'>, hook: WebhookRow, input: unknown) {
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
export async function pingWebhook(deps: Pick<AppDeps, 'pool' | 'config'>, hook: WebhookRow): Promise<DeliveryDetail> {
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

/** What a hand-made attempt needs from the API's configuration: the same allow-list as the workers'. */
function manualDeliverDeps(deps: Pick<AppDeps, 'pool' | 'config'>): DeliverDeps {
  return { pool: deps.pool, secretKey: deps.config.secretKey, allow: deps.config.webhookAllow };
}

/**
 * One attempt asked for by hand: sent even if the webhook is switched off, never retried (a
 * retryable failure is logged as `gave_up`), answered with its log row. Attempts of one event
 * are numbered on from the highest logged, under a lock so two at once do not share a number.
 */
async function manualAttempt(
  deps: Pick<AppDeps, 'pool' | 'config'>,
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

/** The attempt `id` names, or not found. */
export async function loadDelivery(db: Db, id: number): Promise<DeliveryDetail> {
  const d = await findDelivery(db, id);
  if (!d) throw notFound('delivery');
  return d;
}

/** Sends an attempt's event again, now, once (same xid and payload); the new attempt's log row. */
export async function redeliver(deps: Pick<AppDeps, 'pool' | 'config'>, d: DeliveryDetail): Promise<DeliveryDetail> {
  if (!d.payload) throw new AppError('conflict', 'this attempt has no stored payload to send again');
  return manualAttempt(deps, {
    webhookId: d.webhook_id,
    sessionId: d.session,
    payload: d.payload as unknown as EventPayload,
    origin: 'redeliver',
  });
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
