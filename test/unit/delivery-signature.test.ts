/**
 * Standard Webhooks signatures against the independent `standardwebhooks` package, and what
 * the delivery log hides of the headers it records.
 */
import { Webhook } from 'standardwebhooks';
import { errorClassOf, redactHeaders } from '../../src/delivery/send';
import { newSigningSecret, signatureHeaders, signatureOf } from '../../src/delivery/signature';
import { BlockedAddressError } from '../../src/delivery/ssrf';

describe('signatures', () => {
  it('make secrets of 32 random bytes, each different', () => {
    const a = newSigningSecret();
    expect(a).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(a.slice(6), 'base64')).toHaveLength(32);
    expect(newSigningSecret()).not.toBe(a);
  });

  it('sign exactly as the standardwebhooks package does', () => {
    for (const body of ['{"event":"stop"}', 'plain text, ünïcödé', '']) {
      const secret = newSigningSecret();
      const at = new Date(1_735_689_600_000);
      expect(signatureOf(secret, 'xid-1', 1_735_689_600, body)).toBe(new Webhook(secret).sign('xid-1', at, body));
    }
  });

  it('give the three headers, which the package verifies (and rejects when anything changes)', () => {
    const secret = newSigningSecret();
    const body = JSON.stringify({ event: 'start', xid: 'abc' });
    const headers = signatureHeaders(secret, 'abc', body);
    expect(headers['webhook-id']).toBe('abc');
    expect(Number(headers['webhook-timestamp'])).toBeCloseTo(Date.now() / 1000, -1);
    expect(new Webhook(secret).verify(body, headers)).toEqual({ event: 'start', xid: 'abc' });
    expect(() => new Webhook(secret).verify(body + ' ', headers)).toThrow();
    expect(() => new Webhook(secret).verify(body, { ...headers, 'webhook-id': 'abd' })).toThrow();
    const old = signatureHeaders(secret, 'abc', body, new Date(Date.now() - 3_600_000));
    expect(() => new Webhook(secret).verify(body, old)).toThrow(/too old/i);
  });

  it('refuse a secret too short to be one', () => {
    expect(() => signatureOf('whsec_' + Buffer.alloc(8).toString('base64'), 'x', 1, '')).toThrow(/at least 24 bytes/);
  });
});

describe('redactHeaders', () => {
  it('hides credentials and signatures by name, and secrets wherever they appear', () => {
    expect(
      redactHeaders(
        {
          authorization: 'Basic dTpw',
          'Proxy-Authorization': 'x',
          cookie: 'a=b',
          'webhook-signature': 'v1,abc',
          'x-api-key': 'k',
          'X-Api_Key': 'k',
          'x-auth-token': 't',
          'x-client-secret': 's',
          'x-password': 'p',
          'x-note': 'the password is hunter2',
          'webhook-id': 'xid-1',
          'content-type': 'application/json',
        },
        ['hunter2'],
      ),
    ).toEqual({
      authorization: '[redacted]',
      'Proxy-Authorization': '[redacted]',
      cookie: '[redacted]',
      'webhook-signature': '[redacted]',
      'x-api-key': '[redacted]',
      'X-Api_Key': '[redacted]',
      'x-auth-token': '[redacted]',
      'x-client-secret': '[redacted]',
      'x-password': '[redacted]',
      'x-note': 'the password is [redacted]',
      'webhook-id': 'xid-1',
      'content-type': 'application/json',
    });
  });
});

describe('errorClassOf', () => {
  const coded = (code: string) => Object.assign(new Error(code), { code });
  it.each<[unknown, string]>([
    [new BlockedAddressError('blocked: 10.0.0.1 is a private address'), 'blocked'],
    [Object.assign(new Error('fetch failed'), { cause: new BlockedAddressError('blocked') }), 'blocked'],
    [coded('DEPTH_ZERO_SELF_SIGNED_CERT'), 'tls'],
    [coded('ERR_SSL_WRONG_VERSION_NUMBER'), 'tls'],
    [coded('UND_ERR_CONNECT_TIMEOUT'), 'timeout'],
    [Object.assign(new Error('timed out'), { name: 'TimeoutError' }), 'timeout'],
    [coded('ENOTFOUND'), 'dns'],
    [coded('ECONNREFUSED'), 'connection'],
    [coded('ECONNRESET'), 'connection'],
    [coded('UND_ERR_INVALID_ARG'), 'invalid_request'],
  ])('%s → %s', (err, expected) => {
    expect(errorClassOf(err)).toBe(expected);
  });
});
