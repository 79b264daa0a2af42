/**
 * The webhook management API beyond plain CRUD, over real HTTP against a real database and a
 * real receiver on loopback: closures checked on save, signing secrets shown once, preview,
 * ping, the delivery log (paging, filters, one attempt in full) and redelivery.
 */
import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { deliverAttempt } from '../../src/activities/delivery';
import type { DeliverDeps } from '../../src/delivery/attempt';
import { closeDefaultAgent } from '../../src/delivery/send';
import { parseAllowList } from '../../src/ip/ranges';
import type { OutgoingPayload } from '../../src/core/types';
import { keyHash, unseal } from '../../src/crypto/sealed';
import { seedRepo, startApiHarness, type ApiHarness } from '../support/apiApp';
import { startReceiver, type Receiver } from '../support/receiver';

const PASSWORD = 'hunter2-but-longer-and-secret';
const OK_CLOSURE = `function transform_payload(p) {
  return { status: 'ok', headers: { 'X-Kind': 'chat' }, body: { text: p.repository.name + ' ' + p.event + ' ' + p.status } };
}`;

let h: ApiHarness;
let rx: Receiver;
let orgId: number;
let orgName: string;
let repoName: string;
/** Every response body the API gave, to check that no secret ever appears in one. */
const bodies: string[] = [];

async function admin(method: string, url: string, body?: unknown) {
  const res = await h.admin(method, url, body);
  bodies.push(res.body);
  return res;
}

beforeAll(async () => {
  h = await startApiHarness({ config: { webhookAllow: parseAllowList('127.0.0.0/8') } });
  const seeded = await seedRepo(h, { repo: 'gadgets' });
  orgId = seeded.orgId;
  repoName = String(seeded.repo.name);
  orgName = (await h.db.pool.query<{ name: string }>('SELECT name FROM orgs WHERE id = $1', [orgId])).rows[0]!.name;
  rx = await startReceiver();
});

afterAll(async () => {
  await rx?.close();
  await closeDefaultAgent();
  await h?.close();
});

beforeEach(() => {
  rx.requests.length = 0;
  rx.respondWith(() => ({ status: 200, body: 'ok' }));
});

async function createHook(body: Record<string, unknown> = {}) {
  const res = await admin('POST', `/api/v1/orgs/${orgId}/webhooks`, { url: rx.url, username: 'ci', password: PASSWORD, ...body });
  expect(res.statusCode).toBe(201);
  return res.json() as { id: number; signed: boolean; secret?: string };
}

function deliverDeps(): DeliverDeps {
  return { pool: h.db.pool, secretKey: h.config.secretKey, allow: h.config.webhookAllow, timeoutMs: 2_000 };
}

function payload(event: OutgoingPayload['event'], session: number, xid = `xid-${randomBytes(6).toString('hex')}`): OutgoingPayload {
  return {
    event,
    timestamp: '2025-01-01T00:00:00.000Z',
    session,
    guid: '6f1c1c2e-4a7b-4a39-9d55-1d3f2f7a2b10',
    url: `https://ci.example.test/1/reports/${session}`,
    profile_name: 'default',
    commit_id: 'abc123',
    committers: [],
    status: event === 'stop' ? 'passed' : 'running',
    counts: { notstarted: 0, started: 0, passed: 1, failed: 0, pending: 0, skipped: 0, error: 0 },
    workers: 1,
    timing: {},
    branch: 'master',
    ref: null,
    repository: { name: repoName, url: 'git@scm.example.test:acme/gadgets.git', org_name: orgName },
    xid,
  };
}

describe('closures are compiled when saved', () => {
  it.each([
    ['a syntax error', 'function transform_payload(p) { return {', /^SyntaxError: .*\(line 1/],
    ['no transform_payload', 'function transform(p) { return p }', /does not define a function transform_payload/],
    ['top-level code that throws', 'throw new Error("nope"); function transform_payload() {}', /^Error: nope/],
    ['top-level code that never ends', 'for (;;) {}', /deadline/],
  ])('400 for %s, on create and on update, and nothing is saved', async (_name, closure, message) => {
    const created = await admin('POST', `/api/v1/orgs/${orgId}/webhooks`, { url: rx.url, closure });
    expect(created.statusCode).toBe(400);
    expect(created.json()).toEqual({ error: 'invalid request', field: 'closure', message: expect.stringMatching(message) });

    const hook = await createHook({ closure: OK_CLOSURE });
    const patched = await admin('PATCH', `/api/v1/webhooks/${hook.id}`, { closure, active: false });
    expect(patched.statusCode).toBe(400);
    expect(patched.json()).toEqual({ error: 'invalid request', field: 'closure', message: expect.stringMatching(message) });
    expect((await admin('GET', `/api/v1/webhooks/${hook.id}`)).json()).toMatchObject({ closure: OK_CLOSURE, active: true });
  });

  it('accepts a good closure on update, and null clears it', async () => {
    const hook = await createHook();
    expect((await admin('PATCH', `/api/v1/webhooks/${hook.id}`, { closure: OK_CLOSURE })).json()).toMatchObject({ closure: OK_CLOSURE });
    expect((await admin('PATCH', `/api/v1/webhooks/${hook.id}`, { closure: null })).json()).toMatchObject({ closure: null });
  });
});

describe('signing secrets', () => {
  it('are made with sign: true, shown once, and kept sealed', async () => {
    const hook = await createHook({ sign: true });
    expect(hook.signed).toBe(true);
    expect(hook.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(hook.secret!.slice(6), 'base64')).toHaveLength(32);

    const shown = await admin('GET', `/api/v1/webhooks/${hook.id}`);
    expect(shown.json()).toMatchObject({ signed: true });
    expect(shown.json()).not.toHaveProperty('secret');
    const { rows } = await h.db.pool.query('SELECT * FROM webhooks WHERE id = $1', [hook.id]);
    expect(JSON.stringify(rows)).not.toContain(hook.secret!.slice(6));
    expect(unseal(h.config.secretKey, rows[0].secret_sealed)).toBe(hook.secret);

    // sign: true again keeps the secret (and does not show it); rotate replaces it; sign: false removes it.
    const again = (await admin('PATCH', `/api/v1/webhooks/${hook.id}`, { sign: true })).json();
    expect(again).toMatchObject({ signed: true });
    expect(again).not.toHaveProperty('secret');
    const rotated = (await admin('POST', `/api/v1/webhooks/${hook.id}/rotate-secret`)).json();
    expect(rotated.secret).toMatch(/^whsec_/);
    expect(rotated.secret).not.toBe(hook.secret);
    const off = (await admin('PATCH', `/api/v1/webhooks/${hook.id}`, { sign: false })).json();
    expect(off).toMatchObject({ signed: false });
    const on = (await admin('PATCH', `/api/v1/webhooks/${hook.id}`, { sign: true })).json();
    expect(on.secret).toMatch(/^whsec_/);
    expect([hook.secret, rotated.secret]).not.toContain(on.secret);
    expect((await admin('GET', `/api/v1/orgs/${orgId}/webhooks`)).body).not.toContain('whsec_');
  });

  it('a ping is signed with the secret shown, and standardwebhooks verifies it', async () => {
    const hook = await createHook({ sign: true });
    const res = await admin('POST', `/api/v1/webhooks/${hook.id}/ping`);
    expect(res.statusCode).toBe(200);
    const req = rx.requests[0]!;
    const verified = new Webhook(hook.secret!).verify(req.body, req.headers as Record<string, string>);
    expect(verified).toMatchObject({ event: 'ping', webhook_id: hook.id });
    expect(res.json().request_headers['webhook-signature']).toBe('[redacted]');
  });
});

describe('preview', () => {
  it('runs the closure on a realistic payload of the event asked for, and shows what would be sent', async () => {
    const hook = await createHook({ closure: OK_CLOSURE, sign: true });
    const res = await admin('POST', `/api/v1/webhooks/${hook.id}/preview`, { event: 'first-fail' });
    expect(res.statusCode).toBe(200);
    const { payload, result, would_send } = res.json();
    expect(payload).toMatchObject({
      event: 'first-fail',
      status: 'running',
      url: expect.stringMatching(/^https:\/\/ci\.example\.test\/1\/reports\/\d+\?token=\S+$/),
      repository: { name: repoName, url: 'git@scm.example.test:acme/widgets.git', org_name: orgName },
      counts: expect.objectContaining({ failed: 1 }),
      xid: expect.any(String),
    });
    expect(result).toEqual({ kind: 'ok', headers: { 'X-Kind': 'chat' }, body: `{"text":"${repoName} first-fail running"}` });
    expect(would_send.body).toBe(result.body);
    expect(would_send.headers).toEqual({
      'content-type': 'application/json',
      'x-kind': 'chat',
      'user-agent': 'Sluice-Webhooks/1',
      'x-sluice-event': 'first-fail',
      'x-sluice-delivery': payload.xid,
      'webhook-id': payload.xid,
      'webhook-timestamp': expect.stringMatching(/^\d+$/),
      'webhook-signature': '[redacted]',
      authorization: '[redacted]',
    });
    // Nothing was sent, nothing logged.
    expect(rx.requests).toHaveLength(0);
    expect((await admin('GET', `/api/v1/webhooks/${hook.id}/deliveries`)).json()).toEqual([]);
  });

  it('defaults to stop, may try an unsaved closure, and shows a fallback for what would fail', async () => {
    const hook = await createHook({ closure: OK_CLOSURE });
    const stop = (await admin('POST', `/api/v1/webhooks/${hook.id}/preview`)).json();
    expect(stop.payload).toMatchObject({ event: 'stop', status: 'passed' });
    expect(stop.result.kind).toBe('ok');

    const failing = (
      await admin('POST', `/api/v1/webhooks/${hook.id}/preview`, { event: 'start', closure: 'function transform_payload(p) { return p.nope.deeper }' })
    ).json();
    expect(failing.result).toEqual({ kind: 'fallback', reason: 'throw', detail: expect.stringMatching(/^transform_payload threw TypeError/) });
    expect(JSON.parse(failing.would_send.body)).toEqual(failing.payload);
    expect(failing.would_send.headers['content-type']).toBe('application/json');

    const none = (await admin('POST', `/api/v1/webhooks/${hook.id}/preview`, { event: 'received', closure: null })).json();
    expect(none.result).toBeNull();
    expect(JSON.parse(none.would_send.body)).toEqual(none.payload);

    const bad = await admin('POST', `/api/v1/webhooks/${hook.id}/preview`, { event: 'finished' });
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toMatchObject({ field: 'event' });
    expect((await admin('POST', '/api/v1/webhooks/999999/preview', {})).statusCode).toBe(404);
  });
});

describe('ping', () => {
  it('sends a test event with a fresh xid, and answers with its log row', async () => {
    const hook = await createHook();
    rx.respondWith(() => ({ status: 200, headers: { 'X-Receiver': 'rx-1' }, body: 'ok' }));
    const first = await admin('POST', `/api/v1/webhooks/${hook.id}/ping`);
    const second = await admin('POST', `/api/v1/webhooks/${hook.id}/ping`);
    expect(first.statusCode).toBe(200);
    const row = first.json();
    expect(rx.requests).toHaveLength(2);
    const sent = rx.requests[0]!.json as Record<string, unknown>;
    expect(sent).toEqual({ event: 'ping', timestamp: expect.any(String), xid: row.xid, webhook_id: hook.id, org_name: orgName });
    expect(rx.requests[0]!.headers['x-sluice-event']).toBe('ping');
    expect(second.json().xid).not.toBe(row.xid);
    expect(row).toMatchObject({
      webhook_id: hook.id,
      event: 'ping',
      session: null,
      attempt: 1,
      origin: 'ping',
      outcome: 'delivered',
      status_code: 200,
      error: null,
      error_class: null,
      next_attempt_at: null,
      url: rx.url,
      closure_outcome: null,
      payload: sent,
      request_body: rx.requests[0]!.body,
      response_body: 'ok',
    });
    expect(row.request_headers.authorization).toBe('[redacted]');
    expect(row.response_headers['x-receiver']).toBe('rx-1');
  });

  it('reports a receiver that fails: one attempt, gave_up, no retry', async () => {
    const hook = await createHook();
    rx.respondWith(() => ({ status: 503, body: 'down for maintenance' }));
    const row = (await admin('POST', `/api/v1/webhooks/${hook.id}/ping`)).json();
    expect(row).toMatchObject({ outcome: 'gave_up', status_code: 503, error: 'HTTP 503: down for maintenance', error_class: 'http_status', next_attempt_at: null });
    rx.respondWith(() => ({ status: 404 }));
    expect((await admin('POST', `/api/v1/webhooks/${hook.id}/ping`)).json()).toMatchObject({ outcome: 'dropped', status_code: 404 });
  });

  it('works on a switched-off webhook, and is blocked by the SSRF guard like any delivery', async () => {
    const hook = await createHook({ url: rx.url });
    await admin('PATCH', `/api/v1/webhooks/${hook.id}`, { active: false });
    expect((await admin('POST', `/api/v1/webhooks/${hook.id}/ping`)).json()).toMatchObject({ outcome: 'delivered' });

    const blocked = await createHook({ url: 'http://[::1]:9/hook' });
    expect((await admin('POST', `/api/v1/webhooks/${blocked.id}/ping`)).json()).toMatchObject({
      outcome: 'dropped',
      error_class: 'blocked',
      error: expect.stringContaining('blocked: ::1 is a loopback address'),
    });
  });
});

describe('the delivery log', () => {
  let hookId: number;
  let sessions: number[];
  /** Row ids in the order they were written. */
  let ids: number[];

  beforeAll(async () => {
    hookId = (await createHook()).id;
    sessions = [await createSession(), await createSession()];
    const deps = deliverDeps();
    const attempts: Array<[OutgoingPayload['event'], number, 200 | 500 | 404, number]> = [
      ['received', 0, 200, 1],
      ['start', 0, 500, 1],
      ['start', 0, 200, 2],
      ['stop', 0, 200, 1],
      ['received', 1, 200, 1],
      ['start', 1, 404, 1],
      ['stop', 1, 200, 1],
    ];
    const xids = new Map<string, string>();
    for (const [event, s, status, attempt] of attempts) {
      rx.respondWith(() => ({ status }));
      const key = `${event}-${s}`;
      if (!xids.has(key)) xids.set(key, `xid-${key}-${randomBytes(4).toString('hex')}`);
      const p = payload(event, sessions[s]!, xids.get(key));
      await deliverAttempt(deps, { webhookId: hookId, sessionId: sessions[s]!, payload: p, maxAttempts: 3 }, attempt).catch(() => undefined);
    }
    const { rows } = await h.db.pool.query<{ id: number }>('SELECT id FROM deliveries WHERE webhook_id = $1 ORDER BY id', [hookId]);
    ids = rows.map((r) => r.id);
  });

  const list = async (query = '') => {
    const res = await admin('GET', `/api/v1/webhooks/${hookId}/deliveries${query}`);
    expect(res.statusCode).toBe(200);
    return res.json() as Array<{ id: number; event: string; outcome: string; session: number; attempt: number }>;
  };

  it('lists attempts newest first, in pages', async () => {
    const all = await list();
    expect(all.map((d) => d.id)).toEqual([...ids].reverse());
    expect(Object.keys(all[0]!).sort()).toEqual(
      ['attempt', 'created_at', 'duration_ms', 'error', 'event', 'id', 'outcome', 'session', 'status_code', 'xid'].sort(),
    );
    const pages: number[][] = [];
    let before = '';
    for (;;) {
      const page = await list(`?limit=3${before}`);
      if (page.length === 0) break;
      pages.push(page.map((d) => d.id));
      before = `&before=${page.at(-1)!.id}`;
    }
    expect(pages.map((p) => p.length)).toEqual([3, 3, 1]);
    expect(pages.flat()).toEqual([...ids].reverse());
  });

  it('filters by event, outcome and session, alone and together, with paging', async () => {
    expect((await list('?event=start')).map((d) => [d.session, d.attempt, d.outcome])).toEqual([
      [sessions[1], 1, 'dropped'],
      [sessions[0], 2, 'delivered'],
      [sessions[0], 1, 'retrying'],
    ]);
    expect((await list('?outcome=retrying')).map((d) => d.event)).toEqual(['start']);
    expect((await list(`?session=${sessions[1]}`)).map((d) => d.event)).toEqual(['stop', 'start', 'received']);
    expect((await list(`?session=${sessions[0]}&outcome=delivered`)).map((d) => d.event)).toEqual(['stop', 'start', 'received']);
    expect((await list(`?session=${sessions[0]}&event=start&outcome=delivered`)).map((d) => d.attempt)).toEqual([2]);
    const firstPage = await list(`?session=${sessions[0]}&limit=2`);
    expect(firstPage.map((d) => d.event)).toEqual(['stop', 'start']);
    expect((await list(`?session=${sessions[0]}&limit=2&before=${firstPage[1]!.id}`)).map((d) => [d.event, d.attempt])).toEqual([
      ['start', 1],
      ['received', 1],
    ]);
    expect(await list('?event=first-fail')).toEqual([]);
  });

  it.each([
    ['?event=finished', 'event'],
    ['?outcome=lost', 'outcome'],
    ['?session=abc', 'session'],
    ['?before=0', 'before'],
    ['?limit=501', 'limit'],
  ])('400 for %s', async (query, field) => {
    const res = await admin('GET', `/api/v1/webhooks/${hookId}/deliveries${query}`);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: 'invalid request', field });
  });

  it('shows one attempt in full', async () => {
    const res = await admin('GET', `/api/v1/deliveries/${ids[1]}`);
    expect(res.statusCode).toBe(200);
    const d = res.json();
    expect(d).toMatchObject({
      id: ids[1],
      webhook_id: hookId,
      event: 'start',
      session: sessions[0],
      attempt: 1,
      origin: 'event',
      outcome: 'retrying',
      status_code: 500,
      error: 'HTTP 500',
      error_class: 'http_status',
      url: rx.url,
      closure_outcome: null,
      closure_detail: null,
      response_body: '',
      response_headers: expect.objectContaining({ date: expect.any(String) }),
    });
    expect(new Date(d.next_attempt_at).getTime()).toBeGreaterThan(new Date(d.created_at).getTime());
    expect(JSON.parse(d.request_body)).toEqual(d.payload);
    expect(d.request_headers).toEqual({
      'content-type': 'application/json',
      'user-agent': 'Sluice-Webhooks/1',
      'x-sluice-event': 'start',
      'x-sluice-delivery': d.xid,
      authorization: '[redacted]',
    });
    for (const id of ['999999', 'abc', '0']) expect((await admin('GET', `/api/v1/deliveries/${id}`)).statusCode).toBe(404);
  });
});

describe('redeliver', () => {
  it('sends the event again with the same xid and payload, as the next attempt, and answers with its row', async () => {
    const hookId = (await createHook()).id;
    const session = await createSession();
    const p = payload('stop', session);
    rx.respondWith(() => ({ status: 500 }));
    await deliverAttempt(deliverDeps(), { webhookId: hookId, sessionId: session, payload: p, maxAttempts: 2 }, 1).catch(() => undefined);
    await deliverAttempt(deliverDeps(), { webhookId: hookId, sessionId: session, payload: p, maxAttempts: 2 }, 2).catch(() => undefined);
    const [last, first] = (await admin('GET', `/api/v1/webhooks/${hookId}/deliveries`)).json();
    expect([first.attempt, first.outcome, last.attempt, last.outcome]).toEqual([1, 'retrying', 2, 'gave_up']);

    rx.respondWith(() => ({ status: 200 }));
    rx.requests.length = 0;
    // Any attempt of the event will do, the first one too: the next number follows the highest.
    const res = await admin('POST', `/api/v1/deliveries/${first.id}/redeliver`);
    expect(res.statusCode).toBe(200);
    const row = res.json();
    expect(row).toMatchObject({ webhook_id: hookId, xid: p.xid, event: 'stop', session, attempt: 3, origin: 'redeliver', outcome: 'delivered' });
    expect(rx.requests).toHaveLength(1);
    expect(rx.requests[0]!.json).toEqual(p);
    expect(rx.requests[0]!.headers['x-sluice-delivery']).toBe(p.xid);

    // Again, failing this time: attempt 4, one attempt only (gave_up, nothing due).
    rx.respondWith(() => ({ status: 502 }));
    const again = (await admin('POST', `/api/v1/deliveries/${row.id}/redeliver`)).json();
    expect(again).toMatchObject({ xid: p.xid, attempt: 4, outcome: 'gave_up', status_code: 502, next_attempt_at: null });
    const listed = (await admin('GET', `/api/v1/webhooks/${hookId}/deliveries`)).json();
    expect(listed.map((d: { id: number }) => d.id)).toEqual([again.id, row.id, last.id, first.id]);
    expect((await admin('GET', `/api/v1/deliveries/${again.id}`)).json()).toEqual(again);
  });

  it('runs the closure and signs as the webhook is configured now', async () => {
    const hook = await createHook();
    const ping = (await admin('POST', `/api/v1/webhooks/${hook.id}/ping`)).json();
    const signed = (await admin('PATCH', `/api/v1/webhooks/${hook.id}`, { sign: true, closure: OK_CLOSURE })).json();
    rx.requests.length = 0;
    const row = (await admin('POST', `/api/v1/deliveries/${ping.id}/redeliver`)).json();
    expect(row).toMatchObject({ xid: ping.xid, attempt: 2, closure_outcome: 'throw' }); // a ping has no repository
    const req = rx.requests[0]!;
    expect(new Webhook(signed.secret).verify(req.body, req.headers as Record<string, string>)).toEqual(ping.payload);
  });

  it('concurrent redeliveries of one event get distinct attempt numbers', async () => {
    const hook = await createHook();
    const ping = (await admin('POST', `/api/v1/webhooks/${hook.id}/ping`)).json();
    const rows = await Promise.all([1, 2, 3].map(() => admin('POST', `/api/v1/deliveries/${ping.id}/redeliver`)));
    expect(rows.map((r) => r.json().attempt).sort()).toEqual([2, 3, 4]);
  });

  it('404 for an unknown attempt, 409 for one without a stored payload', async () => {
    expect((await admin('POST', '/api/v1/deliveries/999999/redeliver')).statusCode).toBe(404);
    const hook = await createHook();
    const { rows } = await h.db.pool.query<{ id: number }>(
      `INSERT INTO deliveries (webhook_id, event, xid, attempt, outcome, duration_ms) VALUES ($1, 'stop', 'old', 1, 'delivered', 1) RETURNING id`,
      [hook.id],
    );
    const res = await admin('POST', `/api/v1/deliveries/${rows[0]!.id}/redeliver`);
    expect(res.statusCode).toBe(409);
    expect(res.json()).toEqual({ error: 'conflict', message: 'this attempt has no stored payload to send again' });
  });
});

describe('secrets', () => {
  it('no password, Authorization header or signing secret in any log row or API answer', async () => {
    const hook = await createHook({ sign: true });
    // A receiver that echoes what it got, credentials and all.
    rx.respondWith((req) => ({ status: 500, headers: { 'X-Echo': String(req.headers.authorization) }, body: JSON.stringify(req.headers) }));
    const row = (await admin('POST', `/api/v1/webhooks/${hook.id}/ping`)).json();
    await admin('POST', `/api/v1/deliveries/${row.id}/redeliver`);
    await admin('GET', `/api/v1/deliveries/${row.id}`);
    await admin('POST', `/api/v1/webhooks/${hook.id}/preview`, {});

    const authorization = rx.requests.at(-1)!.headers.authorization!;
    const signatures = rx.requests.map((r) => String(r.headers['webhook-signature']).slice(3));
    const { rows } = await h.db.pool.query('SELECT * FROM deliveries');
    const everything = JSON.stringify(rows) + bodies.filter((b) => !b.includes('"secret":"whsec_')).join('\n');
    expect(everything).toContain('[redacted]');
    for (const s of [PASSWORD, authorization, authorization.slice(6), hook.secret!, hook.secret!.slice(6), ...signatures]) {
      expect(everything).not.toContain(s);
    }
  });
});

/** The chain a session row needs: repo, suite, ci_event. */
async function createSession(): Promise<number> {
  const q = async (sql: string, params: unknown[]) => (await h.db.pool.query<{ id: number }>(sql, params)).rows[0]!.id;
  const repoId = await q(
    `INSERT INTO repos (org_id, name, scm, pull_url, key_hash, key_sealed, ssh_public_key, ssh_private_key_sealed)
     VALUES ($1, $2, 'git', 'git@scm.test:acme/x.git', $3, 'sealed', 'ssh-ed25519 AAAA', 'sealed') RETURNING id`,
    [orgId, `x-${randomBytes(3).toString('hex')}`, keyHash(randomBytes(8).toString('hex'))],
  );
  const suiteId = await q(`INSERT INTO suites (repo_id, branch, test_pattern) VALUES ($1, 'master', '*.sh') RETURNING id`, [repoId]);
  const eventId = await q(
    `INSERT INTO ci_events (guid, repo_id, provider, decision, trigger) VALUES (gen_random_uuid(), $1, 'builds', 'build', '{}') RETURNING id`,
    [repoId],
  );
  return q(`INSERT INTO sessions (ci_event_id, suite_id, branch, head) VALUES ($1, $2, 'master', 'HEAD') RETURNING id`, [eventId, suiteId]);
}
