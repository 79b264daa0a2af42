/**
 * deliverAttempt with a real database and a real receiver: what is sent, what each attempt
 * writes to `deliveries`, and what it tells Temporal (return, retryable or non-retryable failure).
 */
import { randomBytes } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import { deliverAttempt, FAILURE_TYPES } from '../../src/activities/delivery';
import type { DeliverDeps } from '../../src/delivery/attempt';
import { closeDefaultAgent } from '../../src/delivery/send';
import { parseAllowList } from '../../src/ip/ranges';
import type { DeliverInput } from '../../src/activities/types';
import type { OutgoingPayload } from '../../src/core/types';
import { keyHash, seal } from '../../src/crypto/sealed';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { startReceiver, type Receiver } from '../support/receiver';

const PASSWORD = 'Tr0ub4dor&3-never-log-me';
const secretKey = randomBytes(32);

let db: TestDatabase;
let rx: Receiver;
let deps: DeliverDeps;
let orgId: number;

beforeAll(async () => {
  db = await createTestDatabase();
  // The receiver is on loopback, which the SSRF guard blocks unless allowed.
  deps = { pool: db.pool, secretKey, timeoutMs: 2_000, allow: parseAllowList('127.0.0.0/8') };
  const { rows } = await db.pool.query<{ id: number }>(
    `INSERT INTO orgs (name, email) VALUES ('acme', 'ops@acme.test') RETURNING id`,
  );
  orgId = rows[0]!.id;
});

afterAll(async () => {
  await closeDefaultAgent();
  await db.drop();
});

beforeEach(async () => {
  rx = await startReceiver();
});

afterEach(async () => {
  await rx.close();
});

async function createWebhook(opts: { url?: string; username?: string | null; password?: string | null; active?: boolean } = {}) {
  const password = opts.password === undefined ? PASSWORD : opts.password;
  const { rows } = await db.pool.query<{ id: number }>(
    `INSERT INTO webhooks (org_id, url, username, password_sealed, active) VALUES ($1, $2, $3, $4, $5) RETURNING id`,
    [
      orgId,
      opts.url ?? rx.url,
      opts.username === undefined ? 'sluice' : opts.username,
      password === null ? null : seal(secretKey, password),
      opts.active ?? true,
    ],
  );
  return rows[0]!.id;
}

function payload(overrides: Partial<OutgoingPayload> = {}): OutgoingPayload {
  return {
    event: 'start',
    timestamp: '2025-01-01T00:00:00.000Z',
    session: 41,
    guid: '6f1c1c2e-4a7b-4a39-9d55-1d3f2f7a2b10',
    url: 'http://sluice.test/1/reports/41',
    profile_name: 'default',
    commit_id: 'abc123',
    committers: ['dev@acme.test'],
    status: 'running',
    counts: { notstarted: 0, started: 1, passed: 0, failed: 0, pending: 0, skipped: 0, error: 0 },
    workers: 1,
    timing: { ci_received_at: 1735689600.5 },
    branch: 'master',
    ref: null,
    repository: { name: 'widgets', url: 'git@scm.test:acme/widgets.git', org_name: 'acme' },
    xid: `xid-${randomBytes(6).toString('hex')}`,
    ...overrides,
  };
}

function input(webhookId: number, overrides: Partial<DeliverInput> = {}): DeliverInput {
  return { webhookId, sessionId: null, payload: payload(), maxAttempts: 3, ...overrides };
}

interface DeliveryRow {
  webhook_id: number;
  session_id: number | null;
  event: string;
  xid: string;
  attempt: number;
  status_code: number | null;
  outcome: string;
  error: string | null;
  duration_ms: number;
  request_body: unknown;
}

async function deliveriesOf(webhookId: number): Promise<DeliveryRow[]> {
  const { rows } = await db.pool.query<DeliveryRow>(
    // request_body is the text sent (a closure may send something other than JSON); read as JSON here.
    `SELECT webhook_id, session_id, event, xid, attempt, status_code, outcome, error, duration_ms, request_body::jsonb AS request_body
       FROM deliveries WHERE webhook_id = $1 ORDER BY id`,
    [webhookId],
  );
  return rows;
}

/** Runs an attempt that must throw, and returns the ApplicationFailure it threw. */
async function failure(p: Promise<unknown>): Promise<ApplicationFailure> {
  const err = await p.then(
    () => {
      throw new Error('expected the attempt to throw');
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApplicationFailure);
  return err as ApplicationFailure;
}

describe('deliverAttempt', () => {
  it('delivered: sends the payload with event, xid and basic auth, and logs the attempt', async () => {
    const id = await createWebhook();
    const inp = input(id);
    const result = await deliverAttempt(deps, inp, 1);

    expect(result).toEqual({ outcome: 'delivered', statusCode: 200 });
    const req = rx.requests[0]!;
    expect(req.json).toEqual(inp.payload);
    expect(req.headers['x-sluice-event']).toBe('start');
    expect(req.headers['x-sluice-delivery']).toBe(inp.payload.xid);
    expect(Buffer.from(req.headers.authorization!.slice(6), 'base64').toString()).toBe(`sluice:${PASSWORD}`);

    const rows = await deliveriesOf(id);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      webhook_id: id,
      session_id: null,
      event: 'start',
      xid: inp.payload.xid,
      attempt: 1,
      status_code: 200,
      outcome: 'delivered',
      error: null,
      request_body: inp.payload,
    });
    expect(rows[0]!.duration_ms).toBeGreaterThanOrEqual(0);
  });

  it('retrying: a 500 before the last attempt is logged and thrown as retryable', async () => {
    rx.respondWith(() => ({ status: 500, body: 'try later' }));
    const id = await createWebhook();
    const f = await failure(deliverAttempt(deps, input(id), 2));

    expect(f.nonRetryable).toBe(false);
    expect(f.type).toBe(FAILURE_TYPES.retrying);
    // Attempt 2 under Temporal's default policy: 2 s, with ±25% jitter.
    expect(f.nextRetryDelay).toBeGreaterThanOrEqual(1_500);
    expect(f.nextRetryDelay).toBeLessThanOrEqual(2_500);
    expect(f.message).toContain('HTTP 500: try later');
    expect(await deliveriesOf(id)).toMatchObject([
      { attempt: 2, status_code: 500, outcome: 'retrying', error: 'HTTP 500: try later' },
    ]);
  });

  it('retrying: Retry-After becomes the next retry delay, capped', async () => {
    const id = await createWebhook();
    rx.respondWith(() => ({ status: 503, headers: { 'Retry-After': '3' } }));
    const f = await failure(deliverAttempt(deps, input(id), 1));
    expect(f.nextRetryDelay).toBe(3000);

    rx.respondWith(() => ({ status: 429, headers: { 'Retry-After': '86400' } }));
    const capped = await failure(deliverAttempt({ ...deps, maxRetryAfterMs: 60_000 }, input(id), 1));
    expect(capped.nonRetryable).toBe(false);
    expect(capped.nextRetryDelay).toBe(60_000);

    expect((await deliveriesOf(id)).map((r) => [r.status_code, r.outcome])).toEqual([
      [503, 'retrying'],
      [429, 'retrying'],
    ]);
  });

  it('gave_up: a retryable failure on the last attempt is logged as gave_up and stops Temporal', async () => {
    rx.respondWith(() => ({ status: 502 }));
    const id = await createWebhook();
    const f = await failure(deliverAttempt(deps, input(id, { maxAttempts: 3 }), 3));

    expect(f.nonRetryable).toBe(true);
    expect(f.type).toBe(FAILURE_TYPES.gaveUp);
    expect(await deliveriesOf(id)).toMatchObject([{ attempt: 3, status_code: 502, outcome: 'gave_up' }]);
  });

  it('gave_up: connection refused on the last attempt', async () => {
    await rx.close();
    const id = await createWebhook();
    const f = await failure(deliverAttempt(deps, input(id, { maxAttempts: 1 }), 1));
    expect(f.type).toBe(FAILURE_TYPES.gaveUp);
    const [row] = await deliveriesOf(id);
    expect(row).toMatchObject({ attempt: 1, status_code: null, outcome: 'gave_up' });
    expect(row!.error).toContain('ECONNREFUSED');
  });

  it('dropped: a 404 is logged as dropped and thrown as non-retryable', async () => {
    rx.respondWith(() => ({ status: 404 }));
    const id = await createWebhook();
    const f = await failure(deliverAttempt(deps, input(id), 1));

    expect(f.nonRetryable).toBe(true);
    expect(f.type).toBe(FAILURE_TYPES.dropped);
    expect(await deliveriesOf(id)).toMatchObject([{ attempt: 1, status_code: 404, outcome: 'dropped', error: 'HTTP 404' }]);
  });

  it('every attempt of one event is logged under the same xid, and sent with it', async () => {
    const id = await createWebhook();
    const inp = input(id);
    rx.respondWith(() => ({ status: 500 }));
    await failure(deliverAttempt(deps, inp, 1));
    rx.respondWith(() => ({ status: 200 }));
    await deliverAttempt(deps, inp, 2);

    expect(rx.requests.map((r) => r.headers['x-sluice-delivery'])).toEqual([inp.payload.xid, inp.payload.xid]);
    expect((await deliveriesOf(id)).map((r) => [r.xid, r.attempt, r.outcome])).toEqual([
      [inp.payload.xid, 1, 'retrying'],
      [inp.payload.xid, 2, 'delivered'],
    ]);
  });

  it('a webhook without credentials sends no Authorization header', async () => {
    const id = await createWebhook({ username: null, password: null });
    await deliverAttempt(deps, input(id), 1);
    expect(rx.requests[0]!.headers.authorization).toBeUndefined();
  });

  it('records the session the event belongs to', async () => {
    const sessionId = await createSession();
    const id = await createWebhook();
    await deliverAttempt(deps, input(id, { sessionId, payload: payload({ event: 'stop', session: sessionId }) }), 1);
    expect(await deliveriesOf(id)).toMatchObject([{ session_id: sessionId, event: 'stop', outcome: 'delivered' }]);
  });

  it('an inactive or deleted webhook is dropped without a request or a log row', async () => {
    const inactive = await createWebhook({ active: false });
    expect(await deliverAttempt(deps, input(inactive), 1)).toEqual({ outcome: 'dropped', statusCode: null });
    expect(await deliverAttempt(deps, input(987_654), 1)).toEqual({ outcome: 'dropped', statusCode: null });
    expect(rx.requests).toHaveLength(0);
    expect(await deliveriesOf(inactive)).toHaveLength(0);
  });

  it('a receiver on a non-public address is dropped as blocked unless allowed (SSRF guard)', async () => {
    const id = await createWebhook();
    const f = await failure(deliverAttempt({ ...deps, allow: undefined }, input(id), 1));
    expect(f.nonRetryable).toBe(true);
    expect(f.type).toBe(FAILURE_TYPES.dropped);
    expect(f.message).toContain('blocked: 127.0.0.1 is a loopback address (allow it with SLUICE_WEBHOOK_ALLOW)');
    expect(rx.requests).toHaveLength(0);
    expect(await deliveriesOf(id)).toMatchObject([
      {
        attempt: 1,
        status_code: null,
        outcome: 'dropped',
        error: 'blocked: 127.0.0.1 is a loopback address (allow it with SLUICE_WEBHOOK_ALLOW)',
      },
    ]);
  });

  it('a password sealed under another key is dropped without a request', async () => {
    const id = await createWebhook();
    const f = await failure(deliverAttempt({ ...deps, secretKey: randomBytes(32) }, input(id), 1));
    expect(f.nonRetryable).toBe(true);
    expect(f.type).toBe(FAILURE_TYPES.dropped);
    expect(rx.requests).toHaveLength(0);
    expect(await deliveriesOf(id)).toMatchObject([{ outcome: 'dropped', status_code: null }]);
  });

  it('the password never reaches a log row or a thrown failure', async () => {
    const id = await createWebhook();
    // A receiver that echoes what it got, credentials and all, into its error pages.
    const echo = (status: number) => (req: { headers: { authorization?: string } }) => ({
      status,
      body: `pw=${PASSWORD} got=${req.headers.authorization}`,
    });
    const messages: string[] = [];
    rx.respondWith(echo(500));
    messages.push((await failure(deliverAttempt(deps, input(id), 1))).message);
    messages.push((await failure(deliverAttempt(deps, input(id), 3))).message);
    rx.respondWith(echo(401));
    messages.push((await failure(deliverAttempt(deps, input(id), 1))).message);

    const authorization = rx.requests[0]!.headers.authorization!;
    const token = authorization.slice('Basic '.length);
    const { rows } = await db.pool.query('SELECT * FROM deliveries WHERE webhook_id = $1 ORDER BY id', [id]);
    expect(rows.map((r: { outcome: string }) => r.outcome)).toEqual(['retrying', 'gave_up', 'dropped']);
    const everything = JSON.stringify(rows) + messages.join('\n');
    expect(everything).toContain('[redacted]');
    expect(everything).not.toContain(PASSWORD);
    expect(everything).not.toContain(token);
  });
});

/** The chain a session row needs: repo, suite, ci_event. */
async function createSession(): Promise<number> {
  const q = async (sql: string, params: unknown[]) => (await db.pool.query<{ id: number }>(sql, params)).rows[0]!.id;
  const repoId = await q(
    `INSERT INTO repos (org_id, name, scm, pull_url, key_hash, key_sealed, ssh_public_key, ssh_private_key_sealed)
     VALUES ($1, $2, 'git', 'git@scm.test:acme/widgets.git', $3, 'sealed', 'ssh-ed25519 AAAA', 'sealed') RETURNING id`,
    [orgId, `widgets-${randomBytes(3).toString('hex')}`, keyHash(randomBytes(8).toString('hex'))],
  );
  const suiteId = await q(`INSERT INTO suites (repo_id, branch, test_pattern) VALUES ($1, 'master', '*.sh') RETURNING id`, [
    repoId,
  ]);
  const eventId = await q(
    `INSERT INTO ci_events (guid, repo_id, provider, decision, trigger) VALUES (gen_random_uuid(), $1, 'builds', 'build', '{}')
     RETURNING id`,
    [repoId],
  );
  return q(`INSERT INTO sessions (ci_event_id, suite_id, branch, head) VALUES ($1, $2, 'master', 'HEAD') RETURNING id`, [
    eventId,
    suiteId,
  ]);
}
