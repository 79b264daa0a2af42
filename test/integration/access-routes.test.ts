// Who may use which route (issue 25), over every route the API registers: each is tried as
// nobody, as each role of its organization, as a member of another organization, as an
// installation administrator, with the admin token, and with narrowed tokens, through the JSON
// API (Bearer) and the web pages (a signed-in browser's cookie). A route with no rule refuses to
// start (the first test); a refused request is 401/403 with the reason, never the route's work.
// Writes are sent a body that is not JSON: past the door it is a 400 and changes nothing.
import http from 'node:http';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/api/app';
import { RULES, ruleFor, type AccessRule } from '../../src/api/access/rules';
import { ROLES, type Role } from '../../src/core/access';
import { startApiHarness, seedRepo, type ApiHarness } from '../support/apiApp';
import { addPerson, signedCookie, type Person } from '../support/people';
import { insertWebSession } from '../../src/db/webSessions';
import { newSessionId } from '../../src/api/access/principal';
import { keyHash } from '../../src/crypto/sealed';

let h: ApiHarness;
let routes: { method: string; url: string }[];
const params: Record<string, string> = {};
const ids: Record<string, string> = {};

/** Every route the API registers, from an app of its own with an eye on registration. */
async function registeredRoutes(harness: ApiHarness): Promise<{ method: string; url: string }[]> {
  const found: { method: string; url: string }[] = [];
  const app: FastifyInstance = buildApp({ config: harness.config, pool: harness.db.pool, knowledge: harness.knowledge, enqueue: async () => {}, intake: async () => {} });
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) if (method !== 'HEAD') found.push({ method, url: route.url });
  });
  await app.ready();
  await app.close();
  return found;
}

interface Caller {
  name: string;
  /** Headers of this caller on the API and on the web pages; null: cannot reach that surface. */
  api: Record<string, string> | null;
  web: Record<string, string> | null;
  /** Expected: whether it may pass a rule's door, for a write or a read. */
  may(rule: AccessRule, write: boolean): boolean;
}

const rank = (r: Role) => ROLES.indexOf(r);
/** Allowed as a member of acme with `role` (acme is every fixture's organization). */
const asMember = (role: Role | null) => (rule: AccessRule) =>
  rule.need === 'public' || rule.need === 'signed-in' || (rule.need !== 'installation' && role !== null && rank(role) >= rank(rule.need));
const everything = () => true;

const callers: Caller[] = [];

beforeAll(async () => {
  h = await startApiHarness();
  routes = await registeredRoutes(h);
  const acme = await seedRepo(h, { org: 'acme', repo: 'web', branches: ['master'] });
  const umbrella = await seedRepo(h, { org: 'umbrella', repo: 'api', branches: ['master'] });
  const trigger = await h.request({ method: 'POST', url: new URL(acme.repo.webhook_url).pathname, payload: { branch: 'master', force: true } });
  expect(trigger.statusCode).toBe(200);
  const session = String(h.enqueued.at(-1)!.sessionId);
  const hook = await h.admin('POST', '/api/v1/orgs/acme/webhooks', { url: 'https://hooks.example.test/ci' });
  expect(hook.statusCode).toBe(201);
  const { rows } = await h.db.pool.query<{ id: string }>(
    `INSERT INTO deliveries (webhook_id, session_id, event, xid, attempt, outcome, duration_ms) VALUES ($1, $2, 'stop', 'x1', 1, 'delivered', 5) RETURNING id`,
    [hook.json().id, session],
  );
  ids.webhook = String(hook.json().id);
  ids.delivery = rows[0]!.id;
  ids.session = session;
  ids.repo = String(acme.repo.id);
  Object.assign(params, {
    org: 'acme',
    repo: String(acme.repo.id),
    suite: String(acme.suites[0]!.id),
    branch: 'master',
    name: 'NPM_TOKEN',
    session,
    artifact: '1',
    guid: '00000000-0000-4000-8000-000000000000',
    provider: 'builds',
    key: acme.repo.key,
    '*': 'x',
  });

  const people: Record<string, Person> = {};
  for (const role of ROLES) people[role] = await addPerson(h.db.pool, h.config, { name: role, email: `${role}@acme.example`, roles: { [acme.orgId]: role } });
  people.outsider = await addPerson(h.db.pool, h.config, { name: 'outsider', email: 'o@umbrella.example', roles: { [umbrella.orgId]: 'admin' } });
  people.installation = await addPerson(h.db.pool, h.config, { name: 'root', email: 'root@example.com', installationAdmin: true });
  params.user = String(people.viewer!.user.id);
  const readOnly = await addPerson(h.db.pool, h.config, { name: 'ro', email: 'ro@acme.example', roles: { [acme.orgId]: 'admin' }, token: { readOnly: true } });
  const scoped = await addPerson(h.db.pool, h.config, { name: 'scoped', email: 'scoped@example.com', installationAdmin: true, token: { orgId: umbrella.orgId } });

  // A browser signed in with the admin token (bootstrap): the installation's power, as a name.
  const adminBrowser = newSessionId();
  await insertWebSession(h.db.pool, { idHash: keyHash(adminBrowser), userId: null, name: 'ops', provider: null, refreshToken: null, refreshAt: null, expiresAt: new Date(Date.now() + 3_600_000), ip: '127.0.0.1' });

  const both = (p: Person) => ({ api: { authorization: p.bearer }, web: { cookie: p.cookie } });
  callers.push(
    { name: 'nobody', api: {}, web: {}, may: (rule) => rule.need === 'public' },
    ...ROLES.map((role) => ({ name: role, ...both(people[role]!), may: asMember(role) })),
    { name: 'a member of another organization', ...both(people.outsider!), may: asMember(null) },
    { name: 'an installation administrator', ...both(people.installation!), may: everything },
    { name: 'the admin token', api: { authorization: `Bearer ${h.config.adminToken}` }, web: { cookie: signedCookie(h.config, adminBrowser) }, may: everything },
    { name: 'an admin’s read-only token', api: { authorization: readOnly.bearer }, web: null, may: (rule, write) => !write && asMember('admin')(rule) },
    {
      name: 'an installation administrator’s token for another organization',
      api: { authorization: scoped.bearer },
      web: null,
      may: (rule) => rule.need === 'public' || rule.need === 'signed-in',
    },
  );
});

afterAll(async () => {
  await h?.close();
});

/** How the door says a route's resource is not there (api/access/guard.ts): JSON on the API, a page on the web. */
function doorsNotFound(rule: AccessRule): RegExp {
  const api: Record<string, string> = { org: 'organization', repo: 'repository', webhook: 'webhook', delivery: 'delivery', session: 'session' };
  const page: Record<string, string> = { org: 'organization ', repo: 'repository ', webhook: 'web hook #', delivery: 'delivery #', session: 'build #' };
  return rule.surface === 'api' ? new RegExp(`"no such ${api[rule.of!.kind]}"`) : new RegExp(`There is no ${page[rule.of!.kind]}`);
}

/** The path of a route with the fixtures' values; `:id` is the id of what the rule says it names. */
function pathOf(url: string, rule: AccessRule): string {
  return url.replace(/:([A-Za-z]+)|\*$/g, (whole, name: string | undefined) => {
    if (name === 'id') return rule.of && rule.of.kind !== 'org' ? ids[rule.of.kind]! : '999999';
    return params[name ?? '*'] ?? whole;
  });
}

/** One request; only the status and where a redirect goes are read (an event stream is left at once). */
function call(method: string, path: string, headers: Record<string, string>): Promise<{ status: number; location?: string; body: string }> {
  const write = method !== 'GET';
  return new Promise((resolve, reject) => {
    const stream = /\/(output|live)$/.test(path) ? { accept: 'text/event-stream' } : {};
    const req = http.request(`${h.url}${path}`, { method, headers: { ...headers, ...stream, ...(write ? { 'content-type': 'application/json', 'content-length': '1' } : {}) } }, (res) => {
      let body = '';
      const done = () => resolve({ status: res.statusCode!, location: res.headers.location, body });
      // A followed build's output or events go on: what came first is enough.
      if (/event-stream|ndjson/.test(res.headers['content-type'] ?? '')) {
        res.destroy();
        return done();
      }
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', done);
    });
    req.setTimeout(10_000, () => req.destroy(new Error(`${method} ${path}: no answer in 10 s`)));
    req.on('error', (err) => reject(new Error(`${method} ${path}: ${err.message}`)));
    // Not JSON: a write let through stops at the body parser (400) and changes nothing.
    req.end(write ? '{' : undefined);
  });
}

it('has a rule for every route it registers, and a route for every rule', async () => {
  expect(routes.length).toBeGreaterThan(100);
  for (const r of routes) expect({ route: `${r.method} ${r.url}`, rule: ruleFor(r.method, r.url) !== undefined }).toEqual({ route: `${r.method} ${r.url}`, rule: true });
  const registered = new Set(routes.map((r) => `${r.method} ${r.url}`));
  const wildcard = [...RULES.keys()].filter((k) => k.includes('*'));
  for (const key of RULES.keys()) if (!wildcard.includes(key)) expect({ rule: key, registered: registered.has(key) }).toEqual({ rule: key, registered: true });
});

it('makes public by prefix only the routes it means to', () => {
  // A route added under a public prefix would be public unreviewed: this list changes with it.
  const byPrefix = routes.filter((r) => [...RULES].some(([key, rule]) => key.includes('*') && rule === ruleFor(r.method, r.url))).map((r) => `${r.method} ${r.url}`);
  expect(byPrefix.sort()).toEqual(
    [
      'DELETE /api/v1/runner/jobs/:id/blobs/*',
      'GET /api/docs',
      'GET /api/docs/json',
      'GET /api/docs/static/*',
      'GET /api/docs/static/index.html',
      'GET /api/docs/static/swagger-initializer.js',
      'GET /api/docs/yaml',
      'GET /api/v1/runner/jobs/:id/blobs/*',
      'GET /assets/anser.js',
      'GET /assets/ansi.js',
      'GET /assets/build.js',
      'GET /assets/copy.js',
      'GET /assets/output.js',
      'POST /api/v1/runner/ended-sessions',
      'POST /api/v1/runner/jobs/:id/finish',
      'POST /api/v1/runner/jobs/:id/heartbeat',
      'POST /api/v1/runner/jobs/:id/records/:method',
      'POST /api/v1/runner/jobs/:id/signal',
      'POST /api/v1/runner/jobs/next',
      'POST /api/v1/runner/live-store-keys',
      'PUT /api/v1/runner/jobs/:id/blobs/*',
    ].sort(),
  );
});

it('refuses to start with a route that has no rule', async () => {
  const app = buildApp({ config: h.config, pool: h.db.pool, knowledge: h.knowledge, enqueue: async () => {}, intake: async () => {} });
  expect(() => app.get('/api/v1/brand-new', async () => 'unguarded')).toThrow('GET /api/v1/brand-new has no access rule');
  await app.close();
});

it('lets each caller through exactly the routes its role allows, and says why it refuses', async () => {
  const mismatches: string[] = [];
  let tried = 0;
  for (const route of routes) {
    const rule = ruleFor(route.method, route.url)!;
    // Public routes check their own credentials (triggers, reports, runners): other tests try them.
    if (rule.need === 'public') continue;
    const write = route.method !== 'GET';
    const path = pathOf(route.url, rule);
    for (const caller of callers) {
      const headers = rule.surface === 'api' ? caller.api : caller.web;
      if (!headers) continue;
      const res = await call(route.method, path, headers);
      tried++;
      // Outside the organization the door answers as if there were no such thing: its own 404.
      const hidden = res.status === 404 && rule.of !== undefined && doorsNotFound(rule).test(res.body);
      const refusedWith = res.status === 401 || res.status === 403 || hidden || (res.status === 303 && (res.location ?? '').startsWith('/sign-in')) ? res.status : null;
      const expected = caller.may(rule, write);
      if (expected === (refusedWith !== null)) mismatches.push(`${route.method} ${route.url} as ${caller.name}: ${res.status} ${res.body.slice(0, 120)}`);
      // Refused: why, in words (a 403 names it; nobody is sent to sign in or told to).
      if (refusedWith === 403 && !/needs the|installation administrator|read-only|limited to/.test(res.body)) mismatches.push(`${route.method} ${route.url} as ${caller.name}: 403 without a reason: ${res.body.slice(0, 200)}`);
      // Nobody outside an organization reads its name in a refusal (but where they typed it).
      if (refusedWith !== null && caller.name === 'a member of another organization' && rule.of?.kind !== 'org' && res.body.includes('acme')) mismatches.push(`${route.method} ${route.url} as ${caller.name}: names acme: ${res.body.slice(0, 200)}`);
    }
  }
  expect(tried).toBeGreaterThan(500);
  expect(mismatches).toEqual([]);
});

it('shows each caller only the organizations and builds it may see', async () => {
  for (const caller of callers.filter((c) => c.api)) {
    const orgs = await call('GET', '/api/v1/orgs', caller.api!);
    if (caller.name === 'nobody') {
      expect(orgs.status).toBe(401);
      continue;
    }
    const names = (JSON.parse(orgs.body) as { name: string }[]).map((o) => o.name).sort();
    const sessions = (JSON.parse((await call('GET', '/api/v1/sessions', caller.api!)).body) as { session: number }[]).map((s) => String(s.session));
    const expected =
      caller.name === 'a member of another organization' || caller.name.includes('another organization')
        ? ['umbrella']
        : caller.name === 'an installation administrator' || caller.name === 'the admin token'
          ? ['acme', 'umbrella']
          : ['acme'];
    expect({ caller: caller.name, names }).toEqual({ caller: caller.name, names: expected });
    expect({ caller: caller.name, sees: sessions.includes(ids.session!) }).toEqual({ caller: caller.name, sees: expected.includes('acme') });
  }
});
