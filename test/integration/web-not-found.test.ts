// A path no route has: a browser gets the pages' 404 page, an API client the API's JSON 404
// (issue 37: `/builds` answered a browser with `{"error":"not found"}`). Real HTTP, real PostgreSQL.
import { startApiHarness, type ApiHarness } from '../support/apiApp';

const BROWSER = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';

let h: ApiHarness;
beforeAll(async () => {
  h = await startApiHarness();
});
afterAll(async () => {
  await h.close();
});

describe('an unknown path', () => {
  it.each(['/builds', '/orgs/acme/nothing/here', '/no-such-page?x=1'])('%s is the 404 page for a browser', async (url) => {
    const res = await h.request({ method: 'GET', url, headers: { accept: BROWSER } });
    expect(res.statusCode).toBe(404);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.headers['content-security-policy']).toContain("default-src 'none'");
    expect(res.body).toContain('There is no such page.');
    expect(res.body).toContain('<a href="/">All builds</a>');
  });

  it.each([
    ['an API path, even for a browser', 'GET', '/api/v1/no-such-thing', BROWSER],
    ['a trigger path, even for a browser', 'GET', '/1/nothing', BROWSER],
    ['a client that asks for JSON', 'GET', '/builds', 'application/json'],
    ['a client that names no type', 'GET', '/builds', undefined],
    ['a POST', 'POST', '/no-such-form', BROWSER],
  ])('is JSON for %s', async (_what, method, url, accept) => {
    const res = await h.request({ method, url, headers: accept ? { accept } : {} });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ error: 'not found', message: 'no such route' });
  });
});
