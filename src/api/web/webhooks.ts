/**
 * An organization's Web Hooks page (`/orgs/:org/webhooks`): its receivers, a form to add one,
 * and under each an edit form whose closure can be previewed before it is saved (the page
 * comes back with the preview beside the editor), Ping, Rotate secret and Delete. A signing
 * secret made by a form is shown once, in that POST's own answer, so it never travels in a
 * URL or a cookie. Then a webhook's delivery log (`/webhooks/:id/deliveries`) and one attempt
 * in full (`/deliveries/:id`) with Redeliver. Everything acts through the application layer
 * (app/webhooks.ts), as the JSON API does.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { EVENTS } from '../../core/types';
import type { DeliveryDetail, WebhookRow } from '../../db/webhooks';
import type { OrgRow } from '../../db/orgs';
import { parseId } from '../../app/errors';
import { asHttpError } from '../http';
import { loadOrg } from '../../app/orgs';
import {
  createWebhook,
  DELIVERY_EVENTS,
  DELIVERY_OUTCOMES,
  loadDelivery,
  loadWebhook,
  patchWebhook,
  pingWebhook,
  previewWebhook,
  redeliver,
  removeWebhook,
  rotateSecret,
  webhookDeliveries,
  webhooksOf,
  webhookView,
  type WebhookWithSecret,
} from '../../app/webhooks';
import { checked, formatDuration, formatTime, formFields, given, notFoundPage, orNull, page, tryAction, type FormError, type WebScope } from './pages';
import type { SignedIn } from './signIn';

/** Attempts per page of the delivery log. */
const LOG_PAGE = 50;

/** A form shown again as it was typed (never its password), with what was wrong, if anything. */
interface TypedForm {
  /** `new`, or `hook:<id>`. */
  form: string;
  values: Record<string, string>;
  error: FormError | null;
  /** A password was typed and is not shown again: the page says to type it again (an empty one keeps the old). */
  passwordDropped: boolean;
}

/** What the Web Hooks page shows besides the webhooks themselves. */
interface Shown {
  again?: TypedForm;
  preview?: { hookId: number; event: string; result: string; detail: string | null; fallback: boolean; headers: string; body: string };
  /** Where the page shows these: `top`, `new` (the add form) or `hook:<id>`, where the form's address (its #fragment) scrolls to. */
  secret?: { at: string; hookId: number; value: string };
  notice?: { at: string; text: string };
}

/** A closure as typed: kept as it is (its line numbers are the ones an error names); blank is none. */
const source = (value: string | undefined): string | undefined => (value === undefined || value.trim() === '' ? undefined : value);

/** The add form as the body of POST /api/v1/orgs/:org/webhooks. */
const createBody = (v: Record<string, string>) => ({
  url: given(v.url) ?? '',
  username: given(v.username),
  password: v.password || undefined,
  closure: source(v.closure),
  sign: checked(v.sign),
});

/** An edit form as the body of PATCH /api/v1/webhooks/:id: a blank password keeps the one set. */
const patchBody = (v: Record<string, string>) => ({
  url: given(v.url) ?? '',
  username: orNull(v.username),
  password: checked(v.clear_password) ? null : v.password || undefined,
  closure: source(v.closure) ?? null,
  active: checked(v.active),
  sign: checked(v.sign),
});

/** What was typed, to fill form `form` in again: a password never comes back to the browser. */
const typed = (form: string, values: Record<string, string>, error: FormError | null): TypedForm => {
  const { password, ...rest } = values;
  return { form, values: rest, error, passwordDropped: (password ?? '') !== '' };
};

/** A body as people read it: JSON indented, anything else as it is. */
export function readable(body: string | null): string {
  if (body === null || body === '') return '';
  try {
    return JSON.stringify(JSON.parse(body), null, 2);
  } catch {
    return body;
  }
}

/** Headers one a line, `name: value`; a repeated header (set-cookie) a line per value. */
const headerLines = (headers: Record<string, string | string[]> | null): string =>
  Object.entries(headers ?? {})
    .flatMap(([name, value]) => (Array.isArray(value) ? value : [value]).map((v) => `${name}: ${v}`))
    .join('\n');

/** What a preview's closure came to, in a sentence. */
function closureSaid(result: Awaited<ReturnType<typeof previewWebhook>>['result']): { result: string; detail: string | null; fallback: boolean } {
  if (result === null) return { result: 'No closure: the event payload is sent as it is.', detail: null, fallback: false };
  if (result.kind === 'ok') return { result: 'The closure returned status "ok": this is what it makes of the event.', detail: null, fallback: false };
  return { result: `The closure failed (${result.reason}), so the event payload would be sent as it is:`, detail: result.detail, fallback: true };
}

const hookView = (h: WebhookRow) => ({ ...webhookView(h), closureLines: h.closure === null ? 0 : h.closure.split('\n').length });

/** An attempt's log row as the pages show it. */
const attemptRow = (d: Pick<DeliveryDetail, 'id' | 'xid' | 'event' | 'session' | 'attempt' | 'status_code' | 'outcome' | 'error' | 'duration_ms' | 'created_at'>) => ({
  ...d,
  duration: formatDuration(d.duration_ms),
  when: formatTime(d.created_at),
  when_iso: d.created_at.toISOString(),
});

/** The number a `?saved=` or `?deleted=` of a redirect names, for a notice. */
const idParam = (value: string | undefined): string | null => (value !== undefined && /^[0-9]{1,15}$/.test(value) ? value : null);

export function registerWebhookPages(web: FastifyInstance, { deps, csrf, requireUser }: WebScope): void {
  const { pool } = deps;

  /** The thing `load` finds, or null after answering with the not-found page (its 404, or a path id that names nothing). */
  async function found<T>(reply: FastifyReply, user: SignedIn, what: string, load: () => Promise<T>): Promise<T | null> {
    try {
      return await load();
    } catch (err) {
      if (asHttpError(err)?.statusCode !== 404) throw err;
      notFoundPage(reply, user, what);
      return null;
    }
  }

  /**
   * A route of the webhook `:id` names: `handler` runs for a signed-in user and a webhook that
   * exists; otherwise the answer is the redirect to sign in, or the not-found page.
   */
  const ofHook =
    <R extends { Params: { id: string } }>(handler: (request: FastifyRequest<R>, reply: FastifyReply, user: SignedIn, hook: WebhookRow) => Promise<FastifyReply>) =>
    async (request: FastifyRequest<R>, reply: FastifyReply): Promise<FastifyReply> => {
      const user = requireUser(request, reply);
      if (!user) return reply;
      const { id } = request.params as { id: string };
      const hook = await found(reply, user, `webhook #${id}`, () => loadWebhook(pool, parseId(id, 'webhook')));
      return hook ? handler(request, reply, user, hook) : reply;
    };

  const orgOf = (hook: WebhookRow) => loadOrg(pool, String(hook.org_id));
  const orgPage = (org: OrgRow, hookId?: number) => `/orgs/${encodeURIComponent(org.name)}/webhooks${hookId === undefined ? '' : `#webhook-${hookId}`}`;

  const webhooksPage = async (reply: FastifyReply, user: SignedIn, org: OrgRow, shown: Shown, status = 200) => {
    const hooks = (await webhooksOf(pool, org)).map(hookView);
    return page(reply, 'webhooks', { title: `Web hooks of ${org.name}`, section: 'orgs', user, org, hooks, events: EVENTS, ...shown }, status);
  };

  /** After a form made a webhook or changed one: the page with its new secret shown once (`at` that form), else back to the page. */
  const afterSave = async (reply: FastifyReply, user: SignedIn, org: OrgRow, { hook, secret }: WebhookWithSecret, at: string, notice: string) => {
    if (secret !== null) return webhooksPage(reply, user, org, { secret: { at, hookId: hook.id, value: secret }, notice: { at, text: notice } });
    return reply.code(303).header('location', `${orgPage(org)}?saved=${hook.id}#webhook-${hook.id}`).send();
  };

  web.get<{ Params: { org: string }; Querystring: { saved?: string; deleted?: string } }>('/orgs/:org/webhooks', async (request, reply) => {
    const user = requireUser(request, reply);
    if (!user) return reply;
    const org = await found(reply, user, `organization ${request.params.org}`, () => loadOrg(pool, request.params.org));
    if (!org) return reply;
    const saved = idParam(request.query.saved);
    const deleted = idParam(request.query.deleted);
    const notice = saved
      ? { at: `hook:${saved}`, text: `Webhook #${saved} saved.` }
      : deleted
        ? { at: 'top', text: `Webhook #${deleted} deleted, with its delivery log.` }
        : undefined;
    return webhooksPage(reply, user, org, { notice });
  });

  web.post<{ Params: { org: string } }>('/orgs/:org/webhooks', csrf, async (request, reply) => {
    const user = requireUser(request, reply);
    if (!user) return reply;
    const org = await found(reply, user, `organization ${request.params.org}`, () => loadOrg(pool, request.params.org));
    if (!org) return reply;
    const values = formFields(request);
    const made = await tryAction(() => createWebhook(deps, org, createBody(values)));
    if (!made.ok) return webhooksPage(reply, user, org, { again: typed('new', values, made.error) }, made.status);
    return afterSave(reply, user, org, made.value, 'new', `Webhook #${made.value.hook.id} added.`);
  });

  // The address of a webhook is its place on its organization's page.
  web.get<{ Params: { id: string } }>('/webhooks/:id', ofHook(async (request, reply, user, hook) => {
    return reply.code(303).header('location', orgPage(await orgOf(hook), hook.id)).send();
  }));

  web.post<{ Params: { id: string } }>('/webhooks/:id', csrf, ofHook(async (request, reply, user, hook) => {
    const org = await orgOf(hook);
    const values = formFields(request);
    const saved = await tryAction(() => patchWebhook(deps, hook, patchBody(values)));
    if (!saved.ok) return webhooksPage(reply, user, org, { again: typed(`hook:${hook.id}`, values, saved.error) }, saved.status);
    return afterSave(reply, user, org, saved.value, `hook:${hook.id}`, `Webhook #${hook.id} saved; it signs its requests now.`);
  }));

  // The edit form's Preview button: its closure as typed (saved or not) on a sample event.
  web.post<{ Params: { id: string } }>('/webhooks/:id/preview', csrf, ofHook(async (request, reply, user, hook) => {
    const org = await orgOf(hook);
    const values = formFields(request);
    const event = given(values.event) ?? 'stop';
    const shown = await tryAction(() => previewWebhook(deps, hook, { event, closure: source(values.closure) ?? null }));
    const form = `hook:${hook.id}`;
    if (!shown.ok) return webhooksPage(reply, user, org, { again: typed(form, values, shown.error) }, shown.status);
    const { result, would_send } = shown.value;
    const preview = { hookId: hook.id, event, ...closureSaid(result), headers: headerLines(would_send.headers), body: readable(would_send.body) };
    return webhooksPage(reply, user, org, { again: typed(form, values, null), preview });
  }));

  web.post<{ Params: { id: string } }>('/webhooks/:id/ping', csrf, ofHook(async (request, reply, user, hook) => {
    const sent = await pingWebhook(deps, hook);
    return reply.code(303).header('location', `/deliveries/${sent.id}`).send();
  }));

  web.post<{ Params: { id: string } }>('/webhooks/:id/rotate-secret', csrf, ofHook(async (request, reply, user, hook) => {
    const { secret } = await rotateSecret(deps, hook);
    const at = `hook:${hook.id}`;
    const notice = { at, text: `Webhook #${hook.id} has a new signing secret; the old one no longer works.` };
    return webhooksPage(reply, user, await orgOf(hook), { secret: { at, hookId: hook.id, value: secret }, notice });
  }));

  web.post<{ Params: { id: string } }>('/webhooks/:id/delete', csrf, ofHook(async (request, reply, user, hook) => {
    const org = await orgOf(hook);
    await removeWebhook(pool, hook.id);
    return reply.code(303).header('location', `${orgPage(org)}?deleted=${hook.id}`).send();
  }));

  web.get<{ Params: { id: string }; Querystring: Record<string, string | undefined> }>('/webhooks/:id/deliveries', ofHook(async (request, reply, user, hook) => {
    const org = await orgOf(hook);
    // Empty fields of the filter form mean "any".
    const q = request.query;
    const filters = Object.fromEntries(
      (['event', 'outcome', 'session'] as const).map((k) => [k, given(q[k])]).filter((e): e is [string, string] => e[1] !== undefined),
    );
    const before = given(q.before);
    const base = { title: `Delivery log of webhook #${hook.id}`, section: 'orgs' as const, user, org, hook: webhookView(hook), filters, events: DELIVERY_EVENTS, outcomes: DELIVERY_OUTCOMES };
    const rows = await tryAction(() => webhookDeliveries(pool, hook, { ...filters, ...(before ? { before } : {}), limit: String(LOG_PAGE) }));
    if (!rows.ok) return page(reply, 'deliveries', { ...base, attempts: [], older: null, error: rows.error.message }, rows.status);
    const older = rows.value.length === LOG_PAGE ? `?${new URLSearchParams({ ...filters, before: String(rows.value.at(-1)!.id) }).toString()}` : null;
    return page(reply, 'deliveries', { ...base, attempts: rows.value.map(attemptRow), older, error: null });
  }));

  const deliveryPage = async (reply: FastifyReply, user: SignedIn, d: DeliveryDetail, error: string | null, status = 200) => {
    const hook = await loadWebhook(pool, d.webhook_id);
    const org = await orgOf(hook);
    const attempt = {
      ...attemptRow(d),
      origin: d.origin,
      url: d.url,
      error_class: d.error_class,
      next_attempt_at: d.next_attempt_at ? formatTime(d.next_attempt_at) : null,
      closure_outcome: d.closure_outcome,
      closure_detail: d.closure_detail,
      request_headers: headerLines(d.request_headers),
      request_body: readable(d.request_body),
      request_indented: readable(d.request_body) !== (d.request_body ?? ''),
      response_headers: headerLines(d.response_headers),
      response_body: readable(d.response_body),
      response_indented: readable(d.response_body) !== (d.response_body ?? ''),
      payload: d.payload === null ? '' : JSON.stringify(d.payload, null, 2),
    };
    const title = `Attempt ${d.attempt} of ${d.event} to webhook #${hook.id}`;
    return page(reply, 'delivery', { title, section: 'orgs', user, org, hook: webhookView(hook), attempt, error }, status);
  };

  web.get<{ Params: { id: string } }>('/deliveries/:id', async (request, reply) => {
    const user = requireUser(request, reply);
    if (!user) return reply;
    const d = await found(reply, user, `delivery attempt #${request.params.id}`, () => loadDelivery(pool, parseId(request.params.id, 'delivery')));
    if (!d) return reply;
    return deliveryPage(reply, user, d, null);
  });

  web.post<{ Params: { id: string } }>('/deliveries/:id/redeliver', csrf, async (request, reply) => {
    const user = requireUser(request, reply);
    if (!user) return reply;
    const d = await found(reply, user, `delivery attempt #${request.params.id}`, () => loadDelivery(pool, parseId(request.params.id, 'delivery')));
    if (!d) return reply;
    const sent = await tryAction(() => redeliver(deps, d));
    if (!sent.ok) return deliveryPage(reply, user, d, sent.error.message, sent.status);
    return reply.code(303).header('location', `/deliveries/${sent.value.id}`).send();
  });
}
