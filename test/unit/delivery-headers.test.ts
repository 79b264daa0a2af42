import { composeRequest } from '../../src/delivery/compose';
import { closureMaySet, FRAMING_HEADERS } from '../../src/delivery/headers';

const ping = { event: 'ping' as const, timestamp: '2026-01-01T00:00:00Z', xid: 'x-1', webhook_id: 1, org_name: 'acme' };

describe('the header policy of outgoing webhooks', () => {
  it('keeps framing, hop-by-hop and Sluice headers from a closure, whatever their case', () => {
    for (const name of ['Host', 'Content-Length', 'Proxy-Connection', 'Transfer-Encoding', 'User-Agent', 'X-Sluice-Event', 'Webhook-Signature']) {
      expect([name, closureMaySet(name, { credentials: false })]).toEqual([name, false]);
    }
    expect(closureMaySet('X-Team', { credentials: false })).toBe(true);
  });

  it('lets a closure set Authorization only when the webhook has no credentials of its own', () => {
    expect(closureMaySet('Authorization', { credentials: false })).toBe(true);
    expect(closureMaySet('Authorization', { credentials: true })).toBe(false);
  });

  it('is the list the composer applies: a closure cannot replace Sluice headers', async () => {
    const closure = `function transform_payload(p) { return { status: 'ok', body: 'x', headers: { 'X-Sluice-Event': 'forged', 'Proxy-Connection': 'keep-alive', 'X-Team': 'a' } }; }`;
    const { headers } = await composeRequest(ping, closure, { credentials: false, secret: null });
    expect(headers).toMatchObject({ 'x-sluice-event': 'ping', 'x-team': 'a' });
    expect(Object.keys(headers).filter((h) => FRAMING_HEADERS.has(h))).toEqual([]);
  });
});
