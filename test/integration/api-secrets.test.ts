// Build secrets through the management API against a real PostgreSQL: set, list, replace,
// delete; values sealed at rest and never in any answer; and the suite's junit_pattern.
import { unseal } from '../../src/crypto/sealed';
import { MAX_SECRETS_PER_REPO } from '../../src/app/secrets';
import { seedRepo, startApiHarness, type ApiHarness } from '../support/apiApp';

let h: ApiHarness;
let repoId: number;
let suiteId: number;
const VALUE = 'sk_live_0123456789abcdef-very-secret';

/** Every answer, to check that no value ever appears in one. */
const bodies: string[] = [];
async function admin(method: string, url: string, body?: unknown) {
  const res = await h.admin(method, url, body);
  bodies.push(res.body);
  return res;
}

beforeAll(async () => {
  h = await startApiHarness();
  const seeded = await seedRepo(h, { org: 'acme', repo: 'widgets' });
  repoId = seeded.repo.id;
  suiteId = seeded.suites[0]!.id;
});

afterAll(async () => {
  await h.close();
});

describe('secrets', () => {
  it('PUT creates a secret: 201 with its name and times, never the value', async () => {
    const res = await admin('PUT', `/api/v1/repos/${repoId}/secrets/DEPLOY_TOKEN`, { value: VALUE });
    expect(res.statusCode).toBe(201);
    expect(res.json()).toEqual({ name: 'DEPLOY_TOKEN', masked: true, created_at: expect.any(String), updated_at: expect.any(String) });
  });

  it('stores the value sealed with the secret key', async () => {
    const { rows } = await h.db.pool.query<{ value_sealed: string }>('SELECT value_sealed FROM repo_secrets WHERE repo_id = $1 AND name = $2', [
      repoId,
      'DEPLOY_TOKEN',
    ]);
    expect(rows[0]!.value_sealed).not.toContain(VALUE);
    expect(rows[0]!.value_sealed).toMatch(/^v1:/);
    expect(unseal(h.config.secretKey, rows[0]!.value_sealed)).toBe(VALUE);
  });

  it('PUT on an existing name replaces the value: 204', async () => {
    const before = (await admin('GET', `/api/v1/repos/${repoId}/secrets`)).json()[0];
    await new Promise((r) => setTimeout(r, 10));
    const res = await admin('PUT', `/api/v1/repos/acme%2Fwidgets/secrets/DEPLOY_TOKEN`, { value: `${VALUE}-2` });
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');
    const after = (await admin('GET', `/api/v1/repos/${repoId}/secrets`)).json()[0];
    expect(after.created_at).toBe(before.created_at);
    expect(new Date(after.updated_at).getTime()).toBeGreaterThan(new Date(before.updated_at).getTime());
    const { rows } = await h.db.pool.query<{ value_sealed: string }>('SELECT value_sealed FROM repo_secrets WHERE name = $1', ['DEPLOY_TOKEN']);
    expect(unseal(h.config.secretKey, rows[0]!.value_sealed)).toBe(`${VALUE}-2`);
  });

  it('GET lists names and times only, in name order, and says which values are too short to mask', async () => {
    expect((await admin('PUT', `/api/v1/repos/${repoId}/secrets/A_SHORT`, { value: 'abc' })).statusCode).toBe(201);
    const multiline = '-----BEGIN KEY-----\nline\n-----END KEY-----\n';
    expect((await admin('PUT', `/api/v1/repos/${repoId}/secrets/_KEY2`, { value: multiline })).statusCode).toBe(201);
    const res = await admin('GET', `/api/v1/repos/${repoId}/secrets`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual([
      { name: 'A_SHORT', masked: false, created_at: expect.any(String), updated_at: expect.any(String) },
      { name: 'DEPLOY_TOKEN', masked: true, created_at: expect.any(String), updated_at: expect.any(String) },
      { name: '_KEY2', masked: true, created_at: expect.any(String), updated_at: expect.any(String) },
    ]);
  });

  it.each<[string, string, unknown, string, string]>([
    ['a name starting with a digit', '1X', { value: 'abcd' }, 'name', 'use letters, digits and "_", not starting with a digit, at most 100 characters'],
    ['a name with a dash', 'A-B', { value: 'abcd' }, 'name', 'use letters, digits and "_", not starting with a digit, at most 100 characters'],
    ['no value', 'OK_NAME', {}, 'value', 'required'],
    ['an empty value', 'OK_NAME', { value: '' }, 'value', 'must not be empty'],
    ['a value that is not a string', 'OK_NAME', { value: 42 }, 'value', 'expected string'],
    ['a NUL in the value', 'OK_NAME', { value: 'ab\u0000cd' }, 'value', 'must not contain NUL characters'],
    ['a value over 32 KiB', 'OK_NAME', { value: 'x'.repeat(32 * 1024 + 1) }, 'value', 'must be at most 32768 bytes'],
    ['an unknown field', 'OK_NAME', { value: 'abcd', other: 1 }, 'other', 'unknown field'],
  ])('400 for %s, without echoing the value', async (_what, name, body, field, message) => {
    const res = await admin('PUT', `/api/v1/repos/${repoId}/secrets/${name}`, body);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: 'invalid request', field, message });
  });

  it('takes names of up to 100 characters, and refuses longer ones naming the field', async () => {
    const longest = `L${'_'.repeat(99)}`;
    expect((await admin('PUT', `/api/v1/repos/${repoId}/secrets/${longest}`, { value: 'abcd' })).statusCode).toBe(201);
    expect((await admin('DELETE', `/api/v1/repos/${repoId}/secrets/${longest}`)).statusCode).toBe(204);
    const tooLong = await admin('PUT', `/api/v1/repos/${repoId}/secrets/${longest}X`, { value: 'abcd' });
    expect(tooLong.statusCode).toBe(400);
    expect(tooLong.json()).toMatchObject({ error: 'invalid request', field: 'name' });
  });

  it('404 for an unknown repository or secret', async () => {
    expect((await admin('PUT', '/api/v1/repos/999999/secrets/X', { value: 'abcd' })).statusCode).toBe(404);
    expect((await admin('GET', '/api/v1/repos/999999/secrets')).statusCode).toBe(404);
    expect((await admin('DELETE', `/api/v1/repos/${repoId}/secrets/NOPE`)).statusCode).toBe(404);
    expect((await admin('DELETE', `/api/v1/repos/${repoId}/secrets/bad-name`)).statusCode).toBe(404);
  });

  it('DELETE removes a secret: 204, then 404', async () => {
    expect((await admin('DELETE', `/api/v1/repos/${repoId}/secrets/A_SHORT`)).statusCode).toBe(204);
    expect((await admin('DELETE', `/api/v1/repos/${repoId}/secrets/A_SHORT`)).statusCode).toBe(404);
    expect((await admin('GET', `/api/v1/repos/${repoId}/secrets`)).json().map((s: { name: string }) => s.name)).toEqual(['DEPLOY_TOKEN', '_KEY2']);
  });

  it('needs the admin token', async () => {
    for (const [method, url] of [
      ['GET', `/api/v1/repos/${repoId}/secrets`],
      ['PUT', `/api/v1/repos/${repoId}/secrets/X`],
      ['DELETE', `/api/v1/repos/${repoId}/secrets/DEPLOY_TOKEN`],
    ] as const) {
      const res = await h.request({ method, url, payload: method === 'PUT' ? { value: 'abcd' } : undefined });
      expect(res.statusCode).toBe(401);
    }
    expect((await admin('GET', `/api/v1/repos/${repoId}/secrets`)).json()).toHaveLength(2);
  });

  it(`holds at most ${MAX_SECRETS_PER_REPO} secrets per repository, replacing one still works`, async () => {
    const other = await seedRepo(h, { org: 'other', repo: 'many' });
    for (let i = 0; i < MAX_SECRETS_PER_REPO; i++) {
      expect((await h.admin('PUT', `/api/v1/repos/${other.repo.id}/secrets/S${i}`, { value: `value-${i}` })).statusCode).toBe(201);
    }
    const res = await admin('PUT', `/api/v1/repos/${other.repo.id}/secrets/ONE_MORE`, { value: 'abcd' });
    expect(res.statusCode).toBe(409);
    expect(res.json()).toMatchObject({ error: 'conflict', field: 'name' });
    expect((await admin('PUT', `/api/v1/repos/${other.repo.id}/secrets/S0`, { value: 'new' })).statusCode).toBe(204);
  });

  it('go with their repository', async () => {
    const gone = await seedRepo(h, { org: 'gone', repo: 'r' });
    await h.admin('PUT', `/api/v1/repos/${gone.repo.id}/secrets/X_1`, { value: 'abcd' });
    await h.db.pool.query('DELETE FROM repos WHERE id = $1', [gone.repo.id]);
    const { rows } = await h.db.pool.query('SELECT 1 FROM repo_secrets WHERE repo_id = $1', [gone.repo.id]);
    expect(rows).toHaveLength(0);
  });

  it('never showed a value in any answer', () => {
    const all = bodies.join('\n');
    expect(all).not.toContain(VALUE);
    expect(all).not.toContain('BEGIN KEY');
    expect(all).not.toContain('v1:');
  });
});

describe('the suite junit_pattern', () => {
  it('is null by default, settable on POST and PATCH, and checked like test_pattern', async () => {
    expect((await admin('GET', `/api/v1/repos/${repoId}/suites`)).json()[0]).toMatchObject({ id: suiteId, junit_pattern: null });

    const created = await admin('POST', `/api/v1/repos/${repoId}/suites`, { branch: 'dev', test_pattern: '*.sh', junit_pattern: 'reports/*.xml' });
    expect(created.statusCode).toBe(201);
    expect(created.json()).toMatchObject({ branch: 'dev', junit_pattern: 'reports/*.xml' });

    const patched = await admin('PATCH', `/api/v1/repos/${repoId}/suites/${suiteId}`, { junit_pattern: 'build/test-results/**/*.xml' });
    expect(patched.statusCode).toBe(200);
    expect(patched.json()).toMatchObject({ id: suiteId, branch: 'master', test_pattern: 'tests/*.sh', workers: 2, junit_pattern: 'build/test-results/**/*.xml' });

    const more = await admin('PATCH', `/api/v1/repos/acme%2Fwidgets/suites/${suiteId}`, { test_command: 'sh -e', workers: 3 });
    expect(more.json()).toMatchObject({ test_command: 'sh -e', workers: 3, junit_pattern: 'build/test-results/**/*.xml' });

    const cleared = await admin('PATCH', `/api/v1/repos/${repoId}/suites/${suiteId}`, { junit_pattern: null, test_command: null });
    expect(cleared.json()).toMatchObject({ junit_pattern: null, test_command: null, workers: 3 });
    expect((await admin('PATCH', `/api/v1/repos/${repoId}/suites/${suiteId}`, {})).json()).toMatchObject({ id: suiteId, junit_pattern: null });

    for (const [body, field, message] of [
      [{ junit_pattern: '/abs/*.xml' }, 'junit_pattern', 'must be relative to the repository root'],
      [{ junit_pattern: '../*.xml' }, 'junit_pattern', 'must not contain ".." segments'],
      [{ junit_pattern: '' }, 'junit_pattern', 'must not be empty'],
      [{ branch: 'x' }, 'branch', 'unknown field'],
    ] as const) {
      const res = await admin('PATCH', `/api/v1/repos/${repoId}/suites/${suiteId}`, body);
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({ error: 'invalid request', field, message });
    }
    expect((await admin('PATCH', `/api/v1/repos/${repoId}/suites/999999`, { workers: 1 })).statusCode).toBe(404);
    expect((await admin('PATCH', `/api/v1/repos/${repoId}/suites/abc`, { workers: 1 })).statusCode).toBe(404);
  });

  it("does not PATCH another repository's suite", async () => {
    const other = await seedRepo(h, { org: 'elsewhere', repo: 'r' });
    expect((await admin('PATCH', `/api/v1/repos/${other.repo.id}/suites/${suiteId}`, { workers: 1 })).statusCode).toBe(404);
  });
});
