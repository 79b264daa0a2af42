// The OpenAPI document (GET /api/v1/openapi.json) against the running API on a real PostgreSQL:
// every route Fastify serves is in it (web pages, the runner protocol and the docs page's own
// files excepted, see below), every example in it validates against its schema, the main
// request examples are accepted by Sluice as they stand, and what Sluice answers matches the
// document's answer schemas.
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { registeredRoutes, type RegisteredRoute } from '../../src/api/openapi/register';
import { startApiHarness, type ApiHarness } from '../support/apiApp';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

let h: ApiHarness;
let doc: Json;

beforeAll(async () => {
  h = await startApiHarness();
  const res = await h.request({ method: 'GET', url: '/api/v1/openapi.json' });
  expect(res.statusCode).toBe(200);
  doc = res.json();
});

afterAll(async () => {
  await h.close();
});

const METHODS = ['get', 'put', 'post', 'delete', 'patch'];

/** Fastify's `/orgs/:org` as OpenAPI writes it, `/orgs/{org}`. */
const openApiPath = (url: string) => url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');

/**
 * Routes that are not the API, and so not in the document: the web pages (HTML forms for people,
 * signed in with a cookie), the runner protocol under /api/v1/runner/ (Sluice's runners' own,
 * changing with them), and the interactive page's HTML and assets under /api/docs.
 */
const notApi = (r: RegisteredRoute) => r.url.startsWith('/api/docs') || r.url.startsWith('/api/v1/runner/') || !/^\/(api|1|ci_events|healthz|metrics)(\/|$)/.test(r.url);

/** The routes Fastify serves that the document lacks, and the document's operations Fastify does not serve. */
function compare(routes: readonly RegisteredRoute[], document: Json): { missing: string[]; extra: string[] } {
  const served = new Set(routes.filter((r) => !r.hidden).map((r) => `${r.method} ${openApiPath(r.url)}`));
  const described = new Set(
    Object.entries(document.paths as Record<string, Record<string, unknown>>).flatMap(([path, ops]) =>
      Object.keys(ops)
        .filter((m) => METHODS.includes(m))
        .map((m) => `${m.toUpperCase()} ${path}`),
    ),
  );
  return { missing: [...served].filter((r) => !described.has(r)).sort(), extra: [...described].filter((d) => !served.has(d)).sort() };
}

function operation(method: string, path: string): Json {
  const op = doc.paths[path]?.[method];
  if (!op) throw new Error(`${method.toUpperCase()} ${path} is not in the document`);
  return op;
}

function ajv() {
  const a = new Ajv2020({ strict: false, allErrors: true });
  addFormats(a);
  return a;
}
const validator = ajv();

/** Errors of `value` against `schema`, as one readable string ('' when it validates). */
function problems(schema: Json, value: unknown): string {
  const check = validator.compile(schema);
  return check(value) ? '' : validator.errorsText(check.errors);
}

/** Every example in the document with the schema it illustrates, and where it is. */
function examples(node: Json, at: string, out: { at: string; schema: Json; value: unknown }[] = []) {
  if (node === null || typeof node !== 'object') return out;
  if (node.schema && typeof node.schema === 'object') {
    // A media type object: `example`, or `examples` by name.
    if ('example' in node) out.push({ at: `${at}.example`, schema: node.schema, value: node.example });
    for (const [name, ex] of Object.entries((node.examples ?? {}) as Record<string, { value: unknown }>)) out.push({ at: `${at}.examples.${name}`, schema: node.schema, value: ex.value });
  }
  // A schema object: JSON Schema's `examples` array.
  if (Array.isArray(node.examples) && (node.type || node.properties || node.anyOf)) {
    node.examples.forEach((value: unknown, i: number) => out.push({ at: `${at}.examples[${i}]`, schema: node, value }));
  }
  for (const [key, child] of Object.entries(node)) if (key !== 'examples' && key !== 'example') examples(child, `${at}.${key}`, out);
  return out;
}

function requestExamples(method: string, path: string): unknown[] {
  const media = operation(method, path).requestBody.content['application/json'];
  return 'example' in media ? [media.example] : Object.values(media.examples as Record<string, { value: unknown }>).map((e) => e.value);
}

/** Checks an answer against the document: its status is described, and its body fits the schema there. */
function expectDocumented(method: string, path: string, res: { statusCode: number; body: string; json(): unknown }) {
  const described = operation(method, path).responses[String(res.statusCode)];
  expect({ status: res.statusCode, described: described !== undefined, body: res.body.slice(0, 300) }).toMatchObject({ described: true });
  const schema = described.content?.['application/json']?.schema;
  if (schema) expect(problems(schema, res.json())).toBe('');
}

describe('the document', () => {
  it('is OpenAPI 3.1 at a public path, with the admin token as its default credential', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.servers).toEqual([{ url: h.config.baseUrl }]);
    expect(doc.security).toEqual([{ adminToken: [] }]);
    expect(doc.components.securitySchemes.adminToken).toMatchObject({ type: 'http', scheme: 'bearer' });
  });

  it('describes every route Fastify serves, and nothing it does not', () => {
    const routes = registeredRoutes(h.app);
    // The recorder saw the whole app (a guard against this check passing on an empty list).
    expect(routes.length).toBeGreaterThan(80);
    expect(compare(routes, doc)).toEqual({ missing: [], extra: [] });
    // What is left out is only what is not the API; no API route hides.
    expect(routes.filter((r) => r.hidden && !notApi(r)).map((r) => `${r.method} ${r.url}`)).toEqual([]);
    expect(routes.filter((r) => !r.hidden && notApi(r)).map((r) => `${r.method} ${r.url}`)).toEqual([]);
  });

  it('the check names a route the document lacks', () => {
    const routes = registeredRoutes(h.app);
    const { ['/api/v1/orgs/{org}/repos']: _gone, ...paths } = doc.paths;
    expect(compare(routes, { ...doc, paths }).missing).toEqual(['GET /api/v1/orgs/{org}/repos', 'POST /api/v1/orgs/{org}/repos']);
  });

  it('gives every operation a summary and a tag, and every admin operation the 401', () => {
    for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, Json>>)) {
      for (const [method, op] of Object.entries(ops)) {
        expect({ at: `${method} ${path}`, summary: typeof op.summary, tags: op.tags?.length }).toEqual({ at: `${method} ${path}`, summary: 'string', tags: 1 });
        if (path.startsWith('/api/v1/') && path !== '/api/v1/openapi.json') expect({ at: `${method} ${path}`, has401: '401' in op.responses }).toEqual({ at: `${method} ${path}`, has401: true });
      }
    }
  });

  it('has examples for the main request bodies, and every example in it validates against its schema', () => {
    for (const [method, path] of [
      ['post', '/1/{provider}/{key}'],
      ['post', '/api/v1/orgs'],
      ['post', '/api/v1/orgs/{org}/repos'],
      ['post', '/api/v1/repos/{repo}/suites'],
      ['post', '/api/v1/orgs/{org}/webhooks'],
      ['put', '/api/v1/repos/{repo}/secrets/{name}'],
    ] as const) {
      expect(requestExamples(method, path).length).toBeGreaterThan(0);
    }
    const all = examples(doc.paths, 'paths');
    expect(all.length).toBeGreaterThan(20);
    const failing = all.map((e) => ({ at: e.at, problems: problems(e.schema, e.value) })).filter((e) => e.problems !== '');
    expect(failing).toEqual([]);
  });

  it('the example check catches an example its schema refuses', () => {
    const media = operation('post', '/api/v1/orgs').requestBody.content['application/json'];
    expect(problems(media.schema, { ...media.example, email: 'not an address' })).toMatch(/email/);
    expect(problems(media.schema, { ...media.example, colour: 'red' })).toMatch(/additional/);
  });
});

describe('the examples against Sluice itself', () => {
  it('are accepted as they stand, and the answers match the document', async () => {
    const [org] = requestExamples('post', '/api/v1/orgs') as { name: string }[];
    let res = await h.admin('POST', '/api/v1/orgs', org);
    expect(res.statusCode).toBe(201);
    expectDocumented('post', '/api/v1/orgs', res);
    expectDocumented('get', '/api/v1/orgs/{org}', await h.admin('GET', `/api/v1/orgs/${org!.name}`));

    const repos: { name: string; key: string }[] = [];
    for (const body of requestExamples('post', '/api/v1/orgs/{org}/repos')) {
      res = await h.admin('POST', `/api/v1/orgs/${org!.name}/repos`, body);
      expect(res.statusCode).toBe(201);
      expectDocumented('post', '/api/v1/orgs/{org}/repos', res);
      repos.push(res.json());
    }
    const repo = `${org!.name}%2F${repos[0]!.name}`;
    for (const body of requestExamples('patch', '/api/v1/repos/{repo}')) {
      res = await h.admin('PATCH', `/api/v1/repos/${repo}`, body);
      expect(res.statusCode).toBe(200);
      expectDocumented('patch', '/api/v1/repos/{repo}', res);
    }
    // The PATCH example set a webhook secret, which triggers must be signed with: suites and trigger go to the other repository.
    const built = repos[1]!;
    for (const body of requestExamples('post', '/api/v1/repos/{repo}/suites')) {
      res = await h.admin('POST', `/api/v1/repos/${org!.name}%2F${built.name}/suites`, body);
      expect(res.statusCode).toBe(201);
      expectDocumented('post', '/api/v1/repos/{repo}/suites', res);
    }
    for (const body of requestExamples('put', '/api/v1/repos/{repo}/branches/{branch}')) {
      res = await h.admin('PUT', `/api/v1/repos/${repo}/branches/develop`, body);
      expect(res.statusCode).toBe(200);
      expectDocumented('put', '/api/v1/repos/{repo}/branches/{branch}', res);
    }
    const [secret] = requestExamples('put', '/api/v1/repos/{repo}/secrets/{name}');
    res = await h.admin('PUT', `/api/v1/repos/${repo}/secrets/DEPLOY_TOKEN`, secret);
    expect(res.statusCode).toBe(201);
    expectDocumented('put', '/api/v1/repos/{repo}/secrets/{name}', res);
    expectDocumented('get', '/api/v1/repos/{repo}/secrets', await h.admin('GET', `/api/v1/repos/${repo}/secrets`));
    // Never the value.
    expect(JSON.stringify(res.json())).not.toContain((secret as { value: string }).value);

    let webhook = 0;
    for (const body of requestExamples('post', '/api/v1/orgs/{org}/webhooks')) {
      res = await h.admin('POST', `/api/v1/orgs/${org!.name}/webhooks`, body);
      expect(res.statusCode).toBe(201);
      expectDocumented('post', '/api/v1/orgs/{org}/webhooks', res);
      webhook = res.json().id;
    }
    for (const body of requestExamples('patch', '/api/v1/webhooks/{id}')) {
      res = await h.admin('PATCH', `/api/v1/webhooks/${webhook}`, body);
      expect(res.statusCode).toBe(200);
      expectDocumented('patch', '/api/v1/webhooks/{id}', res);
    }
    for (const body of requestExamples('post', '/api/v1/runner-tokens')) {
      res = await h.admin('POST', '/api/v1/runner-tokens', body);
      expect(res.statusCode).toBe(201);
      expectDocumented('post', '/api/v1/runner-tokens', res);
    }
    expectDocumented('get', '/api/v1/runner-tokens', await h.admin('GET', '/api/v1/runner-tokens'));
    expectDocumented('get', '/api/v1/runners', await h.admin('GET', '/api/v1/runners'));
    expectDocumented('get', '/healthz', await h.request({ method: 'GET', url: '/healthz' }));

    // The first trigger example builds the suite of master the first suite example made.
    const [trigger] = requestExamples('post', '/1/{provider}/{key}');
    res = await h.request({ method: 'POST', url: `/1/builds/${built.key}`, payload: trigger });
    expect(res.statusCode).toBe(200);
    expectDocumented('post', '/1/{provider}/{key}', res);
    expect(h.enqueued).toHaveLength(1);
  });

  it('keep Sluice’s own errors: the document describes them, and a 404 for the path still comes before a 400 for the body', async () => {
    const bad = await h.admin('POST', '/api/v1/orgs', { name: '', email: 'ci@example.com' });
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toMatchObject({ error: 'invalid request', field: 'name' });
    expectDocumented('post', '/api/v1/orgs', bad);

    const nowhere = await h.admin('POST', '/api/v1/orgs/no-such-org/repos', { name: 42 });
    expect(nowhere.statusCode).toBe(404);
    expectDocumented('post', '/api/v1/orgs/{org}/repos', nowhere);

    const unauthorized = await h.request({ method: 'GET', url: '/api/v1/orgs' });
    expect(unauthorized.statusCode).toBe(401);
    expectDocumented('get', '/api/v1/orgs', unauthorized);
  });
});

describe('the interactive page', () => {
  it('is served at /api/docs without a token, loads only from Sluice, and does not force https', async () => {
    const page = await h.request({ method: 'GET', url: '/api/docs/' });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/text\/html/);
    expect(page.body).toContain('swagger-ui');
    const csp = String(page.headers['content-security-policy']);
    expect(csp).toContain("default-src 'self'");
    expect(csp).not.toContain('upgrade-insecure-requests');
    expect(csp).not.toContain('validator.swagger.io');

    const script = await h.request({ method: 'GET', url: '/api/docs/static/swagger-ui-bundle.js' });
    expect(script.statusCode).toBe(200);
    // The page reads the same document.
    const json = await h.request({ method: 'GET', url: '/api/docs/json' });
    expect(json.json().paths).toEqual(doc.paths);
  });
});
