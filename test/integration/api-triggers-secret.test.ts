// Optional beyond the spec: a repository's webhook secret, set through PATCH, and the
// signatures every trigger path then needs.
import { createHmac } from 'node:crypto';
import { unseal } from '../../src/crypto/sealed';
import { countRows, seedRepo, startApiHarness, type ApiHarness } from '../support/apiApp';

let h: ApiHarness;
let repoId: number;
let key: string;
const SECRET = 'correct-horse-battery-staple';

beforeAll(async () => {
  h = await startApiHarness();
  const seeded = await seedRepo(h, { branches: ['master'] });
  repoId = seeded.repo.id;
  key = seeded.repo.key;
});
afterAll(() => h?.close());

const sign = (body: string, secret = SECRET) => `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
const post = (path: string, headers: Record<string, string>, body: string) =>
  h.request({ method: 'POST', url: `/1/${path}/${key}`, headers: { 'content-type': 'application/json', ...headers }, payload: body });

describe('webhook secret', () => {
  it('is off by default: the key alone authorizes', async () => {
    expect((await h.admin('GET', `/api/v1/repos/${repoId}`)).json().webhook_secret_set).toBe(false);
    expect((await post('builds', {}, '{}')).statusCode).toBe(200);
  });

  it('is set through PATCH, stored sealed and never shown', async () => {
    const res = await h.admin('PATCH', `/api/v1/repos/${repoId}`, { webhook_secret: SECRET });
    expect(res.statusCode).toBe(200);
    expect(res.json().webhook_secret_set).toBe(true);
    expect(res.body).not.toContain(SECRET);
    const { rows } = await h.db.pool.query('SELECT webhook_secret_sealed FROM repos WHERE id = $1', [repoId]);
    expect(rows[0].webhook_secret_sealed).not.toContain(SECRET);
    expect(unseal(h.config.secretKey, rows[0].webhook_secret_sealed)).toBe(SECRET);
  });

  it.each<[string, unknown, string]>([
    ['too short', 'short', 'must be at least 16 characters'],
    ['with a space', 'a secret with spaces', 'printable ASCII without spaces only'],
    ['not a string', 42, 'expected string'],
  ])('400 for a secret %s', async (_name, value, message) => {
    const res = await h.admin('PATCH', `/api/v1/repos/${repoId}`, { webhook_secret: value });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: 'invalid request', field: 'webhook_secret', message });
  });

  it('then a trigger without a signature is a 401 and stores nothing', async () => {
    const before = await countRows(h, 'ci_events');
    const res = await post('builds', {}, '{}');
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual({ error: 'unauthorized', field: 'headers.x-hub-signature-256', message: expect.stringContaining('webhook secret') });
    const wrong = await post('github', { 'x-github-event': 'ping', 'x-hub-signature-256': sign('{}', 'another-secret-0000') }, '{}');
    expect(wrong.statusCode).toBe(401);
    expect(await countRows(h, 'ci_events')).toBe(before);
    expect(h.enqueued).toHaveLength(1);
  });

  it('and a signed one is accepted, on the generic path and on providers', async () => {
    const body = '{"branch":"master"}';
    expect((await post('builds', { 'x-hub-signature-256': sign(body) }, body)).statusCode).toBe(200);
    expect((await post('github', { 'x-github-event': 'ping', 'x-hub-signature-256': sign('{"zen":"x"}') }, '{"zen":"x"}')).json()).toMatchObject({ ignored: expect.any(String) });
    const gitlab = await post('gitlab', { 'x-gitlab-event': 'Push Hook', 'x-gitlab-token': SECRET }, '{}');
    expect(gitlab.statusCode).toBe(400); // past the secret, on to the (empty) payload
    const empty = await h.request({ method: 'POST', url: `/1/builds/${key}`, headers: { 'x-hub-signature-256': sign('') } });
    expect(empty.statusCode).toBe(200);
  });

  it('refuses ?branch=, which the signature does not cover, so a signed trigger cannot be replayed for another branch', async () => {
    const before = h.enqueued.length;
    const res = await h.request({ method: 'POST', url: `/1/builds/${key}?branch=release`, headers: { 'x-hub-signature-256': sign('') } });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      error: 'invalid trigger',
      field: 'branch',
      message: 'with a webhook secret, name the branch in the signed body: ?branch= is not covered by the signature',
    });
    expect(h.enqueued).toHaveLength(before);
  });

  it('is removed with null', async () => {
    const res = await h.admin('PATCH', `/api/v1/repos/${repoId}`, { webhook_secret: null });
    expect(res.json().webhook_secret_set).toBe(false);
    expect((await post('builds', {}, '{}')).statusCode).toBe(200);
  });
});
