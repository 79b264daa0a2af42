/**
 * Outgoing webhooks with closures, end to end: a real build (SSH git server, worker, Temporal)
 * reported to two receivers. One webhook's closure reshapes every lifecycle event (its body
 * and headers arrive, signed); the other's closure throws, so its receiver gets the default
 * payload and the delivery log says `throw`.
 */
import { Webhook } from 'standardwebhooks';
import { startReceiver, type ReceivedRequest, type Receiver } from '../support/receiver';
import { eventually } from '../support/sluice';
import { World } from '../support/world';

const CHAT_CLOSURE = `
function transform_payload(p) {
  var line = p.repository.org_name + '/' + p.repository.name + ' #' + p.session + ' ' + p.event + ': ' + p.status;
  return {
    status: 'ok',
    headers: { 'Content-Type': 'application/vnd.chat+json', 'X-Chat-Event': p.event },
    body: { text: line, ref: p.xid, session: p.session },
  };
}`;

const BROKEN_CLOSURE = `
function transform_payload(p) {
  throw new Error('broken on ' + p.event);
}`;

const LIFECYCLE = ['received', 'start', 'test', 'first-fail', 'stop'];

interface Delivery {
  id: number;
  xid: string;
  event: string;
  attempt: number;
  outcome: string;
}

let w: World;
let chat: Receiver;
let plain: Receiver;

beforeAll(async () => {
  w = await World.start({ webhook: false });
  [chat, plain] = await Promise.all([startReceiver(), startReceiver()]);
});
afterAll(async () => {
  await chat?.close();
  await plain?.close();
  await w?.stop();
});

describe('webhook closures on a real build', () => {
  it('one receiver gets the closure\'s body and headers for every event; a throwing closure falls back, and the log says throw', async () => {
    const chatHook = await w.sluice.admin<{ id: number; secret: string }>('POST', `/api/v1/orgs/${w.org.id}/webhooks`, {
      url: chat.url,
      closure: CHAT_CLOSURE,
      sign: true,
    });
    const plainHook = await w.sluice.admin<{ id: number }>('POST', `/api/v1/orgs/${w.org.id}/webhooks`, {
      url: plain.url,
      closure: BROKEN_CLOSURE,
    });
    // The chat receiver fails its first request once, to see a retry in the log.
    let failed = false;
    chat.respondWith(() => (failed ? { status: 200 } : ((failed = true), { status: 503, body: 'warming up' })));

    const repo = await w.makeRepo(
      { 'spec/1.sh': { content: 'exit 0' }, 'spec/2.sh': { content: 'exit 1' } },
      { suite: { branch: 'master', test_pattern: 'spec/*.sh', test_command: 'sh' } },
    );
    const { session } = await w.build(repo);

    const ofSession = (reqs: ReceivedRequest[]) => reqs.filter((r) => (r.json as { session?: number } | undefined)?.session === session);
    const delivered = (reqs: ReceivedRequest[]) => ofSession(reqs).filter((r) => r !== chat.requests[0]);
    await chat.waitFor((reqs) => delivered(reqs).length === LIFECYCLE.length, 90_000);
    await plain.waitFor((reqs) => ofSession(reqs).length === LIFECYCLE.length, 90_000);

    // The chat receiver: the closure's body and headers, ours on top, signed, in lifecycle order.
    const got = delivered(chat.requests);
    expect(got.map((r) => r.headers['x-chat-event'])).toEqual(LIFECYCLE);
    const verifier = new Webhook(chatHook.secret);
    for (const [i, req] of got.entries()) {
      const event = LIFECYCLE[i]!;
      const body = req.json as { text: string; ref: string; session: number };
      const status = event === 'received' ? 'queued' : event === 'stop' ? 'failed' : 'running';
      expect(body).toEqual({ text: `${w.org.name}/${repo.name} #${session} ${event}: ${status}`, ref: expect.any(String), session });
      expect(req.headers['content-type']).toBe('application/vnd.chat+json');
      expect(req.headers['x-sluice-event']).toBe(event);
      expect(req.headers['x-sluice-delivery']).toBe(body.ref);
      expect(req.headers['webhook-id']).toBe(body.ref);
      expect(verifier.verify(req.body, req.headers as Record<string, string>)).toEqual(body);
    }
    // The failed first attempt carried the same xid as the retry that followed it.
    expect(chat.requests[0]!.headers['x-sluice-delivery']).toBe((got[0]!.json as { ref: string }).ref);

    // The other receiver: the default payload of every event, as JSON.
    const plainGot = ofSession(plain.requests);
    expect(plainGot.map((r) => (r.json as { event: string }).event)).toEqual(LIFECYCLE);
    for (const req of plainGot) {
      expect(req.headers['content-type']).toBe('application/json');
      expect(req.json).toMatchObject({ session, xid: req.headers['x-sluice-delivery'], repository: { name: repo.name } });
    }

    // The delivery log, through the API.
    const logOf = async (hookId: number, expected: number) =>
      eventually(`the log of webhook ${hookId}`, async () => {
        const rows = await w.sluice.admin<Delivery[]>('GET', `/api/v1/webhooks/${hookId}/deliveries?session=${session}`);
        return rows.length === expected && rows;
      });
    const plainLog = await logOf(plainHook.id, LIFECYCLE.length);
    expect(plainLog.map((d) => d.event).reverse()).toEqual(LIFECYCLE);
    for (const d of plainLog) {
      const full = await w.sluice.admin<Record<string, unknown>>('GET', `/api/v1/deliveries/${d.id}`);
      expect(full).toMatchObject({ outcome: 'delivered', origin: 'event', closure_outcome: 'throw' });
      expect(String(full.closure_detail)).toMatch(new RegExp(`^transform_payload threw Error: broken on ${d.event} \\(line 3`));
      expect(JSON.parse(String(full.request_body))).toEqual(full.payload);
    }

    const chatLog = await logOf(chatHook.id, LIFECYCLE.length + 1);
    const [retried, ...rest] = [...chatLog].reverse();
    expect(retried).toMatchObject({ event: 'received', attempt: 1, outcome: 'retrying' });
    expect(rest.map((d) => [d.event, d.outcome])).toEqual(LIFECYCLE.map((e) => [e, 'delivered']));
    expect(rest[0]).toMatchObject({ xid: retried!.xid, attempt: 2 });
    const first = await w.sluice.admin<Record<string, string>>('GET', `/api/v1/deliveries/${retried!.id}`);
    expect(first).toMatchObject({ closure_outcome: 'ok', status_code: 503, error: 'HTTP 503: warming up', response_body: 'warming up' });
    // Due after the first interval of the retry policy Temporal runs it under (the e2e Sluice's:
    // 200 ms), spread ±25% by jitter.
    const wait = new Date(first.next_attempt_at!).getTime() - new Date(first.created_at!).getTime();
    expect(wait).toBeGreaterThanOrEqual(150);
    expect(wait).toBeLessThanOrEqual(250);
    for (const d of rest) {
      const full = await w.sluice.admin<Record<string, unknown>>('GET', `/api/v1/deliveries/${d.id}`);
      expect(full).toMatchObject({ closure_outcome: 'ok', closure_detail: null });
      const sent = got.find((r) => r.headers['x-sluice-delivery'] === d.xid)!;
      expect(full.request_body).toBe(sent.body);
      expect((full.request_headers as Record<string, string>)['webhook-signature']).toBe('[redacted]');
    }
  });
});
