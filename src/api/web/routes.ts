/**
 * The web pages (issue 12), server-rendered with Eta templates (views/, escaped by default):
 * sign-in with the admin token, sign-out, and the builds list. Forms are protected against
 * cross-site requests by a token (@fastify/csrf-protection) besides the SameSite=Strict cookie.
 * Pages read through the same db functions and views as the JSON API, never SQL of their own.
 */
import path from 'node:path';
import fastifyCookie from '@fastify/cookie';
import fastifyCsrf from '@fastify/csrf-protection';
import fastifyFormbody from '@fastify/formbody';
import { Eta } from 'eta';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { SESSION_STATUSES } from '../../core/types';
import { listSessions } from '../../db/sessions';
import type { ApiDeps } from '../app';
import { sameSecret } from '../auth';
import { HttpError } from '../http';
import { loadOrg } from '../routes/admin/orgs';
import { loadRepo } from '../routes/admin/repos';
import { SessionList } from '../routes/admin/sessions';
import { sessionListView } from '../views';
import { cookieOptions, cookieSecret, signedIn, signIn, signOut, type SignedIn } from './signIn';

const eta = new Eta({ views: path.join(__dirname, 'views'), autoEscape: true, cache: true });

const SignInForm = z.object({
  name: z.string().trim().min(1, 'say who you are').max(100),
  token: z.string().min(1, 'the admin token is required'),
  next: z.string().optional(),
  _csrf: z.string().optional(),
});

/**
 * Only a path of ours: never an absolute URL to elsewhere (an open redirect). Browsers read
 * `//host` and `/\host` as another host, so a second slash or a backslash is refused.
 */
export function safeNext(next: string | undefined): string {
  const control = [...(next ?? '')].some((c) => c.charCodeAt(0) < 0x20);
  return next && /^\/(?![/\\])/.test(next) && !control ? next : '/';
}

function page(reply: FastifyReply, template: string, data: Record<string, unknown>, status = 200): FastifyReply {
  return reply
    .code(status)
    .type('text/html; charset=utf-8')
    .header('cache-control', 'no-store')
    .header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
    .send(eta.render(`./${template}`, data));
}

function formatDuration(ms: number | null): string {
  if (ms === null) return '–';
  if (ms < 1000) return `${ms} ms`;
  const s = ms / 1000;
  return s < 60 ? `${s.toFixed(1)} s` : `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
}

export async function registerWebRoutes(web: FastifyInstance, deps: ApiDeps): Promise<void> {
  const { config, pool } = deps;
  // Awaited: the routes below use what these plugins add (csrfProtection, cookies).
  await web.register(fastifyFormbody);
  await web.register(fastifyCookie, { secret: cookieSecret(config) });
  await web.register(fastifyCsrf, { sessionPlugin: '@fastify/cookie', cookieKey: 'sluice_csrf', cookieOpts: { ...cookieOptions(config) } });
  // The token travels in the form (`_csrf`), so it is checked once the body is parsed.
  const csrf = { preHandler: web.csrfProtection };

  /** The signed-in user, or a redirect to the sign-in page. */
  const requireUser = (request: FastifyRequest, reply: FastifyReply): SignedIn | null => {
    const user = signedIn(request);
    if (!user) void reply.code(303).header('location', `/sign-in?next=${encodeURIComponent(request.url)}`).send();
    return user;
  };

  web.get<{ Querystring: { next?: string } }>('/sign-in', async (request, reply) => {
    if (signedIn(request)) return reply.code(303).header('location', safeNext(request.query.next)).send();
    return page(reply, 'signIn', { title: 'Sign in', user: null, csrf: reply.generateCsrf(), next: safeNext(request.query.next), name: '', error: null });
  });

  web.post('/sign-in', csrf, async (request, reply) => {
    const parsed = SignInForm.safeParse(request.body ?? {});
    const body = (request.body ?? {}) as Record<string, unknown>;
    const again = (error: string, status: number) =>
      page(reply, 'signIn', { title: 'Sign in', user: null, csrf: reply.generateCsrf(), next: safeNext(String(body.next ?? '')), name: String(body.name ?? ''), error }, status);
    if (!parsed.success) return again(parsed.error.issues[0]?.message ?? 'fill in both fields', 400);
    if (!sameSecret(parsed.data.token, config.adminToken)) return again('That is not the admin token.', 401);
    signIn(reply, config, parsed.data.name);
    return reply.code(303).header('location', safeNext(parsed.data.next)).send();
  });

  web.post('/sign-out', csrf, async (_request, reply) => {
    signOut(reply, config);
    return reply.code(303).header('location', '/sign-in').send();
  });

  web.get<{ Querystring: Record<string, string | undefined> }>('/', async (request, reply) => {
    const user = requireUser(request, reply);
    if (!user) return reply;
    // Empty fields of the filter form mean "any".
    const query = Object.fromEntries(Object.entries(request.query).filter(([, v]) => v !== undefined && v !== ''));
    const filters = { org: query.org, repo: query.repo, branch: query.branch, status: query.status };
    const base = { title: 'Builds', user, csrf: reply.generateCsrf(), statuses: SESSION_STATUSES, filters, filtered: Object.values(filters).some(Boolean) };
    const q = SessionList.safeParse(query);
    if (!q.success) {
      const issue = q.error.issues[0];
      return page(reply, 'builds', { ...base, sessions: [], older: null, error: `${String(issue?.path[0] ?? 'filter')}: ${issue?.message ?? 'invalid'}` }, 400);
    }
    let orgId: number | undefined;
    let repoId: number | undefined;
    try {
      if (q.data.org !== undefined) orgId = (await loadOrg(pool, q.data.org)).id;
      if (q.data.repo !== undefined) repoId = (await loadRepo(pool, q.data.repo)).id;
    } catch (err) {
      if (!(err instanceof HttpError)) throw err;
      return page(reply, 'builds', { ...base, sessions: [], older: null, error: err.message }, err.statusCode);
    }
    const rows = await listSessions(pool, { orgId, repoId, branch: q.data.branch, status: q.data.status, before: q.data.before, limit: q.data.limit });
    const sessions = rows.map((r) => {
      const view = sessionListView(r, config);
      return {
        ...view,
        duration: formatDuration(view.duration_ms),
        received_iso: r.received_at.toISOString(),
        received_text: r.received_at.toISOString().replace('T', ' ').slice(0, 19) + ' UTC',
        who: view.stopped_by ? `stopped by ${view.stopped_by}` : (view.committers[0] ?? ''),
      };
    });
    const older =
      rows.length === q.data.limit
        ? `/?${new URLSearchParams(
            Object.entries({ ...filters, before: String(rows.at(-1)!.id) }).filter((e): e is [string, string] => e[1] !== undefined),
          ).toString()}`
        : null;
    return page(reply, 'builds', { ...base, sessions, older, error: null });
  });
}
