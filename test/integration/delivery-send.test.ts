/**
 * sendWebhook against real HTTP and HTTPS receivers on loopback: what goes over the wire, and
 * how each kind of answer (or silence) is classified.
 */
import { Agent } from 'undici';
import { closeDefaultAgent, sendWebhook as guardedSend, USER_AGENT } from '../../src/delivery/send';
import { parseAllowList } from '../../src/ip/ranges';
import { hasOpenssl, startHttpsReceiver, startReceiver, type Receiver } from '../support/receiver';

const BODY = JSON.stringify({ event: 'start', xid: 'xid-1' });

/** The receivers live on loopback, which the SSRF guard blocks unless allowed (see delivery-ssrf). */
const LOOPBACK = parseAllowList('127.0.0.0/8');
const sendWebhook: typeof guardedSend = (opts) => guardedSend({ allow: LOOPBACK, ...opts });

describe('sendWebhook over HTTP', () => {
  let rx: Receiver;

  beforeEach(async () => {
    rx = await startReceiver();
  });
  afterEach(async () => {
    await rx.close();
  });
  afterAll(async () => {
    await closeDefaultAgent();
  });

  it('delivers the body with JSON, user-agent, caller and basic-auth headers', async () => {
    const result = await sendWebhook({
      url: rx.url,
      body: BODY,
      headers: { 'X-Sluice-Event': 'start', 'X-Sluice-Delivery': 'xid-1' },
      username: 'hoôk',
      password: 'pa:ss wörd',
    });

    expect(result).toMatchObject({ kind: 'delivered', statusCode: 200, error: null });
    expect(result.durationMs).toBeGreaterThanOrEqual(0);
    expect(rx.requests).toHaveLength(1);
    const req = rx.requests[0]!;
    expect(req.method).toBe('POST');
    expect(req.path).toBe('/hook');
    expect(req.body).toBe(BODY);
    expect(req.json).toEqual({ event: 'start', xid: 'xid-1' });
    expect(req.headers['content-type']).toBe('application/json');
    expect(req.headers['user-agent']).toBe(USER_AGENT);
    expect(req.headers['x-sluice-event']).toBe('start');
    expect(req.headers['x-sluice-delivery']).toBe('xid-1');
    const [scheme, token] = (req.headers.authorization ?? '').split(' ');
    expect(scheme).toBe('Basic');
    expect(Buffer.from(token ?? '', 'base64').toString('utf8')).toBe('hoôk:pa:ss wörd');
  });

  it('sends basic auth with an empty password, and none without a username', async () => {
    await sendWebhook({ url: rx.url, body: BODY, headers: {}, username: 'only-user', password: null });
    await sendWebhook({ url: rx.url, body: BODY, headers: {}, username: null, password: 'ignored' });
    expect(Buffer.from(rx.requests[0]!.headers.authorization!.slice(6), 'base64').toString()).toBe('only-user:');
    expect(rx.requests[1]!.headers.authorization).toBeUndefined();
  });

  it('takes credentials out of the URL and sends them as basic auth', async () => {
    const url = rx.url.replace('http://', 'http://urluser:url%40pass@');
    const result = await sendWebhook({ url, body: BODY, headers: {} });
    expect(result.kind).toBe('delivered');
    expect(Buffer.from(rx.requests[0]!.headers.authorization!.slice(6), 'base64').toString()).toBe('urluser:url@pass');
  });

  it('takes a stray % in URL credentials literally', async () => {
    const url = rx.url.replace('http://', 'http://u:100%zz@');
    expect((await sendWebhook({ url, body: BODY, headers: {} })).kind).toBe('delivered');
    expect(Buffer.from(rx.requests[0]!.headers.authorization!.slice(6), 'base64').toString()).toBe('u:100%zz');
  });

  it('trims trailing whitespace off the URL (spec §5)', async () => {
    const result = await sendWebhook({ url: rx.url + '  \n', body: BODY, headers: {} });
    expect(result.kind).toBe('delivered');
    expect(rx.requests[0]!.path).toBe('/hook');
  });

  it('lets no caller override framing headers, nor the configured Authorization', async () => {
    const result = await sendWebhook({
      url: rx.url,
      body: BODY,
      headers: { Host: 'evil.example', 'Content-Length': '1', Authorization: 'Bearer closure', 'X-Extra': 'yes' },
      username: 'u',
      password: 'p',
    });
    expect(result.kind).toBe('delivered');
    const req = rx.requests[0]!;
    expect(req.headers.host).toBe(`127.0.0.1:${rx.port}`);
    expect(req.body).toBe(BODY);
    expect(req.headers.authorization).toBe('Basic ' + Buffer.from('u:p').toString('base64'));
    expect(req.headers['x-extra']).toBe('yes');
  });

  it('500 is retryable, with an excerpt of the answer', async () => {
    rx.respondWith(() => ({ status: 500, body: 'database on fire' }));
    const result = await sendWebhook({ url: rx.url, body: BODY, headers: {} });
    expect(result).toMatchObject({ kind: 'retryable', statusCode: 500, error: 'HTTP 500: database on fire' });
    expect(result.retryAfterMs).toBeUndefined();
  });

  it('503 with Retry-After in seconds is retryable after that long', async () => {
    rx.respondWith(() => ({ status: 503, headers: { 'Retry-After': '7' } }));
    const result = await sendWebhook({ url: rx.url, body: BODY, headers: {} });
    expect(result).toMatchObject({ kind: 'retryable', statusCode: 503, retryAfterMs: 7000 });
  });

  it('429 with an HTTP-date Retry-After is retryable until then', async () => {
    const at = new Date(Date.now() + 60_000);
    rx.respondWith(() => ({ status: 429, headers: { 'Retry-After': at.toUTCString() } }));
    const result = await sendWebhook({ url: rx.url, body: BODY, headers: {} });
    expect(result.kind).toBe('retryable');
    expect(result.statusCode).toBe(429);
    // toUTCString drops milliseconds, and the request itself takes a moment.
    expect(result.retryAfterMs).toBeGreaterThan(55_000);
    expect(result.retryAfterMs).toBeLessThanOrEqual(60_000);
  });

  it('404 is fatal', async () => {
    rx.respondWith(() => ({ status: 404, body: 'no such hook' }));
    const result = await sendWebhook({ url: rx.url, body: BODY, headers: {} });
    expect(result).toMatchObject({ kind: 'fatal', statusCode: 404, error: 'HTTP 404: no such hook' });
  });

  it('301 is fatal and the redirect is not followed', async () => {
    rx.respondWith((req) =>
      req.path === '/hook' ? { status: 301, headers: { Location: `${rx.url}/moved` } } : { status: 200 },
    );
    const result = await sendWebhook({ url: rx.url, body: BODY, headers: {} });
    expect(result).toMatchObject({ kind: 'fatal', statusCode: 301 });
    // Give a follow-up request the chance to arrive, were one sent.
    await new Promise((r) => setTimeout(r, 100));
    expect(rx.requests.map((r) => r.path)).toEqual(['/hook']);
  });

  it('reads only the start of a huge answer, and does not wait for the rest', async () => {
    rx.respondWith(() => ({ status: 500, body: 'E'.repeat(4 * 1024 * 1024) }));
    const result = await sendWebhook({ url: rx.url, body: BODY, headers: {} });
    expect(result.kind).toBe('retryable');
    expect(result.error!.length).toBeLessThan(300);
  });

  it('connection refused is retryable; the same receiver back up is delivered', async () => {
    await rx.close();
    const down = await sendWebhook({ url: rx.url, body: BODY, headers: {} });
    expect(down).toMatchObject({ kind: 'retryable', statusCode: null });
    expect(down.error).toContain('ECONNREFUSED');

    await rx.listen();
    const up = await sendWebhook({ url: rx.url, body: BODY, headers: {} });
    expect(up.kind).toBe('delivered');
    expect(rx.requests).toHaveLength(1);
  });

  it('a receiver that never answers is a retryable timeout, at the deadline', async () => {
    rx.respondWith(() => new Promise(() => {}));
    const result = await sendWebhook({ url: rx.url, body: BODY, headers: {}, timeoutMs: 300 });
    expect(result).toMatchObject({ kind: 'retryable', statusCode: null });
    expect(result.error).toMatch(/^timeout after 300 ms/);
    expect(result.durationMs).toBeGreaterThanOrEqual(250);
    expect(result.durationMs).toBeLessThan(3000);
  });

  it('a 2xx whose body never ends is still delivered', async () => {
    await rx.close();
    const { createServer } = await import('node:http');
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'Content-Length': '100' });
      res.write('partial');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    try {
      const result = await sendWebhook({ url: `http://127.0.0.1:${port}/`, body: BODY, headers: {}, timeoutMs: 300 });
      expect(result).toMatchObject({ kind: 'delivered', statusCode: 200, error: null });
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });

  it('never puts the password or the Authorization header in an error', async () => {
    const password = 'S3cr3t-Pa55word';
    // A receiver that reflects the request into its error page.
    rx.respondWith((req) => ({ status: 401, body: `denied: ${JSON.stringify(req.headers)} ${password}` }));
    const result = await sendWebhook({ url: rx.url, body: BODY, headers: {}, username: 'alice', password });
    const authorization = rx.requests[0]!.headers.authorization!;
    expect(result.kind).toBe('fatal');
    expect(result.error).toContain('[redacted]');
    expect(result.error).not.toContain(password);
    expect(result.error).not.toContain(authorization.slice(6));
  });

  it('an invalid URL or scheme is fatal without a request', async () => {
    expect((await sendWebhook({ url: 'not a url', body: BODY, headers: {} })).kind).toBe('fatal');
    expect((await sendWebhook({ url: 'ftp://127.0.0.1/x', body: BODY, headers: {} })).kind).toBe('fatal');
  });
});

// openssl makes the self-signed certificate; without it there is nothing to test against.
const describeTls = hasOpenssl() ? describe : describe.skip;

describeTls('sendWebhook over HTTPS', () => {
  afterEach(async () => {
    await closeDefaultAgent();
  });

  it('a self-signed certificate is fatal (spec §5: dropped), and nothing is sent', async () => {
    const rx = await startHttpsReceiver();
    try {
      const result = await sendWebhook({ url: rx.url, body: BODY, headers: {}, username: 'u', password: 'p' });
      expect(result).toMatchObject({ kind: 'fatal', statusCode: null });
      expect(result.error).toContain('DEPTH_ZERO_SELF_SIGNED_CERT');
      expect(rx.requests).toHaveLength(0);
    } finally {
      await rx.close();
    }
  });

  it('stays fatal with NODE_TLS_REJECT_UNAUTHORIZED=0', async () => {
    const rx = await startHttpsReceiver();
    const saved = process.env.NODE_TLS_REJECT_UNAUTHORIZED;
    process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';
    try {
      const result = await sendWebhook({ url: rx.url, body: BODY, headers: {} });
      expect(result.kind).toBe('fatal');
      expect(rx.requests).toHaveLength(0);
    } finally {
      if (saved === undefined) delete process.env.NODE_TLS_REJECT_UNAUTHORIZED;
      else process.env.NODE_TLS_REJECT_UNAUTHORIZED = saved;
      await rx.close();
    }
  });

  it('the same receiver is delivered to by a client that trusts its certificate (control)', async () => {
    const rx = await startHttpsReceiver();
    const trusting = new Agent({ connect: { ca: rx.cert } });
    try {
      const result = await sendWebhook({ url: rx.url, body: BODY, headers: {}, dispatcher: trusting });
      expect(result.kind).toBe('delivered');
      expect(rx.requests[0]!.body).toBe(BODY);
    } finally {
      await trusting.close();
      await rx.close();
    }
  });
});
