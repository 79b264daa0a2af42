/**
 * The API process's HTTP surface: the keyed trigger endpoint, build status and report pages,
 * the health check and the management API (DESIGN.md "HTTP contract"). buildApp wires the
 * route modules together and takes everything with I/O beyond PostgreSQL as a dependency, so
 * tests can run it with `app.inject` and a stand-in for Temporal.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import type { ApiDeps } from './deps';
import { hookHealth } from './hookHealth';
import { pendingTriggers } from './pendingTriggers';
import { auditChanges } from './access/audit';
import { guardRoutes } from './access/guard';
import { renewSessions, signInOptions } from './identity/providers';
import { refusePage, unknownPathPage } from './web/pages';
import { HttpError, installErrorHandlers } from './http';
import { observeHttp } from './httpMetrics';
import { loggerOptions, logRequests } from './logging';
import { traceRequests } from './requestSpans';
import { hideFromDocument, registerOpenApi } from './openapi/register';
import { registerBranchRoutes } from './routes/admin/branches';
import { registerDeliveryRoutes } from './routes/admin/deliveries';
import { registerOperatorRoutes } from './routes/admin/operator';
import { registerOrgRoutes } from './routes/admin/orgs';
import { registerOutputRoutes } from './routes/admin/output';
import { registerRepoRoutes } from './routes/admin/repos';
import { registerRunnerRoutes } from './routes/admin/runners';
import { registerRunnerTokenRoutes } from './routes/admin/runnerTokens';
import { registerAuditRoutes } from './routes/admin/audit';
import { registerPeopleRoutes } from './routes/admin/people';
import { registerTokenRoutes } from './routes/admin/tokens';
import { registerRunnerApi } from './routes/runnerApi';
import { registerRegistryRoutes } from './routes/admin/registries';
import { registerConnectionRoutes } from './routes/admin/connections';
import { registerGitHubAppRoutes } from './routes/admin/githubApps';
import { registerGitHubAppHookRoutes } from './routes/githubAppHooks';
import { registerSecretRoutes } from './routes/admin/secrets';
import { registerSessionRoutes } from './routes/admin/sessions';
import { registerSuiteRoutes } from './routes/admin/suites';
import { registerWebhookRoutes } from './routes/admin/webhooks';
import { registerCiEventRoutes } from './routes/ciEvents';
import { registerHealthRoutes } from './routes/health';
import { registerReportRoutes } from './routes/reports';
import { registerTriggerRoutes } from './routes/triggers';
import { holdWhileWriting } from './triggerKnowledge';
import { registerWebRoutes } from './web/routes';
import { tracingOn } from '../tracing/spans';

// Callers that build the app name its dependencies from here too.
export type { ApiDeps } from './deps';
export type { HealthReport } from '../app/health';

/** Largest request body accepted; more is a 413. Trigger payloads are a few KiB. */
export const BODY_LIMIT = 1024 * 1024;

/**
 * The management API reads JSON bodies, and action endpoints (stop, rebuild, ping, redeliver,
 * rotate-secret) take none. Many HTTP clients send `content-type: application/json` on every
 * request, so an empty body is no body whatever its type; a body that is there must be JSON.
 */
function readJsonBodies(scope: FastifyInstance): void {
  const json = scope.getDefaultJsonParser('error', 'error');
  scope.removeAllContentTypeParsers();
  scope.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if ((body as string).trim() === '') done(null, undefined);
    else json(request, body as string, done);
  });
  scope.addContentTypeParser('*', { parseAs: 'string' }, (request, body, done) => {
    if ((body as string).length === 0) done(null, undefined);
    else done(new HttpError(415, 'unsupported media type', `send JSON (content-type: application/json), not ${request.headers['content-type'] ?? 'an untyped body'}`, 'content-type'), undefined);
  });
}

export function buildApp(given: ApiDeps): FastifyInstance {
  const health = given.hookHealth ?? hookHealth(given.pool, { onError: (err) => app.log.warn({ err }, 'could not write when hooks arrived; kept for the next write') });
  const deps: ApiDeps = { ...given, pending: given.pending ?? pendingTriggers(), hookHealth: health };
  // Branch names may be 255 bytes (URL-encoded, more): Fastify's default cap on a path parameter is 100.
  const app = Fastify({
    logger: loggerOptions(deps.log),
    // One line per request instead (api/logging.ts).
    disableRequestLogging: true,
    bodyLimit: BODY_LIMIT,
    routerOptions: { maxParamLength: 1024 },
  });
  app.addHook('onClose', () => health.close());
  logRequests(app);
  // Before any route: each request's span wraps its handler (tracing on only).
  if (tracingOn()) traceRequests(app);
  // Before any register(): child scopes inherit the error handler.
  installErrorHandlers(app, unknownPathPage);
  // Before any route: each is given its access rule, and each request is checked against it (api/access).
  if (deps.config.adminToken.length < 16) throw new Error('the API needs SLUICE_ADMIN_TOKEN (at least 16 characters)');
  const signInWith = signInOptions(deps.config);
  const refresh = renewSessions(deps.pool, deps.config, signInWith, (err) => app.log.warn({ err }, 'an identity provider did not answer; the session goes on'));
  guardRoutes(app, { pool: deps.pool, adminToken: deps.config.adminToken, refresh, refuseOnWeb: refusePage(deps.config.baseUrl), audit: auditChanges(deps.pool) });
  // Before any route: every answer is observed, by route pattern (api/httpMetrics.ts).
  observeHttp(app);

  // Before any route, and every route in a scope after it: the document sees only those (openapi/register.ts).
  registerOpenApi(app, deps.config.baseUrl);

  void app.register(async (scope) => {
    registerHealthRoutes(scope, deps);
    registerCiEventRoutes(scope, deps);
    registerReportRoutes(scope, deps);
  });

  // Triggers parse their own bodies (src/providers/parse.ts), so they get a scope of their own.
  void app.register(async (scope) => {
    registerTriggerRoutes(scope, deps);
    registerGitHubAppHookRoutes(scope, deps);
  });

  // The web pages: their own scope, with cookies, form bodies and CSRF tokens (web/routes.ts).
  // Pages for people, not API: they stay out of the OpenAPI document.
  void app.register(async (web) => {
    web.addHook('onRoute', hideFromDocument);
    // A change made through a form is seen by the next trigger (api/triggerKnowledge.ts).
    holdWhileWriting(web, deps.knowledge);
    await registerWebRoutes(web, deps, signInWith);
  });

  void app.register(
    async (admin) => {
      // A change made here is seen by the next trigger (api/triggerKnowledge.ts).
      holdWhileWriting(admin, deps.knowledge);
      readJsonBodies(admin);
      registerOrgRoutes(admin, deps);
      registerRepoRoutes(admin, deps);
      registerBranchRoutes(admin, deps);
      registerSuiteRoutes(admin, deps);
      registerSecretRoutes(admin, deps);
      registerRegistryRoutes(admin, deps);
      registerConnectionRoutes(admin, deps);
      registerGitHubAppRoutes(admin, deps);
      registerWebhookRoutes(admin, deps);
      registerDeliveryRoutes(admin, deps);
      registerSessionRoutes(admin, deps);
      registerOperatorRoutes(admin, deps);
      registerRunnerRoutes(admin, deps);
      registerRunnerTokenRoutes(admin, deps);
      registerPeopleRoutes(admin, deps);
      registerTokenRoutes(admin, deps);
      registerAuditRoutes(admin, deps);
    },
    { prefix: '/api/v1' },
  );
  // Runners that hold only a token: their own credential, their own scope (routes/runnerApi.ts).
  void app.register(
    async (runner) => {
      // Sluice's own protocol with its runners, not an API for clients: out of the document.
      runner.addHook('onRoute', hideFromDocument);
      readJsonBodies(runner);
      registerRunnerApi(runner, deps);
    },
    { prefix: '/api/v1' },
  );
  // A session's live output, as server-sent events or NDJSON: a scope of its own for its plugin.
  void app.register(async (scope) => registerOutputRoutes(scope, deps), { prefix: '/api/v1' });
  return app;
}
