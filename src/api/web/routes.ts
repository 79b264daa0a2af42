/**
 * The web pages (issue 12), server-rendered with Eta templates (views/, escaped by default):
 * sign-in with the admin token and sign-out here, through an identity provider in auth.ts; the
 * builds (builds.ts), organizations (orgs.ts), people (people.ts), a repository's CI Setup and
 * Branches (repos.ts) and an organization's Web Hooks (webhooks.ts) in modules of their own.
 * Who may see each page is the door's (api/access). Forms are protected against cross-site
 * requests by a token (@fastify/csrf-protection) besides the SameSite=Lax cookie. Pages act
 * through the same functions as the JSON API (routes/admin/), never SQL or rules of their own.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import fastifyCookie from '@fastify/cookie';
import fastifyCsrf from '@fastify/csrf-protection';
import fastifyFormbody from '@fastify/formbody';
import fastifySse from '@fastify/sse';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { runnersWithoutIsolation } from '../../app/runners';
import type { UnisolatedRunner } from '../../db/runners';
import { endWebSessionsOf } from '../access/principal';
import type { ApiDeps } from '../deps';
import { sameSecret } from '../../crypto/compare';
import { signInChoices, type SignInOption } from '../identity/providers';
import { registerAuthPages } from './auth';
import { registerPeoplePages } from './people';
import { registerBuildPages } from './builds';
import { registerConnectionPages } from './connections';
import { registerOrgPages } from './orgs';
import { registerOutputPages } from './output';
import { registerRepoPages } from './repos';
import { registerRunnerPages } from './runners';
import { registerWebhookPages } from './webhooks';
import { page, safeNext, webScope } from './pages';
import { cookieOptions, cookieSecret, CSRF_COOKIE, signedIn, signIn, signOut } from './signIn';

/**
 * Scripts in assets/: build.js follows a build live, output.js its running processes' output,
 * copy.js makes the Copy buttons work.
 */
const ASSETS = ['build.js', 'output.js', 'copy.js', 'ansi.js'];

const SignInForm = z.object({
  name: z.string().trim().min(1, 'say who you are').max(100),
  token: z.string().min(1, 'the admin token is required'),
  next: z.string().optional(),
  _csrf: z.string().optional(),
});

export async function registerWebRoutes(web: FastifyInstance, deps: ApiDeps, options: Map<string, SignInOption>): Promise<void> {
  const { config } = deps;
  // Awaited: the routes below use what these plugins add (csrfProtection, cookies).
  await web.register(fastifyFormbody);
  await web.register(fastifySse, { heartbeatInterval: 15_000 });
  await web.register(fastifyCookie, { secret: cookieSecret(config) });
  await web.register(fastifyCsrf, { sessionPlugin: '@fastify/cookie', cookieKey: CSRF_COOKIE, cookieOpts: { ...cookieOptions(config) } });
  const scope = webScope(web, deps);
  const { csrf } = scope;
  const providers = signInChoices(config);

  // Installation administrators see on every page while a runner runs builds without isolation (issue 23).
  web.decorateRequest('unisolatedRunners', null);
  web.addHook('preHandler', async (request) => {
    if (request.method !== 'GET' || !signedIn(request)?.installationAdmin) return;
    request.unisolatedRunners = await runnersWithoutIsolation(deps.pool).catch(() => null);
  });

  web.get<{ Querystring: { next?: string } }>('/sign-in', async (request, reply) => {
    if (signedIn(request)) return reply.code(303).header('location', safeNext(request.query.next)).send();
    return page(reply, 'signIn', { title: 'Sign in', user: null, next: safeNext(request.query.next), name: '', error: null, providers, tokenTried: false });
  });

  web.post('/sign-in', csrf, async (request, reply) => {
    const parsed = SignInForm.safeParse(request.body ?? {});
    const body = (request.body ?? {}) as Record<string, unknown>;
    const again = (error: string, status: number) =>
      page(reply, 'signIn', { title: 'Sign in', user: null, next: safeNext(String(body.next ?? '')), name: String(body.name ?? ''), error, providers, tokenTried: true }, status);
    if (!parsed.success) return again(parsed.error.issues[0]?.message ?? 'fill in both fields', 400);
    if (!sameSecret(parsed.data.token, config.adminToken)) return again('That is not the admin token.', 401);
    await signIn(request, reply, config, deps.pool, { userId: null, name: parsed.data.name });
    return reply.code(303).header('location', safeNext(parsed.data.next)).send();
  });

  web.post('/sign-out', csrf, async (request, reply) => {
    await signOut(request, reply, config, deps.pool);
    return reply.code(303).header('location', '/sign-in').send();
  });

  // Every browser this person signed in with: a lost laptop, a shared machine.
  web.post('/sign-out-everywhere', csrf, async (request, reply) => {
    const userId = request.principal?.userId;
    if (userId != null) await endWebSessionsOf(deps.pool, userId);
    await signOut(request, reply, config, deps.pool);
    return reply.code(303).header('location', '/sign-in').send();
  });

  // The pages' browser scripts: these files only, by name, never a path from the request.
  // Anser, the ANSI parser the server renders output with (web/ansi.ts), for the browser's: its
  // CommonJS file as a script that sets window.Anser (assets/ansi.js uses it).
  let anser: Promise<string> | undefined;
  web.get('/assets/anser.js', async (_request, reply) => {
    anser ??= readFile(require.resolve('anser'), 'utf8').then((source) => `(() => {\nconst module = { exports: {} };\n${source}\nwindow.Anser = module.exports;\n})();\n`);
    return reply.type('text/javascript; charset=utf-8').header('cache-control', 'no-cache').send(await anser);
  });
  for (const name of ASSETS) {
    web.get(`/assets/${name}`, async (_request, reply) =>
      reply.type('text/javascript; charset=utf-8').header('cache-control', 'no-cache').send(await readFile(path.join(__dirname, 'assets', name))),
    );
  }

  registerAuthPages(web, scope, options);
  registerPeoplePages(web, scope);
  registerBuildPages(web, scope);
  registerOutputPages(web, scope);
  registerOrgPages(web, scope);
  registerRepoPages(web, scope);
  registerWebhookPages(web, scope);
  registerConnectionPages(web, scope);
  registerRunnerPages(web, scope);
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Runners up that run builds without isolation, for the layout's warning; null: not looked up. */
    unisolatedRunners: UnisolatedRunner[] | null;
  }
}
