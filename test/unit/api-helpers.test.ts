import { redactUrl } from '../../src/api/logging';
import { escapeHtml } from '../../src/api/web/pages';
import { prefersJson } from '../../src/api/routes/reports';

const KEY = 'Zm9vYmFyYmF6cXV4cXV1eHF1dXhxdXV4cXV1';

describe('redactUrl', () => {
  it.each([
    [`/1/builds/${KEY}`, '/1/builds/[redacted]'],
    [`/1/builds/${KEY}?branch=dev`, '/1/builds/[redacted]?branch=dev'],
    [`/1/github/${KEY}/`, '/1/github/[redacted]'],
    [`/1/builds/${KEY}/extra/more`, '/1/builds/[redacted]'],
    [`/1/${KEY}`, '/1/[redacted]'],
    [`//1//builds/${KEY}`, '/1/builds/[redacted]'],
    ['/1/builds/short', '/1/builds/[redacted]'],
    ['/1/reports/42', '/1/reports/42'],
    ['/1/reports/42?x=1', '/1/reports/42?x=1'],
    ['/1/reports/42?token=0123456789abcdef0123456789abcdef', '/1/reports/42?token=[redacted]'],
    ['/1/reports/42?x=1&Token=abc&y=2', '/1/reports/42?x=1&Token=[redacted]&y=2'],
    [`/builds/${KEY}`, '/builds/[redacted]'],
    [`/x/${encodeURIComponent(KEY)}`, '/x/[redacted]'],
    ['/ci_events/0b8f6c2e-5d7a-4c59-9c1e-2f3a4b5c6d7e/guid', '/ci_events/0b8f6c2e-5d7a-4c59-9c1e-2f3a4b5c6d7e/guid'],
    ['/api/v1/repos/acme%2Fwidgets', '/api/v1/repos/acme%2Fwidgets'],
    ['/healthz', '/healthz'],
    // An identity provider's answer: its one-time code and state are not for the logs.
    ['/auth/corp/callback?code=abc123&state=xyz&iss=https%3A%2F%2Fsso', '/auth/corp/callback?code=[redacted]&state=[redacted]&iss=https%3A%2F%2Fsso'],
    ['/api/v1/sessions?token=oops', '/api/v1/sessions?token=[redacted]'],
  ])('%s → %s', (url, expected) => {
    expect(redactUrl(url)).toBe(expected);
  });
});

describe('prefersJson', () => {
  it.each<[string | undefined, boolean]>([
    [undefined, false],
    ['', false],
    ['*/*', false],
    ['text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8', false],
    ['application/json', true],
    ['application/json, */*', true],
    ['application/json;q=0.5, text/html', false],
    ['text/html, application/json', false],
    ['application/json, text/html;q=0.9', true],
    ['application/json;q=0.5, */*', false],
    ['Application/JSON', true],
  ])('%j → %s', (accept, expected) => {
    expect(prefersJson(accept)).toBe(expected);
  });
});

describe('escapeHtml', () => {
  it('escapes the five HTML metacharacters', () => {
    expect(escapeHtml(`<a href="x" onclick='y'>&</a>`)).toBe('&lt;a href=&quot;x&quot; onclick=&#39;y&#39;&gt;&amp;&lt;/a&gt;');
  });

  it('renders null and undefined as nothing', () => {
    expect(escapeHtml(null)).toBe('');
    expect(escapeHtml(undefined)).toBe('');
    expect(escapeHtml(0)).toBe('0');
  });
});
