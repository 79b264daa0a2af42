/**
 * One delivery attempt (deliverAttempt) with the webhook's closure, its signing secret and the
 * full delivery log, against a real database and a real receiver: what the closure's `ok`
 * sends, what each closure failure falls back to (and that the log says which), Standard
 * Webhooks signatures checked with the independent `standardwebhooks` package, and what a log
 * row holds (and never holds).
 */
import { randomBytes } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import { Webhook } from 'standardwebhooks';
import { deliverAttempt } from '../../src/activities/delivery';
import type { DeliverDeps } from '../../src/delivery/attempt';
import { backoffDelay } from '../../src/delivery/backoff';
import { closeDefaultAgent, USER_AGENT } from '../../src/delivery/send';
import { newSigningSecret, signatureOf } from '../../src/delivery/signature';
import { parseAllowList } from '../../src/ip/ranges';
import type { DeliverInput } from '../../src/activities/types';
import type { OutgoingPayload } from '../../src/core/types';
import { seal } from '../../src/crypto/sealed';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { startReceiver, type Receiver } from '../support/receiver';
import { threadCpuMs } from '../support/cpu';

const PASSWORD = 'c0rrect-horse-battery-staple';
const secretKey = randomBytes(32);

let db: TestDatabase;
let rx: Receiver;
let deps: DeliverDeps;
let orgId: number;

beforeAll(async () => {
  db = await createTestDatabase();
  deps = { pool: db.pool, secretKey, timeoutMs: 2_000, allow: parseAllowList('127.0.0.0/8') };
  orgId = (await db.pool.query<{ id: number }>(`INSERT INTO orgs (name, email) VALUES ('acme', 'ops@acme.test') RETURNING id`)).rows[0]!.id;
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

async function createWebhook(opts: { closure?: string | null; secret?: string | null; username?: string | null; password?: string | null } = {}) {
  const password = opts.password === undefined ? PASSWORD : opts.password;
  const { rows } = await db.pool.query<{ id: number }>(
    `INSERT INTO webhooks (org_id, url, username, password_sealed, secret_sealed, closure) VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`,
    [
      orgId,
      rx.url,
      opts.username === undefined ? 'sluice' : opts.username,
      password === null ? null : seal(secretKey, password),
      opts.secret ? seal(secretKey, opts.secret) : null,
      opts.closure ?? null,
    ],
  );
  return rows[0]!.id;
}

function payload(overrides: Partial<OutgoingPayload> = {}): OutgoingPayload {
  return {
    event: 'stop',
    timestamp: '2025-01-01T00:00:00.000Z',
    session: 41,
    guid: '6f1c1c2e-4a7b-4a39-9d55-1d3f2f7a2b10',
    url: 'http://sluice.test/1/reports/41',
    profile_name: 'default',
    commit_id: 'abc123',
    committers: ['dev@acme.test'],
    status: 'passed',
    counts: { notstarted: 0, started: 0, passed: 3, failed: 0, pending: 0, skipped: 0, error: 0 },
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
  return { webhookId, sessionId: null, payload: payload(), maxAttempts: 5, ...overrides };
}

/** Every column of a webhook's log rows, oldest first, as PostgreSQL has them. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function rawRows(webhookId: number): Promise<any[]> {
  return (await db.pool.query('SELECT * FROM deliveries WHERE webhook_id = $1 ORDER BY id', [webhookId])).rows;
}

async function attemptThatThrows(p: Promise<unknown>): Promise<ApplicationFailure> {
  const err = await p.then(
    () => new Error('expected the attempt to throw'),
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApplicationFailure);
  return err as ApplicationFailure;
}

const SLACK_CLOSURE = `
function transform_payload(p) {
  return {
    status: 'ok',
    headers: {
      'Content-Type': 'text/plain; charset=utf-8',
      'X-Team': 'widgets',
      // Ours, whatever the closure says:
      'X-Sluice-Event': 'forged',
      'x-sluice-delivery': 'forged',
      'User-Agent': 'forged',
      'Authorization': 'Bearer forged',
      'webhook-id': 'forged',
    },
    body: p.repository.name + ' #' + p.session + ': ' + p.status,
  };
}`;

describe('a closure that answers ok', () => {
  it('sends its body as it is and its headers under ours, and the log says ok', async () => {
    const id = await createWebhook({ closure: SLACK_CLOSURE });
    const inp = input(id);
    expect(await deliverAttempt(deps, inp, 1)).toEqual({ outcome: 'delivered', statusCode: 200 });

    const req = rx.requests[0]!;
    expect(req.body).toBe('widgets #41: passed');
    expect(req.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(req.headers['x-team']).toBe('widgets');
    expect(req.headers['x-sluice-event']).toBe('stop');
    expect(req.headers['x-sluice-delivery']).toBe(inp.payload.xid);
    expect(req.headers['user-agent']).toBe(USER_AGENT);
    expect(req.headers['webhook-id']).toBeUndefined(); // unsigned: no signature headers at all
    expect(Buffer.from(req.headers.authorization!.slice(6), 'base64').toString()).toBe(`sluice:${PASSWORD}`);

    const [row] = await rawRows(id);
    expect(row).toMatchObject({
      outcome: 'delivered',
      origin: 'event',
      closure_outcome: 'ok',
      closure_detail: null,
      request_body: 'widgets #41: passed',
      payload: inp.payload,
      url: rx.url,
      error_class: null,
      next_attempt_at: null,
    });
    expect(row.request_headers).toEqual({
      'content-type': 'text/plain; charset=utf-8',
      'x-team': 'widgets',
      'user-agent': USER_AGENT,
      'x-sluice-event': 'stop',
      'x-sluice-delivery': inp.payload.xid,
      authorization: '[redacted]',
    });
  });

  it('may send Authorization of its own when the webhook has no credentials (logged redacted)', async () => {
    const id = await createWebhook({ closure: SLACK_CLOSURE, username: null, password: null });
    await deliverAttempt(deps, input(id), 1);
    expect(rx.requests[0]!.headers.authorization).toBe('Bearer forged');
    const [row] = await rawRows(id);
    expect(row.request_headers.authorization).toBe('[redacted]');
    expect(JSON.stringify(row)).not.toContain('Bearer forged');
  });

  it('a JSON body of the closure is JSON-encoded and sent as application/json', async () => {
    const id = await createWebhook({
      closure: 'function transform_payload(p) { return { status: "ok", headers: {}, body: { text: p.event + " " + p.xid } } }',
    });
    const inp = input(id);
    await deliverAttempt(deps, inp, 1);
    expect(rx.requests[0]!.json).toEqual({ text: `stop ${inp.payload.xid}` });
    expect(rx.requests[0]!.headers['content-type']).toBe('application/json');
  });
});

describe('a closure that fails sends the default payload, and the log says why', () => {
  // Every row has all four values: jest would take a missing last one for a `done` callback.
  it.each<[string, string, RegExp, { deadlineMs?: number }]>([
    ['status', 'function transform_payload() { return { status: "skip", headers: {}, body: "x" } }', /^transform_payload returned status "skip"$/, {}],
    ['throw', 'function transform_payload(p) {\n  throw new Error("no " + p.event);\n}', /^transform_payload threw Error: no stop \(line 2/, {}],
    ['timeout', 'function transform_payload() { for (;;) {} }', /^transform_payload ran past the 50 ms deadline$/, {}],
    // A longer deadline, so that it is the memory cap that stops it.
    ['memory', 'function transform_payload() { return new ArrayBuffer(512 * 1024 * 1024) }', /out of memory|sandbox failed/, { deadlineMs: 5_000 }],
    ['stack', 'function f(n) { return f(n + 1) + 1 }\nfunction transform_payload() { return f(0) }', /overflowed the stack/, {}],
    ['malformed', 'function transform_payload() { return { status: "ok", headers: { "X-N": 5 }, body: "" } }', /^header "X-N" must be a string/, {}],
    ['malformed', 'function transform_payload() { return 42 }', /must return an object/, {}],
  ])('%s', async (reason, closure, detail, closureLimits) => {
    const id = await createWebhook({ closure });
    const inp = input(id);
    // Bounds on this thread's CPU time, not on the clock: on a busy machine the clock says how
    // long we waited for a core (support/cpu.ts).
    const started = threadCpuMs();
    expect(await deliverAttempt({ ...deps, closureLimits }, inp, 1)).toEqual({ outcome: 'delivered', statusCode: 200 });

    const req = rx.requests[0]!;
    expect(req.json).toEqual(inp.payload);
    expect(req.headers['content-type']).toBe('application/json');
    expect(req.headers['x-sluice-delivery']).toBe(inp.payload.xid);
    const [row] = await rawRows(id);
    expect(row).toMatchObject({ outcome: 'delivered', closure_outcome: reason, payload: inp.payload, request_body: JSON.stringify(inp.payload) });
    expect(row.closure_detail).toMatch(detail);

    // The next delivery, with a healthy closure, is neither broken nor slowed by what came before.
    const next = await createWebhook({ closure: SLACK_CLOSURE });
    const t = threadCpuMs();
    await deliverAttempt(deps, input(next), 1);
    expect(threadCpuMs() - t).toBeLessThan(500);
    expect(rx.requests[1]!.body).toBe('widgets #41: passed');
    expect(threadCpuMs() - started).toBeLessThan(closureLimits.deadlineMs ?? 2_000);
  });
});

describe('Standard Webhooks signatures', () => {
  it('each attempt is signed, and the independent implementation verifies it', async () => {
    const secret = newSigningSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const id = await createWebhook({ secret });
    const inp = input(id);
    rx.respondWith(() => ({ status: 503 }));
    await attemptThatThrows(deliverAttempt(deps, inp, 1));
    rx.respondWith(() => ({ status: 200 }));
    await deliverAttempt(deps, inp, 2);

    const wh = new Webhook(secret);
    for (const req of rx.requests) {
      expect(req.headers['webhook-id']).toBe(inp.payload.xid);
      expect(Math.abs(Number(req.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(10);
      expect(req.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
      expect(wh.verify(req.body, req.headers as Record<string, string>)).toEqual(inp.payload);
    }
    // Another secret, or a changed body, does not verify.
    const req = rx.requests[0]!;
    expect(() => new Webhook(newSigningSecret()).verify(req.body, req.headers as Record<string, string>)).toThrow();
    expect(() => wh.verify(req.body.replace('passed', 'failed'), req.headers as Record<string, string>)).toThrow();
    // The log shows that a signature was sent, never the signature itself.
    for (const row of await rawRows(id)) {
      expect(row.request_headers['webhook-signature']).toBe('[redacted]');
      expect(row.request_headers['webhook-id']).toBe(inp.payload.xid);
      expect(JSON.stringify(row)).not.toContain(req.headers['webhook-signature']!.slice(3));
    }
  });

  it('signs what a closure sends, and a closure cannot replace the signature', async () => {
    const secret = newSigningSecret();
    const id = await createWebhook({
      secret,
      closure: 'function transform_payload(p) { return { status: "ok", headers: { "Webhook-Signature": "v1,forged" }, body: { s: p.session } } }',
    });
    await deliverAttempt(deps, input(id), 1);
    const req = rx.requests[0]!;
    expect(req.body).toBe('{"s":41}');
    expect(new Webhook(secret).verify(req.body, req.headers as Record<string, string>)).toEqual({ s: 41 });
    const ts = Number(req.headers['webhook-timestamp']);
    expect(req.headers['webhook-signature']).toBe(signatureOf(secret, String(req.headers['webhook-id']), ts, req.body));
  });

  it('a secret sealed under another key drops the attempt without sending', async () => {
    const id = await createWebhook({ secret: newSigningSecret(), password: null, username: null });
    const f = await attemptThatThrows(deliverAttempt({ ...deps, secretKey: randomBytes(32) }, input(id), 1));
    expect(f.nonRetryable).toBe(true);
    expect(rx.requests).toHaveLength(0);
    expect(await rawRows(id)).toMatchObject([{ outcome: 'dropped', error_class: 'configuration', request_headers: null }]);
  });
});

describe('the log row of an attempt', () => {
  it('holds the answer: status, headers and the first 4 KiB of the body', async () => {
    const id = await createWebhook();
    rx.respondWith(() => ({ status: 502, headers: { 'X-Upstream': 'down', 'Set-Cookie': 'sid=abc' }, body: 'y'.repeat(10_000) }));
    await attemptThatThrows(deliverAttempt(deps, input(id), 1));
    const [row] = await rawRows(id);
    expect(row).toMatchObject({ status_code: 502, outcome: 'retrying', error_class: 'http_status' });
    expect(row.response_headers).toMatchObject({ 'x-upstream': 'down', 'set-cookie': '[redacted]' });
    expect(row.response_body).toBe('y'.repeat(4096));
  });

  it('says when the next attempt is due: the retry policy, or the receiver\'s Retry-After', async () => {
    const id = await createWebhook();
    const retry = { initialIntervalMs: 1_000, backoffCoefficient: 2, maximumIntervalMs: 5_000 };
    rx.respondWith(() => ({ status: 500 }));
    for (const attempt of [1, 2, 3, 4]) {
      const before = Date.now();
      const f = await attemptThatThrows(deliverAttempt(deps, input(id), attempt, retry));
      const row = (await rawRows(id)).at(-1);
      const due = new Date(row.next_attempt_at).getTime() - before;
      // The policy's backoff, spread ±25% (jitter); the log says the delay Temporal was given.
      const expected = Math.min(5_000, 1_000 * 2 ** (attempt - 1));
      const delay = Number(f.nextRetryDelay);
      expect(delay).toBeGreaterThanOrEqual(expected * 0.75);
      expect(delay).toBeLessThanOrEqual(expected * 1.25);
      expect(due).toBeGreaterThanOrEqual(delay - 5);
      expect(due).toBeLessThan(delay + 1_000);
    }
    rx.respondWith(() => ({ status: 429, headers: { 'Retry-After': '120' } }));
    const before = Date.now();
    const f = await attemptThatThrows(deliverAttempt({ ...deps, maxRetryAfterMs: 60_000 }, input(id), 1, retry));
    expect(f.nextRetryDelay).toBe(60_000);
    const due = new Date((await rawRows(id)).at(-1).next_attempt_at).getTime() - before;
    expect(due).toBeGreaterThanOrEqual(60_000 - 5);
    expect(due).toBeLessThan(61_000);
    // No next attempt after the last one, or after a delivery.
    await attemptThatThrows(deliverAttempt(deps, input(id, { maxAttempts: 2 }), 2, retry));
    expect((await rawRows(id)).at(-1)).toMatchObject({ outcome: 'gave_up', next_attempt_at: null });
  });

  it('backoffDelay follows Temporal: initial × coefficient^(attempt-1), capped, with its defaults', () => {
    expect([1, 2, 3, 4, 5].map((a) => backoffDelay(a, { initialIntervalMs: 200, backoffCoefficient: 3, maximumIntervalMs: 4_000 }))).toEqual([
      200, 600, 1_800, 4_000, 4_000,
    ]);
    expect(backoffDelay(1, {})).toBe(1_000);
    expect(backoffDelay(20, {})).toBe(100_000);
  });

  it('names the class of the error', async () => {
    const id = await createWebhook();
    await rx.close();
    await attemptThatThrows(deliverAttempt(deps, input(id), 1));
    await attemptThatThrows(deliverAttempt({ ...deps, allow: [] }, input(id), 1));
    rx.respondWith(() => ({ status: 410 }));
    await rx.listen();
    await attemptThatThrows(deliverAttempt(deps, input(id), 1));
    expect((await rawRows(id)).map((r) => [r.outcome, r.error_class])).toEqual([
      ['retrying', 'connection'],
      ['dropped', 'blocked'],
      ['dropped', 'http_status'],
    ]);
  });

  it('never holds the password, the Authorization header or the signing secret, in any column', async () => {
    const secret = newSigningSecret();
    const id = await createWebhook({ secret });
    // A receiver that echoes everything it got into its answer, headers and body.
    rx.respondWith((req) => ({
      status: 401,
      headers: { 'X-Echo-Auth': String(req.headers.authorization), 'X-Echo-Sig': String(req.headers['webhook-signature']) },
      body: JSON.stringify({ got: req.headers, pw: PASSWORD }),
    }));
    await attemptThatThrows(deliverAttempt(deps, input(id), 1));
    rx.respondWith(() => ({ status: 200 }));
    await deliverAttempt(deps, input(id), 1);

    const authorization = rx.requests[0]!.headers.authorization!;
    const signature = rx.requests[0]!.headers['webhook-signature']!;
    const rows = await rawRows(id);
    expect(rows.map((r) => r.outcome)).toEqual(['dropped', 'delivered']);
    const everything = JSON.stringify(rows);
    expect(everything).toContain('[redacted]');
    for (const secretText of [PASSWORD, authorization, authorization.slice(6), signature.slice(3), secret, secret.slice(6)]) {
      expect(everything).not.toContain(secretText);
    }
  });
});

