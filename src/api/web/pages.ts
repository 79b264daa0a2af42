/**
 * What every web page shares: rendering an Eta template (views/, escaped by default) inside
 * the layout with its security headers, the signed-in user or a redirect to sign in, form
 * values as the JSON API's bodies, and an HttpError shown on the page it came from. Eta's
 * escaper is the only HTML escaper of Sluice's pages (the report page's too): `<%= %>` in the
 * templates, escapeHtml for the few fragments code still builds as strings (the timeline's SVG).
 */
import path from 'node:path';
import { Eta } from 'eta';
import type { FastifyInstance, FastifyReply, FastifyRequest, preHandlerHookHandler } from 'fastify';
import type { ApiDeps } from '../deps';
import { asHttpError, databaseHttpError } from '../http';
import { signedIn, type SignedIn } from './signIn';

const eta = new Eta({ views: path.join(__dirname, 'views'), autoEscape: true, cache: true });

/**
 * The HTML escaper `<%= %>` applies (Eta's own: `& < > " '`), for markup built in code, so a
 * value reads the same in a template and in a fragment; null and undefined are nothing.
 */
export function escapeHtml(value: unknown): string {
  return value === null || value === undefined ? '' : eta.config.escapeFunction(value);
}

/** A template of views/ rendered with `data` as `it`: the pages below, and the report page (api/reportPage.ts), which has a layout of its own. */
export function renderTemplate(template: string, data: object): string {
  return eta.render(`./${template}`, data);
}

/** What each page module's routes get: the API's dependencies, the CSRF check, the signed-in user. */
export interface WebScope {
  deps: ApiDeps;
  /** Route options that check the form's CSRF token (`_csrf`) once the body is parsed. */
  csrf: { preHandler: preHandlerHookHandler };
  /** The signed-in user, or null after answering with a redirect to the sign-in page. */
  requireUser(request: FastifyRequest, reply: FastifyReply): SignedIn | null;
}

export function webScope(web: FastifyInstance, deps: ApiDeps): WebScope {
  return {
    deps,
    csrf: { preHandler: web.csrfProtection },
    // The door (api/access) has sent anyone not signed in to sign in already; this is its twin for a handler that finds nobody.
    requireUser(request, reply) {
      const user = signedIn(request);
      if (!user) sendToSignIn(request, reply, deps.config.baseUrl);
      return user;
    },
  };
}

/**
 * Only a path of ours: never an absolute URL to elsewhere (an open redirect). Browsers read
 * `//host` and `/\host` as another host, so a second slash or a backslash is refused.
 */
export function safeNext(next: string | undefined): string {
  const control = [...(next ?? '')].some((c) => c.charCodeAt(0) < 0x20);
  return next && /^\/(?![/\\])/.test(next) && !control ? next : '/';
}

/**
 * Where signing in sends a request that needed it back to. A form's POST address has no page
 * (a GET of it is a 404), so a form goes back to the page it was sent from, by its Referer when
 * that is one of ours (this host, or the base URL's), else to the home page.
 */
export function signInNext(request: Pick<FastifyRequest, 'method' | 'url' | 'host' | 'headers'>, baseUrl: string): string {
  if (request.method === 'GET' || request.method === 'HEAD') return request.url;
  const referer = request.headers.referer;
  if (!referer || !URL.canParse(referer)) return '/';
  const from = new URL(referer);
  const ours = from.host === request.host || from.origin === new URL(baseUrl).origin;
  return ours ? safeNext(from.pathname + from.search) : '/';
}

/** The data every template's layout reads. */
export interface PageData {
  title: string;
  user: SignedIn | null;
  /** Which part of the site the page belongs to, for the navigation. */
  section?: 'builds' | 'orgs' | 'runners' | 'tokens';
  /** An origin besides Sluice's own the page's forms may post to (the GitHub App manifest's GitHub). */
  formTo?: string;
  [key: string]: unknown;
}

/** What every page may load: its own scripts, inline styles (the timeline's), nothing else. */
const PAGE_CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/** Renders `template` in the layout, with a fresh CSRF token for its forms (`it.csrf`). */
export function page(reply: FastifyReply, template: string, data: PageData, status = 200): FastifyReply {
  return reply
    .code(status)
    .type('text/html; charset=utf-8')
    .header('cache-control', 'no-store')
    .header('content-security-policy', data.formTo ? PAGE_CSP.replace("form-action 'self'", `form-action 'self' ${new URL(data.formTo).origin}`) : PAGE_CSP)
    .send(renderTemplate(template, { csrf: reply.generateCsrf(), unisolated: data.user ? (reply.request.unisolatedRunners ?? []) : [], ...data }));
}

/**
 * A path no route has, asked for by a browser (a GET that accepts HTML, outside the API's
 * `/api/` and the triggers' `/1/`): the 404 page, not the API's JSON. It is outside the pages'
 * scope (no cookie read, no CSRF token), so it names nobody; undefined for anything else.
 */
export function unknownPathPage(request: FastifyRequest, reply: FastifyReply): FastifyReply | undefined {
  if (request.method !== 'GET' && request.method !== 'HEAD') return undefined;
  if (/^\/(api|1)(\/|$)/.test(request.url) || !(request.headers.accept ?? '').includes('text/html')) return undefined;
  return reply
    .code(404)
    .type('text/html; charset=utf-8')
    .header('cache-control', 'no-store')
    .header('content-security-policy', PAGE_CSP)
    .send(renderTemplate('notFound', { title: 'Not found', user: null, what: 'such page', csrf: '', unisolated: [] }));
}

/**
 * How the web pages refuse (api/access/guard.ts): a browser not signed in goes to the sign-in
 * page, and comes back after; one signed in without the role is told why, with a 403; a page of
 * something that is not there is a 404 page.
 */
export function refusePage(baseUrl: string) {
  return (request: FastifyRequest, reply: FastifyReply, status: 401 | 403 | 404, reason: string): FastifyReply => {
    if (status === 401) return sendToSignIn(request, reply, baseUrl);
    if (status === 404) return page(reply, 'notFound', { title: 'Not found', user: request.principal, what: reason }, 404);
    return page(reply, 'forbidden', { title: 'Not allowed', user: request.principal, reason }, 403);
  };
}

/** To the sign-in page, and back here after it. */
function sendToSignIn(request: FastifyRequest, reply: FastifyReply, baseUrl: string): FastifyReply {
  return reply.code(303).header('location', `/sign-in?next=${encodeURIComponent(signInNext(request, baseUrl))}`).send();
}

/** A page saying there is no such thing, with a 404. */
export function notFoundPage(reply: FastifyReply, user: SignedIn, what: string): FastifyReply {
  return page(reply, 'notFound', { title: 'Not found', user, what }, 404);
}

/** A form's fields as strings (a repeated field keeps its last value); `_csrf` left out. */
export function formFields(request: FastifyRequest): Record<string, string> {
  const body = (request.body ?? {}) as Record<string, unknown>;
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(body)) {
    if (key === '_csrf') continue;
    const last = Array.isArray(value) ? value.at(-1) : value;
    if (typeof last === 'string') out[key] = last;
  }
  return out;
}

/** A text field as the JSON API takes it: trimmed; empty means "not given" (undefined). */
export const given = (value: string | undefined): string | undefined => (value === undefined || value.trim() === '' ? undefined : value.trim());

/** A text field that may clear a setting: empty is null. */
export const orNull = (value: string | undefined): string | null => given(value) ?? null;

/** A checkbox: present (any value) is true. */
export const checked = (value: string | undefined): boolean => value !== undefined;

/** One entry a line (blank lines dropped), as a list field of the JSON API. */
export const lines = (value: string | undefined): string[] =>
  (value ?? '')
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== '');

/** A problem to show on the form it came from: the message, and the field it is about, if any. */
export interface FormError {
  message: string;
  field?: string;
}

/** A form that failed, to show again: which one, what was wrong, and what was typed (secrets left out). */
export interface FailedForm {
  /** Which form of the page, in the page's own naming (`org`, `suite:3`, …). */
  form: string;
  error: FormError;
  values: Record<string, string>;
}

/**
 * Runs an action of the management API on behalf of a form: its result, or the refusal it
 * threw (a bad field, a conflict, a 404, a row deleted meanwhile) as a FormError for the page to
 * show. Anything else is a real failure and is thrown on.
 */
export async function tryAction<T>(action: () => Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: FormError; status: number }> {
  try {
    return { ok: true, value: await action() };
  } catch (caught) {
    const err = asHttpError(caught) ?? databaseHttpError(caught);
    if (!err) throw caught;
    const field = err.field?.replace(/^body\./, '');
    return { ok: false, status: err.statusCode, error: { message: field ? `${field}: ${err.message}` : err.message, field } };
  }
}

/** Milliseconds as people read them: `850 ms`, `12.3 s`, `4 min 5 s`; `–` for none. */
export function formatDuration(ms: number | null): string {
  if (ms === null) return '–';
  if (ms < 1000) return `${ms} ms`;
  const s = ms / 1000;
  return s < 60 ? `${s.toFixed(1)} s` : `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
}

/** A time as the pages show it: `2026-11-24 06:15:25 UTC`. */
export const formatTime = (at: Date): string => at.toISOString().replace('T', ' ').slice(0, 19) + ' UTC';
