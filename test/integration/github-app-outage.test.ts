/**
 * A GitHub App's webhook while PostgreSQL cannot be reached (issue 38): the app and its
 * repositories are read from it, so the delivery is refused with 503 and Retry-After, which
 * GitHub's log shows as failed and can redeliver: never answered 200 and lost. (An address where
 * nothing listens stands in for the database being away.)
 */
import { createHmac } from 'node:crypto';
import { startApiHarness, type ApiHarness } from '../support/apiApp';

let h: ApiHarness;
beforeAll(async () => {
  h = await startApiHarness({ databaseUrl: 'postgres://postgres@127.0.0.1:9/sluice_away', migrate: false });
});
afterAll(async () => {
  await h?.close().catch(() => undefined);
});

it('refuses a delivery with 503 and Retry-After while its app cannot be read', async () => {
  const body = JSON.stringify({ ref: 'refs/heads/main', repository: { id: 1 } });
  const res = await h.request({
    method: 'POST',
    url: '/api/v1/github-apps/hooks/abcdefghijklmnop',
    headers: { 'content-type': 'application/json', 'x-github-event': 'push', 'x-hub-signature-256': `sha256=${createHmac('sha256', 'x').update(body).digest('hex')}` },
    payload: body,
  });
  expect(res.statusCode).toBe(503);
  expect(res.headers['retry-after']).toBe('5');
  expect(res.json()).toMatchObject({ error: 'unavailable' });
});
