// `GET /api/v1/repos/:repo/branches` and `PUT .../branches/:branch`: the Branches page.
import { seedRepo, startApiHarness, type ApiHarness } from '../support/apiApp';

let h: ApiHarness;
let repoId: number;
let key: string;
let orgName: string;

beforeAll(async () => {
  h = await startApiHarness();
  const seeded = await seedRepo(h, { org: 'acme', repo: 'widgets', branches: ['master', 'feature/x'] });
  repoId = seeded.repo.id;
  key = seeded.repo.key;
  orgName = 'acme';
});
afterAll(() => h?.close());

const list = async (repo: string | number = repoId) => {
  const res = await h.admin('GET', `/api/v1/repos/${repo}/branches`);
  expect(res.statusCode).toBe(200);
  return res.json();
};

describe('GET branches', () => {
  it('lists branches with a suite before any trigger, with the defaults', async () => {
    expect(await list()).toEqual([
      { name: 'feature/x', enabled: true, hidden: false, locked_visible: false, has_suite: true },
      { name: 'master', enabled: true, hidden: false, locked_visible: false, has_suite: true },
    ]);
  });

  it('lists branches triggers named, with or without a suite', async () => {
    const res = await h.request({ method: 'POST', url: `/1/builds/${key}`, payload: { branch: 'topic' } });
    expect(res.statusCode).toBe(422);
    expect(await list()).toContainEqual({ name: 'topic', enabled: true, hidden: false, locked_visible: false, has_suite: false });
  });

  it('takes the repository as org/name too', async () => {
    expect(await list(encodeURIComponent(`${orgName}/widgets`))).toEqual(await list());
  });

  it('404 for an unknown repository; 401 without the admin token', async () => {
    expect((await h.admin('GET', '/api/v1/repos/99999/branches')).statusCode).toBe(404);
    expect((await h.request({ method: 'GET', url: `/api/v1/repos/${repoId}/branches` })).statusCode).toBe(401);
    expect((await h.request({ method: 'PUT', url: `/api/v1/repos/${repoId}/branches/master`, payload: { enabled: false } })).statusCode).toBe(401);
  });
});

describe('PUT branches/:branch', () => {
  it('switches a branch off and on', async () => {
    let res = await h.admin('PUT', `/api/v1/repos/${repoId}/branches/master`, { enabled: false });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ name: 'master', enabled: false, hidden: false, locked_visible: false, has_suite: true });
    res = await h.admin('PUT', `/api/v1/repos/${repoId}/branches/master`, { enabled: true });
    expect(res.json()).toMatchObject({ enabled: true });
  });

  it('creates the row of a branch never seen; a percent-encoded slash names a branch with a slash', async () => {
    const res = await h.admin('PUT', `/api/v1/repos/${repoId}/branches/${encodeURIComponent('release/2.0')}`, { locked_visible: true });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ name: 'release/2.0', enabled: true, hidden: false, locked_visible: true, has_suite: false });
    expect(await list()).toContainEqual({ name: 'release/2.0', enabled: true, hidden: false, locked_visible: true, has_suite: false });
    const one = await h.admin('GET', `/api/v1/repos/${repoId}/branches/release%2F2.0`);
    expect(one.json()).toEqual({ name: 'release/2.0', enabled: true, hidden: false, locked_visible: true, has_suite: false });
  });

  it('an empty body changes nothing but still records the branch', async () => {
    const res = await h.admin('PUT', `/api/v1/repos/${repoId}/branches/quiet`, {});
    expect(res.json()).toEqual({ name: 'quiet', enabled: true, hidden: false, locked_visible: false, has_suite: false });
  });

  it('only the toggles given change', async () => {
    await h.admin('PUT', `/api/v1/repos/${repoId}/branches/feature%2Fx`, { enabled: false });
    const res = await h.admin('PUT', `/api/v1/repos/${repoId}/branches/feature%2Fx`, { locked_visible: true });
    expect(res.json()).toEqual({ name: 'feature/x', enabled: false, hidden: false, locked_visible: true, has_suite: true });
    const unlock = await h.admin('PUT', `/api/v1/repos/${repoId}/branches/feature%2Fx`, { locked_visible: false });
    expect(unlock.json()).toEqual({ name: 'feature/x', enabled: false, hidden: false, locked_visible: false, has_suite: true });
  });

  it('locking a hidden branch visible shows it', async () => {
    // Hidden by a branch-delete.
    const del = await h.request({
      method: 'POST',
      url: `/1/gitea/${key}`,
      headers: { 'x-gitea-event': 'delete' },
      payload: { ref: 'gone', ref_type: 'branch', pusher_type: 'user', repository: {}, sender: {} },
    });
    expect(del.statusCode).toBe(200);
    expect((await h.admin('GET', `/api/v1/repos/${repoId}/branches/gone`)).json()).toMatchObject({ hidden: true });
    const res = await h.admin('PUT', `/api/v1/repos/${repoId}/branches/gone`, { locked_visible: true });
    expect(res.json()).toEqual({ name: 'gone', enabled: true, hidden: false, locked_visible: true, has_suite: false });
  });

  it('a leading refs/heads/ is dropped', async () => {
    const res = await h.admin('PUT', `/api/v1/repos/${repoId}/branches/${encodeURIComponent('refs/heads/master')}`, { enabled: true });
    expect(res.json()).toMatchObject({ name: 'master' });
  });

  it.each<[string, unknown, string, string | RegExp]>([
    ['master', { enabled: 'no' }, 'enabled', 'expected boolean'],
    ['master', { hidden: true }, 'hidden', 'unknown field'],
    ['master', [], 'body', /expected object/],
    ['a..b', { enabled: true }, 'branch', 'must not contain ".."'],
    ['-x', { enabled: true }, 'branch', 'must not start with "-"'],
    ['%01x', { enabled: true }, 'branch', 'must not contain control characters'],
  ])('400 for branch %j with %j (field %s)', async (branch, body, field, message) => {
    const res = await h.admin('PUT', `/api/v1/repos/${repoId}/branches/${branch}`, body);
    expect(res.statusCode).toBe(400);
    const json = res.json();
    expect(json.field).toBe(field);
    if (typeof message === 'string') expect(json.message).toBe(message);
    else expect(json.message).toMatch(message);
  });

  it('404 for an unknown repository', async () => {
    expect((await h.admin('PUT', '/api/v1/repos/99999/branches/master', { enabled: true })).statusCode).toBe(404);
  });

  it("takes branch names up to git's 255 bytes in the path, and refuses longer ones", async () => {
    const long = `feature/${'x'.repeat(240)}`;
    const res = await h.admin('PUT', `/api/v1/repos/${repoId}/branches/${encodeURIComponent(long)}`, { enabled: false });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ name: long, enabled: false });
    const tooLong = await h.admin('PUT', `/api/v1/repos/${repoId}/branches/${'x'.repeat(256)}`, { enabled: true });
    expect(tooLong.statusCode).toBe(400);
    expect(tooLong.json()).toMatchObject({ field: 'branch' });
    // Past what the router reads of a path segment at all.
    expect((await h.admin('PUT', `/api/v1/repos/${repoId}/branches/${'x'.repeat(1100)}`, { enabled: true })).statusCode).toBe(414);
  });
});
