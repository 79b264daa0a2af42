import { basicAuth, classify, parseRetryAfter, redact } from '../../src/delivery/send';
import { outcomeOf } from '../../src/delivery/backoff';
import { BlockedAddressError } from '../../src/delivery/ssrf';

const NOW = Date.parse('2025-01-01T00:00:00Z');

function errorWithCode(code: string, message = code): Error {
  return Object.assign(new Error(message), { code });
}

describe('classify: responses', () => {
  it.each([200, 201, 202, 204, 299])('%i is delivered', (statusCode) => {
    expect(classify({ statusCode })).toEqual({ kind: 'delivered', statusCode, error: null });
  });

  it.each([500, 502, 503, 504, 599, 408, 429])('%i is retryable', (statusCode) => {
    const r = classify({ statusCode });
    expect(r.kind).toBe('retryable');
    expect(r.statusCode).toBe(statusCode);
    expect(r.error).toBe(`HTTP ${statusCode}`);
    expect(r).not.toHaveProperty('retryAfterMs');
  });

  it.each([400, 401, 403, 404, 405, 410, 413, 422, 301, 302, 307, 308, 304, 100, 199])('%i is fatal', (statusCode) => {
    expect(classify({ statusCode }).kind).toBe('fatal');
  });

  it('carries Retry-After on a retryable answer, in seconds or as a date', () => {
    expect(classify({ statusCode: 503, retryAfter: '7' }, NOW).retryAfterMs).toBe(7000);
    expect(classify({ statusCode: 429, retryAfter: 'Wed, 01 Jan 2025 00:00:30 GMT' }, NOW).retryAfterMs).toBe(30_000);
    expect(classify({ statusCode: 429, retryAfter: ['2', '9'] }, NOW).retryAfterMs).toBe(2000);
  });

  it('ignores Retry-After on answers that are not retried', () => {
    expect(classify({ statusCode: 404, retryAfter: '5' })).not.toHaveProperty('retryAfterMs');
    expect(classify({ statusCode: 200, retryAfter: '5' })).not.toHaveProperty('retryAfterMs');
  });

  it('puts a printable, shortened excerpt of the response in the error', () => {
    expect(classify({ statusCode: 404, excerpt: 'no such\nhook' }).error).toBe('HTTP 404: no such hook');
    const long = classify({ statusCode: 500, excerpt: 'x'.repeat(1000) }).error ?? '';
    expect(long.length).toBeLessThan(220);
    expect(long.endsWith('…')).toBe(true);
    expect(classify({ statusCode: 500, excerpt: '  \n' }).error).toBe('HTTP 500');
  });
});

describe('classify: errors', () => {
  it.each(['ECONNREFUSED', 'ECONNRESET', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'UND_ERR_SOCKET', 'EPIPE'])(
    '%s is retryable',
    (code) => {
      const r = classify({ error: errorWithCode(code, `connect ${code} 10.0.0.1:443`) });
      expect(r).toEqual({ kind: 'retryable', statusCode: null, error: `${code}: connect ${code} 10.0.0.1:443` });
    },
  );

  it.each(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'ETIMEDOUT'])(
    '%s is a retryable timeout',
    (code) => {
      const r = classify({ error: errorWithCode(code), timeoutMs: 300 });
      expect(r.kind).toBe('retryable');
      expect(r.error).toBe(`timeout after 300 ms (${code})`);
    },
  );

  it('reads the overall deadline (AbortSignal.timeout) as a timeout', () => {
    const err = new DOMException('The operation was aborted due to timeout', 'TimeoutError');
    expect(classify({ error: err, timeoutMs: 250 })).toEqual({
      kind: 'retryable',
      statusCode: null,
      error: 'timeout after 250 ms',
    });
  });

  it.each([
    'DEPTH_ZERO_SELF_SIGNED_CERT',
    'SELF_SIGNED_CERT_IN_CHAIN',
    'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
    'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
    'CERT_HAS_EXPIRED',
    'ERR_TLS_CERT_ALTNAME_INVALID',
  ])('certificate failure %s is fatal (spec §5: dropped)', (code) => {
    const r = classify({ error: errorWithCode(code) });
    expect(r.kind).toBe('fatal');
    expect(r.error).toContain(code);
  });

  it('finds the code in a cause or an AggregateError', () => {
    const wrapped = Object.assign(new Error('fetch failed'), { cause: errorWithCode('SELF_SIGNED_CERT_IN_CHAIN') });
    expect(classify({ error: wrapped }).kind).toBe('fatal');
    const aggregate = new AggregateError([errorWithCode('ECONNREFUSED'), errorWithCode('ECONNREFUSED')], 'boom');
    expect(classify({ error: aggregate }).error).toBe('ECONNREFUSED: boom');
  });

  it('an address the SSRF guard blocked is fatal, with the guard\'s message, however wrapped', () => {
    const blocked = new BlockedAddressError('blocked: 10.0.0.1 is a private address (allow it with SLUICE_WEBHOOK_ALLOW)');
    const expected = { kind: 'fatal', statusCode: null, error: blocked.message };
    expect(classify({ error: blocked })).toEqual(expected);
    expect(classify({ error: Object.assign(new Error('fetch failed'), { code: 'UND_ERR_SOCKET', cause: blocked }) })).toEqual(expected);
  });

  it('a request undici refuses to send is fatal', () => {
    expect(classify({ error: errorWithCode('UND_ERR_INVALID_ARG', 'invalid x-a header') }).kind).toBe('fatal');
  });

  it('an error without a code is retryable', () => {
    expect(classify({ error: new Error('other side closed') })).toEqual({
      kind: 'retryable',
      statusCode: null,
      error: 'other side closed',
    });
    expect(classify({ error: 'weird' }).error).toBe('weird');
  });
});

describe('parseRetryAfter', () => {
  it('reads delta-seconds', () => {
    expect(parseRetryAfter('0', NOW)).toBe(0);
    expect(parseRetryAfter('120', NOW)).toBe(120_000);
    expect(parseRetryAfter(' 3 ', NOW)).toBe(3000);
  });

  it('reads the three HTTP-date forms', () => {
    expect(parseRetryAfter('Wed, 01 Jan 2025 00:01:00 GMT', NOW)).toBe(60_000);
    expect(parseRetryAfter('Wednesday, 01-Jan-25 00:01:00 GMT', NOW)).toBe(60_000);
    // asctime has no zone; HTTP says it is GMT, and so is this test's clock.
    expect(typeof parseRetryAfter('Wed Jan  1 00:01:00 2025', NOW)).toBe('number');
  });

  it('a date in the past means now', () => {
    expect(parseRetryAfter('Tue, 31 Dec 2024 23:00:00 GMT', NOW)).toBe(0);
  });

  it.each([undefined, '', 'soon', '-1', '1.5', '3s', 'Wed, 99 Foo 2025 GMT'])('%p is unreadable', (v) => {
    expect(parseRetryAfter(v, NOW)).toBeUndefined();
  });
});

describe('redact and basicAuth', () => {
  it('replaces every secret, longest first', () => {
    expect(redact('pw=s3cret token=s3cret-long', ['s3cret', 's3cret-long'])).toBe('pw=[redacted] token=[redacted]');
    expect(redact('nothing here', ['', 'x'.repeat(3)])).toBe('nothing here');
  });

  it('encodes user:password as UTF-8 base64, an empty password included', () => {
    expect(basicAuth('alice', 'pä:ss')).toBe('Basic ' + Buffer.from('alice:pä:ss').toString('base64'));
    expect(basicAuth('bob', '')).toBe('Basic Ym9iOg==');
  });
});

describe('outcomeOf', () => {
  const r = (kind: 'delivered' | 'retryable' | 'fatal') => ({ kind, statusCode: null, error: null, durationMs: 1 });

  it('maps attempt results to logged outcomes', () => {
    expect(outcomeOf(r('delivered'), 5, 5)).toBe('delivered');
    expect(outcomeOf(r('fatal'), 1, 5)).toBe('dropped');
    expect(outcomeOf(r('retryable'), 4, 5)).toBe('retrying');
    expect(outcomeOf(r('retryable'), 5, 5)).toBe('gave_up');
    expect(outcomeOf(r('retryable'), 1, 1)).toBe('gave_up');
  });

  it('treats maxAttempts 0 as unlimited, like Temporal', () => {
    expect(outcomeOf(r('retryable'), 1000, 0)).toBe('retrying');
  });
});
