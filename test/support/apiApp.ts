/**
 * The API on a throwaway database, listening on loopback. Temporal is not part of the
 * integration project, so `enqueue` and `intake` are stand-ins (they can be told to fail) that
 * record what they are handed at once, as the workflows would a moment later; the e2e project
 * runs the API against the real ones and a real Temporal.
 *
 * Requests go over real HTTP rather than `app.inject`: inject loads light-my-request, which
 * requires the ESM-only `cookie@2`, and jest cannot load that on Node 20. node:http (not fetch)
 * so tests control every header, down to sending a body with no content type at all.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { FastifyInstance } from 'fastify';
import { buildApp, type ApiDeps, type HealthReport } from '../../src/api/app';
import type { EnqueueRequest, Intake } from '../../src/core/intake';
import type { Config } from '../../src/config';
import { createTestDatabase, type TestDatabase } from './db';
import { recordIntakes } from '../../src/db/intake';
import { migrate } from '../../src/db/migrate';
import { createPool } from '../../src/db/pool';
import { triggerKnowledge, type TriggerKnowledge } from '../../src/api/triggerKnowledge';
import { hookHealth } from '../../src/api/hookHealth';

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
  /** Every session queued, in order (recorded: it has its id). */
  enqueued: (Omit<EnqueueRequest, 'intake'> & { sessionId: number })[];
  /** What the API decides triggers from. */
  knowledge: TriggerKnowledge;
  /** With `records: 'held'`: what the API handed over, in order, not recorded. */
  handed: Intake[];
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
export async function startApiHarness(
  opts: {
    config?: Partial<Config>;
    stop?: ApiDeps['stop'];
    /** A database of the test's own (migrated here) instead of a fresh one on the shared server. */
    databaseUrl?: string;
    /** `held`: what the API hands over is kept in `handed`, recorded by nobody (the test records it when it likes). */
    records?: 'at once' | 'held';
    /** False: start without touching the database (it may be away). */
    migrate?: boolean;
  } = {},
): Promise<ApiHarness> {
  const db = opts.databaseUrl ? await ownDatabase(opts.databaseUrl, opts.migrate ?? true) : await createTestDatabase('sluice_api');
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
  const enqueued: ApiHarness['enqueued'] = [];
  const handed: Intake[] = [];
  const logs: string[] = [];
  let enqueueError: Error | null = null;
  let health: HealthReport | null = null;

  // Temporal's part, done at once: the suite's workflow records a trigger it is handed, then
  // queues its session (workflows/suite.ts); the repository's intake records the rest.
  const knowledge = triggerKnowledge(db.pool, { databaseUrl: db.url });
  // As the workflows' activity: a failed write is tried again (a repository deleted meanwhile
  // fails the first and leaves nothing on the next).
  const recorded = async (intake: Intake): Promise<Map<string, number>> => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await recordIntakes(db.pool, [intake]);
      } catch (err) {
        if (attempt >= 3) throw err;
      }
    }
  };
  const app = buildApp({
    config,
    pool: db.pool,
    knowledge,
    enqueue: async ({ intake, ...req }) => {
      if (enqueueError) throw enqueueError;
      if (opts.records === 'held') {
        if (intake) handed.push(intake);
        return;
      }
      const ids = intake ? await recorded(intake) : new Map<string, number>();
      const sessionId = req.sessionId ?? ids.get(intake?.sessions[0]?.key ?? '');
      if (sessionId !== undefined) enqueued.push({ ...req, sessionId });
    },
    intake: async (intake) => {
      if (enqueueError) throw enqueueError;
      if (opts.records === 'held') handed.push(intake);
      else await recorded(intake);
    },
    health: async () => health ?? { ok: true, missing: [] },
    // Written often, so a test waiting for a hook's arrival waits little.
    hookHealth: hookHealth(db.pool, { everyMs: 200 }),
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
    handed,
    knowledge,
    logs,
    failEnqueue: (err) => {
      enqueueError = err;
    },
    setHealth: (report) => {
      health = report;
    },
    admin: (method, path, body) => request({ method, url: path, headers: { authorization: `Bearer ${config.adminToken}` }, payload: body }),
    async close() {
      knowledge.close();
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
async function ownDatabase(url: string, migrated: boolean): Promise<TestDatabase> {
  const pool = createPool(url);
  if (migrated) await migrate(pool);
  return { url, pool, drop: () => pool.end() };
}

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
