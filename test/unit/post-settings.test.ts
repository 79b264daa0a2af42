/**
 * Reading SMTP_URL, the default sender, which SMTP failures are worth another attempt, and what
 * may be shown of a chat URL.
 */
import { chatOrigin } from '../../src/activities/post/chat';
import { defaultSender, isTransientSmtpError, parseSmtpUrl, type SmtpSettings } from '../../src/activities/post/email';

const BASE = 'https://ci.acme.example';
const parsed = (url: string, base = BASE): SmtpSettings => {
  const r = parseSmtpUrl(url, base);
  if ('error' in r) throw new Error(r.error);
  return r;
};

describe('parseSmtpUrl', () => {
  it('smtp://host:port: STARTTLS when offered, certificates verified', () => {
    const s = parsed('smtp://mail.acme.example:2525');
    expect(s.transport).toMatchObject({ host: 'mail.acme.example', port: 2525, secure: false, tls: { rejectUnauthorized: true } });
    expect(s.transport.auth).toBeUndefined();
    expect(s.transport.ignoreTLS).toBeUndefined();
    expect(s.display).toBe('smtp://mail.acme.example:2525');
    expect(s.from).toBe('Sluice <sluice@ci.acme.example>');
  });

  it('default ports: 587, and 465 for smtps', () => {
    expect(parsed('smtp://mail.acme.example').transport.port).toBe(587);
    expect(parsed('smtps://mail.acme.example').transport).toMatchObject({ port: 465, secure: true });
  });

  it('credentials, percent-decoded, kept out of what is shown', () => {
    const s = parsed('smtps://ci%40acme.example:p%40ss%3Aw0rd@mail.acme.example');
    expect(s.transport.auth).toEqual({ user: 'ci@acme.example', pass: 'p@ss:w0rd' });
    expect(s.display).toBe('smtps://mail.acme.example');
    expect(s.secrets).toContain('p@ss:w0rd');
    expect(s.secrets).toContain(Buffer.from('\0ci@acme.example\0p@ss:w0rd').toString('base64'));
  });

  it('?from= sets the sender', () => {
    expect(parsed('smtp://mail.acme.example?from=CI%20%3Cci%40acme.example%3E').from).toBe('CI <ci@acme.example>');
  });

  it('IPv6 hosts', () => {
    expect(parsed('smtp://[::1]:25').transport.host).toBe('::1');
  });

  it('never verifies certificates less, whatever else is given', () => {
    expect(parseSmtpUrl('smtp://m.example', BASE, { tls: { rejectUnauthorized: false } })).toMatchObject({
      transport: { tls: { rejectUnauthorized: true } },
    });
  });

  it('says what is wrong, without repeating a password', () => {
    expect(parseSmtpUrl('not a url', BASE)).toEqual({ error: 'SMTP_URL is not a URL (smtp://host:port or smtps://host:port)' });
    expect(parseSmtpUrl('https://u:secret@mail.example', BASE)).toEqual({ error: 'SMTP_URL: unsupported scheme https: (smtp: or smtps:)' });
    expect(parseSmtpUrl('smtp://u:secret@mail.example?pool=true', BASE)).toEqual({
      error: 'SMTP_URL: unknown parameter "pool" (only "from" is read)',
    });
  });
});

describe('defaultSender', () => {
  it("is sluice@ the base URL's host name, or localhost for an address or a bare name", () => {
    expect(defaultSender('https://ci.acme.example:8443/sluice')).toBe('Sluice <sluice@ci.acme.example>');
    expect(defaultSender('http://127.0.0.1:8080')).toBe('Sluice <sluice@localhost>');
    expect(defaultSender('http://[::1]:8080')).toBe('Sluice <sluice@localhost>');
    expect(defaultSender('http://localhost:8080')).toBe('Sluice <sluice@localhost>');
    expect(defaultSender('nonsense')).toBe('Sluice <sluice@localhost>');
  });
});

describe('isTransientSmtpError', () => {
  it('connection trouble and 4xx replies are worth another attempt', () => {
    for (const code of ['ECONNECTION', 'ETIMEDOUT', 'ESOCKET', 'EDNS']) expect(isTransientSmtpError({ code })).toBe(true);
    expect(isTransientSmtpError({ code: 'EMESSAGE', responseCode: 451 })).toBe(true);
    expect(isTransientSmtpError({ code: 'EENVELOPE', responseCode: 503, permanent: false })).toBe(true);
  });

  it('5xx, a refused login and a certificate that does not verify are not', () => {
    expect(isTransientSmtpError({ code: 'EMESSAGE', responseCode: 554, permanent: true })).toBe(false);
    expect(isTransientSmtpError({ code: 'EAUTH', responseCode: 535, permanent: true })).toBe(false);
    expect(isTransientSmtpError({ code: 'ESOCKET', message: 'self-signed certificate' })).toBe(false);
    expect(isTransientSmtpError({ code: 'ETLS', message: 'unable to verify the first certificate' })).toBe(false);
    expect(isTransientSmtpError({ code: 'ECONFIG' })).toBe(false);
    expect(isTransientSmtpError({})).toBe(false);
  });
});

describe('chatOrigin', () => {
  it('shows only scheme, host and port of a chat URL (its path is a credential)', () => {
    expect(chatOrigin('https://hooks.slack.com/services/T0/B0/secret')).toBe('https://hooks.slack.com');
    expect(chatOrigin(' http://chat.acme.example:8065/hooks/abc ')).toBe('http://chat.acme.example:8065');
    expect(chatOrigin('ftp://x/y')).toBeNull();
    expect(chatOrigin('nope')).toBeNull();
  });
});
