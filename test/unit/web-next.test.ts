/** Where sign-in sends you afterwards: only a path of this site (no open redirect). */
import { safeNext, signInNext } from '../../src/api/web/pages';

it('keeps paths of this site and refuses anything that leaves it', () => {
  expect(safeNext('/?status=failed')).toBe('/?status=failed');
  expect(safeNext('/1/reports/3?token=abc')).toBe('/1/reports/3?token=abc');
  for (const away of [undefined, '', 'https://evil.example/', '//evil.example/', '/\\evil.example/', 'evil', '/\tx', 'javascript:alert(1)']) {
    expect(safeNext(away)).toBe('/');
  }
});

describe('signInNext: where a request that needed signing in goes back to', () => {
  const BASE = 'https://ci.example.test';
  const request = (method: string, url: string, referer?: string, host = '127.0.0.1:8080') => ({ method, url, host, headers: referer === undefined ? {} : { referer } });

  it('a page: itself', () => {
    expect(signInNext(request('GET', '/builds/7?x=1'), BASE)).toBe('/builds/7?x=1');
  });

  it('a form (its POST address has no page): the page it was sent from, when that is ours', () => {
    expect(signInNext(request('POST', '/repos/3/settings', 'http://127.0.0.1:8080/repos/3'), BASE)).toBe('/repos/3');
    expect(signInNext(request('POST', '/repos/3/settings', 'https://ci.example.test/repos/3?saved=suite#suites', 'internal:3000'), BASE)).toBe('/repos/3?saved=suite');
  });

  it('a form with no Referer, or one from elsewhere: the home page', () => {
    for (const referer of [undefined, '', 'not a url', 'https://evil.example/repos/3', 'http://127.0.0.1:9999/repos/3', 'http://127.0.0.1:8080//evil.example/']) {
      expect(signInNext(request('POST', '/repos/3/settings', referer), BASE)).toBe('/');
    }
  });
});
