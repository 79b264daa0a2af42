/**
 * The web pages (issue 12), server-rendered with Eta templates (views/, escaped by default):
 * sign-in with the admin token, sign-out, the builds list, and a build's page with Stop and
 * Rebuild. Forms are protected against
 * cross-site requests by a token (@fastify/csrf-protection) besides the SameSite=Strict cookie.
 * Pages read through the same db functions and views as the JSON API, never SQL of their own.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import fastifyCookie from '@fastify/cookie';
import fastifyCsrf from '@fastify/csrf-protection';
import fastifyFormbody from '@fastify/formbody';
import fastifySse from '@fastify/sse';
import { Eta } from 'eta';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { hasEnded, SESSION_STATUSES } from '../../core/types';
import { listFailedOutputs, listPlanParts, listSessions } from '../../db/sessions';
import type { ApiDeps } from '../app';
import { sameSecret } from '../auth';
import { HttpError, parseId } from '../http';
import { loadOrg } from '../routes/admin/orgs';
import { loadRepo } from '../routes/admin/repos';
import { SessionList } from '../routes/admin/sessions';
import { rebuildSession } from '../rebuild';
import { loadSessionView, sessionListView } from '../views';
import { requestStop } from '../stopSession';
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
    .header(
      'content-security-policy',
      "default-src 'none'; style-src 'unsafe-inline'; script-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    )
    .send(eta.render(`./${template}`, data));
}

/** How often an open build page's stream reads the build. */
const LIVE_POLL_MS = 1_000;

/** Spec §6's timing keys in their order (`package_setup` is listed twice there). */
const TIMING_ORDER = [
  'ci_received_at', 'queue_first_seen_at', 'queue_first_allowed_at', 'workers_assigned_at', 'setup', 'package_setup', 'services_setup',
  'setup_hooks', 'worker_hooks', 'exec', 'post_build', 'artifact_collect', 'done', 'setup_post_hooks', 'capture_cache', 'setup_cache',
  'worker_rendezvous', 'post_build_hook',
];
const timingRank = (key: string): number => (TIMING_ORDER.includes(key) ? TIMING_ORDER.indexOf(key) : TIMING_ORDER.length);

/** Failed files whose output the build page shows first, and how much of each (the report has it all). */
const FAILURES_SHOWN = 20;
const FAILURE_TAIL_CHARS = 4_000;

/** A build as its page shows it: the session, a plan's parts, the failures' output; undefined if there is none. */
async function loadBuild(pool: ApiDeps['pool'], config: ApiDeps['config'], id: number) {
  const view = await loadSessionView(pool, config, id);
  if (!view) return undefined;
  const [parts, failures] = await Promise.all([
    listPlanParts(pool, id),
    view.counts.failed + view.counts.error > 0 ? listFailedOutputs(pool, id, FAILURES_SHOWN, FAILURE_TAIL_CHARS) : [],
  ]);
  return { view, parts, failures };
}

/** What the build page shows that changes while it runs, as the page renders it and its stream sends it. */
export function liveView(
  { view, parts, failures }: NonNullable<Awaited<ReturnType<typeof loadBuild>>>,
  canStopHere: boolean,
) {
  const start = view.timing.ci_received_at ?? 0;
  const c = view.counts;
  const toGo = c.notstarted + c.started;
  const ended = hasEnded(view.status);
  return {
    session: view.session,
    status: view.status,
    ended,
    commit: view.commit_id ? view.commit_id.slice(0, 10) : 'commit not known yet',
    reason: view.reason,
    canStop: !ended && canStopHere,
    canRebuild: ended && view.parent_session === undefined,
    countsText: `${c.passed} passed, ${c.failed} failed, ${c.error} errors${toGo > 0 ? `, ${toGo} to go` : ''}`,
    tests: view.tests.map((t) => ({ path: t.path, status: t.status, duration: formatDuration(t.duration_ms), runner: t.runner ?? '' })),
    parts: parts.map((p) => ({ session: p.id, profile: p.profile_name, status: p.status })),
    failures,
    timeline: Object.entries(view.timing)
      // By time; keys recorded in the same instant in the order spec §6 lists them.
      .sort((a, b) => a[1] - b[1] || timingRank(a[0]) - timingRank(b[0]))
      .map(([key, at]) => ({ key, after: formatDuration(Math.round((at - start) * 1000)) })),
  };
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
  await web.register(fastifySse, { heartbeatInterval: 15_000 });
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

  /** A build: status, counts, files, timeline; Stop while it runs, Rebuild once it ended; live (assets/build.js). */
  const buildPage = async (request: FastifyRequest, reply: FastifyReply, user: SignedIn, id: number, error: string | null, status = 200) => {
    const build = await loadBuild(pool, config, id);
    if (!build) return page(reply, 'notFound', { title: 'Not found', user, csrf: reply.generateCsrf(), what: `build #${id}` }, 404);
    return page(reply, 'build', { title: `Build #${id}`, user, csrf: reply.generateCsrf(), session: build.view, live: liveView(build, Boolean(deps.stop)), error }, status);
  };

  // The build as it changes, for the open page: read every LIVE_POLL_MS, sent when it differs,
  // until it has ended or the page is closed (or the server is closing).
  let closing = false;
  web.addHook('preClose', async () => {
    closing = true;
  });
  web.get<{ Params: { id: string } }>('/builds/:id/live', { sse: 'only' }, async (request, reply) => {
    if (!signedIn(request)) throw new HttpError(401, 'unauthorized', 'sign in first');
    const id = parseId(request.params.id, 'build');
    let last = '';
    while (reply.sse.isConnected && !closing) {
      const build = await loadBuild(pool, config, id);
      if (!build) throw new HttpError(404, 'not found', `no build #${id}`);
      const live = liveView(build, Boolean(deps.stop));
      const text = JSON.stringify(live);
      if (text !== last) await reply.sse.send({ event: 'build', data: live });
      last = text;
      if (live.ended) break;
      await new Promise((resolve) => setTimeout(resolve, LIVE_POLL_MS));
    }
    reply.sse.close();
  });

  web.get('/assets/build.js', async (_request, reply) =>
    reply.type('text/javascript; charset=utf-8').header('cache-control', 'no-cache').send(await readFile(path.join(__dirname, 'assets', 'build.js'))),
  );

  web.get<{ Params: { id: string } }>('/builds/:id', async (request, reply) => {
    const user = requireUser(request, reply);
    if (!user) return reply;
    return buildPage(request, reply, user, parseId(request.params.id, 'build'), null);
  });

  web.post<{ Params: { id: string } }>('/builds/:id/stop', csrf, async (request, reply) => {
    const user = requireUser(request, reply);
    if (!user) return reply;
    const id = parseId(request.params.id, 'build');
    try {
      await requestStop(deps, id, user.name);
    } catch (err) {
      if (!(err instanceof HttpError)) throw err;
      return buildPage(request, reply, user, id, err.message, err.statusCode);
    }
    return reply.code(303).header('location', `/builds/${id}`).send();
  });

  web.post<{ Params: { id: string } }>('/builds/:id/rebuild', csrf, async (request, reply) => {
    const user = requireUser(request, reply);
    if (!user) return reply;
    const id = parseId(request.params.id, 'build');
    try {
      const { session } = await rebuildSession(deps, id, (err) => request.log.warn({ err, session: id }, '`received` not sent by the API'));
      return reply.code(303).header('location', `/builds/${session}`).send();
    } catch (err) {
      if (!(err instanceof HttpError)) throw err;
      return buildPage(request, reply, user, id, err.message, err.statusCode);
    }
  });
}
