/**
 * The API on a throwaway database, listening on loopback. Temporal is not part of the
 * integration project, so `enqueue` is a recording stand-in (it can be told to fail); the e2e
 * project runs the API against the real enqueue and a real Temporal.
 *
 * Requests go over real HTTP rather than `app.inject`: inject loads light-my-request, which
 * requires the ESM-only `cookie@2`, and jest cannot load that on Node 20. node:http (not fetch)
 * so tests control every header, down to sending a body with no content type at all.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { FastifyInstance } from 'fastify';
import { buildApp, type ApiDeps, type HealthReport } from '../../src/api/app';
import type { EnqueueRequest } from '../../src/core/types';
import type { Config } from '../../src/config';
import { createTestDatabase, type TestDatabase } from './db';

export interface RequestOptions {
  method: string;
  url: string;
  headers?: Record<string, string>;
  /** A string or Buffer is sent as is; anything else as JSON with `content-type: application/json`. */
  payload?: unknown;
}

export interface Response {
  statusCode: number;
  headers: http.IncomingHttpHeaders;
  body: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  json(): any;
}

export interface ApiHarness {
  app: FastifyInstance;
  /** `http://127.0.0.1:<port>` */
  url: string;
  request(opts: RequestOptions): Promise<Response>;
  db: TestDatabase;
  config: Config;
  /** Every enqueue call, in order. */
  enqueued: EnqueueRequest[];
  /** Makes every following enqueue throw this (or succeed again with null). */
  failEnqueue(err: Error | null): void;
  /** What /healthz reports. */
  setHealth(report: HealthReport | null): void;
  /** Raw log lines the app wrote. */
  logs: string[];
  /** A management API call with the admin token. */
  admin(method: string, url: string, body?: unknown): Promise<Response>;
  close(): Promise<void>;
}

/**
 * `config` overrides parts of the configuration (webhookAllow, say, to send to loopback
 * receivers); `stop` stands in for stopping builds in Temporal (none by default: 503).
 */
export async function startApiHarness(opts: { config?: Partial<Config>; stop?: ApiDeps['stop'] } = {}): Promise<ApiHarness> {
  const db = await createTestDatabase('sluice_api');
  const config: Config = {
    databaseUrl: db.url,
    temporalAddress: '127.0.0.1:1',
    temporalNamespace: 'default',
    baseUrl: 'https://ci.example.test',
    adminToken: `admin-${randomBytes(16).toString('hex')}`,
    secretKey: randomBytes(32),
    smtpUrl: undefined,
    host: '127.0.0.1',
    port: 0,
    taskQueue: 'sluice-test',
    buildQueue: 'sluice-build-test',
    workspaceDir: '/tmp/sluice-api-test',
    testTimeoutMs: 10_000,
    webhookRetry: { initialIntervalMs: 100, maximumIntervalMs: 1000, backoffCoefficient: 2, maximumAttempts: 3 },
    webhookAllow: [],
    ...opts.config,
  };
  const enqueued: EnqueueRequest[] = [];
  const logs: string[] = [];
  let enqueueError: Error | null = null;
  let health: HealthReport | null = null;

  const app = buildApp({
    config,
    pool: db.pool,
    enqueue: async (req) => {
      if (enqueueError) throw enqueueError;
      enqueued.push(req);
    },
    health: async () => health ?? { ok: true, missing: [] },
    stop: opts.stop,
    log: { level: 'debug', stream: { write: (line: string) => logs.push(line) } },
  });
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  const request = (opts: RequestOptions) => send(url, opts);

  return {
    app,
    url,
    request,
    db,
    config,
    enqueued,
    logs,
    failEnqueue: (err) => {
      enqueueError = err;
    },
    setHealth: (report) => {
      health = report;
    },
    admin: (method, path, body) => request({ method, url: path, headers: { authorization: `Bearer ${config.adminToken}` }, payload: body }),
    async close() {
      await app.close();
      await db.drop();
    },
  };
}

function send(base: string, opts: RequestOptions): Promise<Response> {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  let body: string | Buffer | undefined;
  if (typeof opts.payload === 'string' || Buffer.isBuffer(opts.payload)) body = opts.payload;
  else if (opts.payload !== undefined) {
    body = JSON.stringify(opts.payload);
    headers['content-type'] ??= 'application/json';
  }
  if (body !== undefined) headers['content-length'] = String(Buffer.byteLength(body));
  return new Promise((resolve, reject) => {
    const req = http.request(new URL(opts.url, base), { method: opts.method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ statusCode: res.statusCode ?? 0, headers: res.headers, body: text, json: () => JSON.parse(text) });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Creates an org, a repository and suites for `branches`; returns the repository as the API shows it. */
export async function seedRepo(
  h: ApiHarness,
  opts: { org?: string; repo?: string; scm?: 'git' | 'hg'; branches?: string[] } = {},
): Promise<{ orgId: number; repo: Record<string, unknown> & { id: number; key: string; webhook_url: string }; suites: { id: number; branch: string }[] }> {
  const orgName = opts.org ?? `org${randomBytes(3).toString('hex')}`;
  const org = await h.admin('POST', '/api/v1/orgs', { name: orgName, email: 'ci@example.com' });
  if (org.statusCode !== 201) throw new Error(`org: ${org.statusCode} ${org.body}`);
  const repo = await h.admin('POST', `/api/v1/orgs/${orgName}/repos`, {
    name: opts.repo ?? 'widgets',
    scm: opts.scm ?? 'git',
    pull_url: 'git@scm.example.test:acme/widgets.git',
  });
  if (repo.statusCode !== 201) throw new Error(`repo: ${repo.statusCode} ${repo.body}`);
  const repoJson = repo.json();
  const suites = [];
  for (const branch of opts.branches ?? ['master']) {
    const suite = await h.admin('POST', `/api/v1/repos/${repoJson.id}/suites`, { branch, test_pattern: 'tests/*.sh', workers: 2 });
    if (suite.statusCode !== 201) throw new Error(`suite: ${suite.statusCode} ${suite.body}`);
    suites.push(suite.json());
  }
  return { orgId: org.json().id, repo: repoJson, suites };
}

export async function countRows(h: ApiHarness, table: 'ci_events' | 'sessions'): Promise<number> {
  const { rows } = await h.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`);
  return rows[0]!.n;
}
