/**
 * The SSRF guard on real connections: receivers on loopback are blocked by default (as an IP
 * literal in any spelling, and by name), reached once allowed, and a redirect is never a way
 * around it.
 */
import { closeDefaultAgent, newWebhookAgent, sendWebhook } from '../../src/delivery/send';
import { parseAllowList } from '../../src/ip/ranges';
import { hasOpenssl, startHttpsReceiver, startReceiver, type Receiver } from '../support/receiver';

const BODY = JSON.stringify({ event: 'start', xid: 'xid-ssrf' });
const LOOPBACK = parseAllowList('127.0.0.0/8');

describe('the SSRF guard', () => {
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

  it('blocks http://127.0.0.1 without an allow-list: fatal, said why, nothing sent', async () => {
    const result = await sendWebhook({ url: rx.url, body: BODY, headers: {} });
    expect(result).toMatchObject({
      kind: 'fatal',
      statusCode: null,
      error: 'blocked: 127.0.0.1 is a loopback address (allow it with SLUICE_WEBHOOK_ALLOW)',
    });
    expect(rx.requests).toHaveLength(0);
  });

  it('delivers to the same receiver once its range is allowed', async () => {
    const result = await sendWebhook({ url: rx.url, body: BODY, headers: {}, allow: LOOPBACK });
    expect(result).toMatchObject({ kind: 'delivered', statusCode: 200 });
    expect(rx.requests.map((r) => r.body)).toEqual([BODY]);
  });

  it('an allow-list for other ranges does not open loopback', async () => {
    const result = await sendWebhook({ url: rx.url, body: BODY, headers: {}, allow: parseAllowList('10.0.0.0/8, fd00::/8') });
    expect(result.kind).toBe('fatal');
    expect(result.error).toMatch(/^blocked: 127\.0\.0\.1 is a loopback address/);
    expect(rx.requests).toHaveLength(0);
  });

  it('blocks a name that resolves to loopback (localhost)', async () => {
    const url = `http://localhost:${rx.port}/hook`;
    const result = await sendWebhook({ url, body: BODY, headers: {} });
    expect(result).toMatchObject({ kind: 'fatal', statusCode: null });
    expect(result.error).toMatch(/^blocked: localhost resolves to (127\.0\.0\.1|::1), a loopback address/);
    expect(result.error).toContain('SLUICE_WEBHOOK_ALLOW');
    expect(rx.requests).toHaveLength(0);

    // Allowed, the name is reached (on the IPv4 address the receiver listens on).
    const allowed = await sendWebhook({ url, body: BODY, headers: {}, allow: LOOPBACK });
    expect(allowed).toMatchObject({ kind: 'delivered', statusCode: 200 });
    expect(rx.requests).toHaveLength(1);
  });

  it.each([
    ['decimal', (port: number) => `http://2130706433:${port}/hook`, '127.0.0.1'],
    ['hex and short', (port: number) => `http://0x7f.1:${port}/hook`, '127.0.0.1'],
    ['0.0.0.0 (which Linux connects to loopback)', (port: number) => `http://0.0.0.0:${port}/hook`, '0.0.0.0'],
    ['IPv6 loopback', (port: number) => `http://[::1]:${port}/hook`, '::1'],
    ['IPv4-mapped IPv6', (port: number) => `http://[::ffff:127.0.0.1]:${port}/hook`, '::ffff:7f00:1'],
  ])('blocks loopback written as an IP literal: %s', async (_name, url, address) => {
    const result = await sendWebhook({ url: url(rx.port), body: BODY, headers: {} });
    expect(result.kind).toBe('fatal');
    expect(result.error).toMatch(new RegExp(`^blocked: ${address.replace(/[.]/g, '\\.')} is `));
    expect(rx.requests).toHaveLength(0);
  });

  it('never follows a redirect, whether to a blocked address or not', async () => {
    const target = await startReceiver();
    try {
      rx.respondWith(() => ({ status: 302, headers: { Location: `http://localhost:${target.port}/internal` } }));
      const result = await sendWebhook({ url: rx.url, body: BODY, headers: {}, allow: LOOPBACK });
      expect(result).toMatchObject({ kind: 'fatal', statusCode: 302 });

      rx.respondWith(() => ({ status: 307, headers: { Location: 'http://169.254.169.254/latest/meta-data/' } }));
      expect(await sendWebhook({ url: rx.url, body: BODY, headers: {}, allow: LOOPBACK })).toMatchObject({
        kind: 'fatal',
        statusCode: 307,
      });

      // Give a follow-up request the chance to arrive, were one sent.
      await new Promise((r) => setTimeout(r, 100));
      expect(rx.requests).toHaveLength(2);
      expect(target.requests).toHaveLength(0);
    } finally {
      await target.close();
    }
  });

});

const describeTls = hasOpenssl() ? describe : describe.skip;

describeTls('the SSRF guard over HTTPS', () => {
  it('blocks before the TLS handshake, and delivers once allowed (certificate still verified)', async () => {
    const rx = await startHttpsReceiver();
    const url = `https://localhost:${rx.port}/hook`;
    const blocked = newWebhookAgent({ tls: { ca: rx.cert } });
    const allowed = newWebhookAgent({ allow: LOOPBACK, tls: { ca: rx.cert } });
    const untrusting = newWebhookAgent({ allow: LOOPBACK });
    try {
      const refused = await sendWebhook({ url, body: BODY, headers: {}, dispatcher: blocked });
      expect(refused.kind).toBe('fatal');
      expect(refused.error).toMatch(/^blocked: localhost resolves to/);

      expect(await sendWebhook({ url, body: BODY, headers: {}, dispatcher: allowed })).toMatchObject({ kind: 'delivered' });

      // Allowing an address never relaxes certificate checks.
      const selfSigned = await sendWebhook({ url, body: BODY, headers: {}, dispatcher: untrusting });
      expect(selfSigned.kind).toBe('fatal');
      expect(selfSigned.error).toContain('DEPTH_ZERO_SELF_SIGNED_CERT');
      expect(rx.requests).toHaveLength(1);
    } finally {
      await Promise.all([blocked.close(), allowed.close(), untrusting.close()]);
      await rx.close();
    }
  });
});
