/**
 * The door of every route (issue 25): each route gets its rule from api/access/rules.ts when it
 * is registered (none is an error at start, so no route goes out unguarded), and each request
 * that needs it is checked against it before its body is read: who it acts as, the organization its resource
 * belongs to, and whether their role is enough. Refused is 401 (who are you?) or 403 with the
 * reason; the web pages send a browser that is not signed in to the sign-in page instead.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest, onResponseHookHandler, preParsingHookHandler } from 'fastify';
import type { Pool } from 'pg';
import { decide, type Principal } from '../../core/access';
import { orgByRef, orgOfDelivery, orgOfRepo, orgOfSession, orgOfWebhook, type OrgOf } from '../../db/orgOf';
import type { Db } from '../../db/transaction';
import { HttpError } from '../http';
import { notFound } from '../../app/errors';
import { bearerPrincipal, SESSION_COOKIE, sessionPrincipal, type RefreshSession } from './principal';
import { ruleFor, type AccessRule, type OrgSource } from './rules';

const ORG_OF: Record<OrgSource['kind'], (db: Db, ref: string) => Promise<OrgOf | undefined>> = {
  org: orgByRef,
  repo: orgOfRepo,
  webhook: orgOfWebhook,
  delivery: orgOfDelivery,
  session: orgOfSession,
};

/** What the API says there is no such of (`no such repository`), and what a page says there is none of (`build #12`). */
const NOT_THERE: Record<OrgSource['kind'], { api: string; page: (ref: string) => string }> = {
  org: { api: 'organization', page: (ref) => `organization ${ref}` },
  repo: { api: 'repository', page: (ref) => `repository ${ref}` },
  webhook: { api: 'webhook', page: (ref) => `web hook #${ref}` },
  delivery: { api: 'delivery', page: (ref) => `delivery #${ref}` },
  session: { api: 'session', page: (ref) => `build #${ref}` },
};

export interface GuardOptions {
  pool: Pool;
  adminToken: string;
  /** Asks a session's identity provider again when its time comes (api/identity). */
  refresh?: RefreshSession;
  /** How the web pages answer a refusal: a redirect to sign in (401), a page saying why (403), or that there is no such thing (404). */
  refuseOnWeb(request: FastifyRequest, reply: FastifyReply, status: 401 | 403 | 404, reason: string): FastifyReply;
  /** Records a change once answered, on the routes whose rule names one (access/audit.ts). */
  audit: onResponseHookHandler;
}

/** A route's hooks of one kind, as a list. */
const hooks = <T>(given: T | T[] | undefined): T[] => (given === undefined ? [] : Array.isArray(given) ? given : [given]);

/** The rule a route was registered with (every route has one). */
export const ruleOf = (request: FastifyRequest): AccessRule | undefined => request.routeOptions.config?.access;

/** Who the browser's session cookie says is signed in, or null. */
async function browserPrincipal(request: FastifyRequest, options: GuardOptions): Promise<Principal | null> {
  const raw = request.cookies?.[SESSION_COOKIE];
  if (!raw) return null;
  const unsigned = request.unsignCookie(raw);
  if (!unsigned.valid || unsigned.value === null) return null;
  return sessionPrincipal(options.pool, unsigned.value, options.refresh);
}

export function guardRoutes(app: FastifyInstance, options: GuardOptions): void {
  // preParsing: after the web scope's cookies are read (onRequest), before any body is.
  const check = async (request: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    const rule = ruleOf(request)!;
    if (rule.surface === 'web') request.principal = await browserPrincipal(request, options);
    if (rule.need === 'public') return payload;
    if (rule.surface === 'api') {
      const bearer = await bearerPrincipal(options.pool, options.adminToken, request);
      if (bearer === null) return refuse(request, reply, rule, 401, 'that token is not valid (unknown, revoked or expired)');
      request.principal = bearer ?? null;
    }
    // Who before what: nobody learns which resources exist without signing in.
    if (!request.principal) return refuse(request, reply, rule, 401, 'sign in first');
    let org: OrgOf | undefined;
    if (rule.of) {
      const ref = (request.params as Record<string, string | undefined>)[rule.of.param] ?? '';
      org = await ORG_OF[rule.of.kind](options.pool, ref);
      // Before the role check: a resource that is not there is a 404 for everyone.
      if (!org) return notThere(request, reply, rule, rule.of, ref);
    }
    request.accessOrg = org ?? null;
    const write = request.method !== 'GET' && request.method !== 'HEAD';
    const decision = decide(request.principal, rule.need, org?.id ?? null, write, org ? `organization ${org.name}` : undefined);
    if (decision.allowed) return payload;
    // Outside the organization: the same 404 as for something that does not exist.
    if (decision.status === 404 && rule.of) return notThere(request, reply, rule, rule.of, (request.params as Record<string, string>)[rule.of.param]!);
    return refuse(request, reply, rule, decision.status === 404 ? 403 : decision.status, decision.reason);
  };

  const guard = check as preParsingHookHandler;
  app.addHook('onRoute', (route) => {
    const methods = [route.method].flat();
    for (const method of methods) {
      const rule = ruleFor(method, route.url);
      if (!rule) throw new Error(`${method} ${route.url} has no access rule: add one to src/api/access/rules.ts`);
      // One route, one config: its methods must share a rule.
      if (rule !== ruleFor(methods[0]!, route.url)) throw new Error(`${route.url}: its methods have different access rules; register them apart`);
      route.config = { ...route.config, access: rule };
      // Hooks of the routes that need them only: public routes (triggers above all, the pages'
      // scripts) check their own credentials or none, so they pay for no lookup on their way.
      // (A GET's HEAD route may come with the GET's hooks already.)
      const pre = hooks(route.preParsing);
      if ((rule.need !== 'public' || rule.knowsWho) && !pre.includes(guard)) route.preParsing = [...pre, guard];
      const post = hooks(route.onResponse);
      if (rule.audit && !post.includes(options.audit)) route.onResponse = [...post, options.audit];
    }
  });
  app.decorateRequest('principal', null);
  app.decorateRequest('accessOrg', null);

  function notThere(request: FastifyRequest, reply: FastifyReply, rule: AccessRule, of: OrgSource, ref: string): FastifyReply {
    if (rule.surface === 'web') return options.refuseOnWeb(request, reply, 404, NOT_THERE[of.kind].page(ref));
    throw notFound(NOT_THERE[of.kind].api);
  }

  function refuse(request: FastifyRequest, reply: FastifyReply, rule: AccessRule, status: 401 | 403, reason: string): FastifyReply {
    if (rule.surface === 'web') return options.refuseOnWeb(request, reply, status, reason);
    if (status === 401) void reply.header('www-authenticate', 'Bearer realm="sluice"');
    const message = status === 401 && !request.headers.authorization ? 'send Authorization: Bearer <admin token or your API token>' : reason;
    throw new HttpError(status, status === 401 ? 'unauthorized' : 'forbidden', message);
  }
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route's rule (api/access/rules.ts), given at registration. */
    access?: AccessRule;
  }
  interface FastifyRequest {
    /** Who the request acts as (api/access/guard.ts); null on a public route nobody signed in to. */
    principal: Principal | null;
    /** The organization of the route's resource, when its rule names one. */
    accessOrg: OrgOf | null;
  }
}
