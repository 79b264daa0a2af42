/**
 * Connecting Bitbucket Server / Data Center (issue 38) through the API, against a fake held to
 * Atlassian's OpenAPI document (test/support/fakeBitbucketServer.ts; `problems` must stay
 * empty): whose token it is from `X-AUSERNAME`, the repositories it administers (pages of
 * `nextPageStart`), activating one by its id (a signed webhook, a read-only access key), a push
 * the server signs builds, the server's record of its last delivery, a rename followed by id,
 * deactivating.
 */
import { parseAllowList } from '../../src/ip/ranges';
import { startFakeBitbucketServer, type FakeBitbucketServer } from '../support/fakeBitbucketServer';
import { startApiHarness, type ApiHarness } from '../support/apiApp';

let h: ApiHarness;
let stash: FakeBitbucketServer;
const org = 'dc';
const TOKEN = 'BBDC-http-access-token-of-frank';
const SHA = (n: number) => n.toString(16).padStart(40, 'd');

beforeAll(async () => {
  stash = await startFakeBitbucketServer({
    tokens: { [TOKEN]: 'frank' },
    repos: [
      { id: 7001, project: 'PLAT', slug: 'api', defaultBranch: 'develop', sshUrl: 'ssh://git@bitbucket.test:7999/plat/api.git', access: { frank: 'REPO_ADMIN' } },
      { id: 7002, project: 'PLAT', slug: 'web', defaultBranch: 'main', sshUrl: 'ssh://git@bitbucket.test:7999/plat/web.git', access: { frank: 'REPO_WRITE' } },
      ...Array.from({ length: 130 }, (_, i) => ({ id: 8000 + i, project: 'BULK', slug: `r${i}`, defaultBranch: 'master', sshUrl: `ssh://git@bitbucket.test:7999/bulk/r${i}.git`, access: { frank: 'REPO_ADMIN' as const } })),
    ],
  });
  h = await startApiHarness({ config: { webhookAllow: parseAllowList('127.0.0.0/8') } });
  expect((await h.admin('POST', '/api/v1/orgs', { name: org, email: 'ci@example.com' })).statusCode).toBe(201);
});
afterAll(async () => {
  await h?.close();
  await stash?.close();
});
afterEach(() => expect(stash.problems).toEqual([]));

const via = (hookUrl: string) => hookUrl.replace(h.config.baseUrl, h.url);
let connection: number;
let repo: { id: number; ssh_public_key: string };

describe('connecting Bitbucket Server', () => {
  it('connects: the server names the token’s user; lists every repository it administers', async () => {
    const wrong = await h.admin('POST', `/api/v1/orgs/${org}/connections`, { site: 'stash', api_url: stash.url, token: 'not-a-token-at-all' });
    expect(wrong.statusCode).toBe(400);
    const made = await h.admin('POST', `/api/v1/orgs/${org}/connections`, { site: 'stash', api_url: stash.url, token: TOKEN });
    expect(made.statusCode).toBe(201);
    expect(made.json()).toMatchObject({ site: 'stash', account: 'frank' });
    connection = made.json().id;
    const list = (await h.admin('GET', `/api/v1/orgs/${org}/connections/${connection}/repos`)).json() as { site_repo_id: string; full_name: string }[];
    expect(list).toHaveLength(131);
    expect(list.map((r) => r.full_name)).not.toContain('PLAT/web');
    expect(list.find((r) => r.site_repo_id === '7001')).toMatchObject({ full_name: 'PLAT/api', ssh_url: 'ssh://git@bitbucket.test:7999/plat/api.git', admin: true });
  });

  it('refuses a repository the account may only write to', async () => {
    expect((await h.admin('POST', `/api/v1/orgs/${org}/connections/${connection}/repos`, { site_repo_id: '7002' })).statusCode).toBe(403);
    expect(stash.hooksOf(7002)).toEqual([]);
  });

  it('activates: its default branch from the server, a signed webhook, a read-only access key, statuses to PLAT/api', async () => {
    const res = await h.admin('POST', `/api/v1/orgs/${org}/connections/${connection}/repos`, { site_repo_id: '7001' });
    expect(res.statusCode).toBe(201);
    repo = res.json();
    expect(res.json()).toMatchObject({ name: 'api', default_branch: 'develop', status_provider: 'bitbucket-server', status_repo: 'PLAT/api', status_api_url: stash.url });
    expect(stash.hooksOf(7001)).toEqual([expect.objectContaining({ url: expect.stringMatching(/\/1\/stash\//), active: true, events: ['repo:refs_changed', 'pr:opened', 'pr:from_ref_updated', 'pr:merged', 'pr:declined'], secret: expect.stringMatching(/^[0-9a-f]{64}$/) })]);
    expect(stash.keysOf(7001)).toEqual([expect.objectContaining({ text: repo.ssh_public_key, permission: 'REPO_READ' })]);
  });

  it('a push the server signs builds, and its record of the delivery is shown', async () => {
    await h.admin('POST', `/api/v1/repos/${repo.id}/suites`, { branch: 'develop', test_pattern: 'test/*.sh' });
    const before = h.enqueued.length;
    expect(await stash.push(7001, { branch: 'develop', before: SHA(1), after: SHA(2) }, { via })).toEqual([200]);
    expect(h.enqueued.length).toBe(before + 1);
    expect((await h.admin('GET', `/api/v1/repos/${repo.id}/connection`)).json()).toMatchObject({ hook: 'present', deploy_key: 'present', site_last_delivery: { status: 200, ok: true } });
    expect(await stash.push(7001, { branch: 'develop', before: SHA(2), after: SHA(3) }, { via, secret: 'wrong' })).toEqual([401]);
    expect((await h.admin('GET', `/api/v1/repos/${repo.id}/connection`)).json()).toMatchObject({ site_last_delivery: { status: 401, ok: false } });
  });

  it('repair follows a move to another project by the repository’s id', async () => {
    stash.rename(7001, 'CORE', 'api-server', 'ssh://git@bitbucket.test:7999/core/api-server.git');
    const res = await h.admin('POST', `/api/v1/repos/${repo.id}/connection/repair`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ pull_url: 'ssh://git@bitbucket.test:7999/core/api-server.git', status_repo: 'CORE/api-server' });
    expect(stash.hooksOf(7001)).toHaveLength(1);
  });

  it('deactivating removes the webhook and the key', async () => {
    expect((await h.admin('DELETE', `/api/v1/repos/${repo.id}/connection`)).statusCode).toBe(204);
    expect(stash.hooksOf(7001)).toEqual([]);
    expect(stash.keysOf(7001)).toEqual([]);
    expect(h.logs.join('\n')).not.toContain(TOKEN);
  });
});
