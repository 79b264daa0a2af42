// Action endpoints take no body, and many HTTP clients send `content-type: application/json`
// (or another type) on every request anyway: an empty body is no body, whatever its type.
import { parseAllowList } from '../../src/ip/ranges';
import { seedRepo, startApiHarness, type ApiHarness } from '../support/apiApp';
import { startReceiver, type Receiver } from '../support/receiver';

let h: ApiHarness;
let receiver: Receiver;
let webhookId: number;
let session: number;

beforeAll(async () => {
  receiver = await startReceiver();
  h = await startApiHarness({ config: { webhookAllow: parseAllowList('127.0.0.0/8') } });
  await h.admin('POST', '/api/v1/orgs', { name: 'empty', email: 'ci@example.com' });
  webhookId = (await h.admin('POST', '/api/v1/orgs/empty/webhooks', { url: receiver.url })).json().id;
  const { repo } = await seedRepo(h, { org: 'builds' });
  expect((await h.request({ method: 'POST', url: new URL(repo.webhook_url).pathname, payload: { branch: 'master' } })).statusCode).toBe(200);
  session = h.enqueued.at(-1)!.sessionId;
});

afterAll(async () => {
  await h?.close();
  await receiver?.close();
});

/** A POST whose body is `body` (empty by default) under `contentType`, with the admin token. */
const post = (url: string, contentType: string, body = '') =>
  h.request({ method: 'POST', url, headers: { authorization: `Bearer ${h.config.adminToken}`, 'content-type': contentType }, payload: body });

describe.each(['application/json', 'application/json; charset=utf-8', 'text/plain', 'application/x-www-form-urlencoded'])('an empty body sent as %s', (type) => {
  it('rotates a secret, pings and redelivers', async () => {
    const rotated = await post(`/api/v1/webhooks/${webhookId}/rotate-secret`, type);
    expect(rotated.statusCode).toBe(200);
    expect(rotated.json().secret).toEqual(expect.any(String));

    const ping = await post(`/api/v1/webhooks/${webhookId}/ping`, type);
    expect(ping.statusCode).toBe(200);
    expect(ping.json()).toMatchObject({ event: 'ping', outcome: 'delivered', attempt: 1 });

    const again = await post(`/api/v1/deliveries/${ping.json().id}/redeliver`, type);
    expect(again.statusCode).toBe(200);
    expect(again.json()).toMatchObject({ event: 'ping', outcome: 'delivered', attempt: 2, xid: ping.json().xid });
  });

  it('reaches rebuild and stop, which say what is really wrong', async () => {
    expect((await post('/api/v1/sessions/999999/rebuild', type)).statusCode).toBe(404);
    // Stop needs to know who stops (the admin token is nobody): the missing field is named, not the body.
    const stop = await post(`/api/v1/sessions/${session}/stop`, type);
    expect(stop.statusCode).toBe(400);
    expect(stop.json()).toMatchObject({ error: 'invalid request', field: 'stopped_by' });
  });
});

describe('a body that is there', () => {
  it('is still parsed as JSON, and refused when it is not JSON', async () => {
    const made = await post('/api/v1/orgs', 'application/json', '{"name":"full","email":"ci@example.com"}');
    expect(made.statusCode).toBe(201);
    const broken = await post('/api/v1/orgs', 'application/json', '{"name":');
    expect(broken.statusCode).toBe(400);
    expect(broken.json()).toMatchObject({ error: 'invalid request', field: 'body' });
    // Needed by a route that takes a body: an empty one is said to be missing, by the route.
    const missing = await post('/api/v1/orgs', 'application/json');
    expect(missing.statusCode).toBe(400);
  });

  it('is refused under any other type', async () => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml']) {
      const res = await post('/api/v1/orgs', type, 'name=x');
      expect(res.statusCode).toBe(415);
      expect(res.json()).toMatchObject({ error: 'unsupported media type', field: 'content-type' });
    }
  });
});
