/**
 * Connecting Bitbucket Cloud (issue 38) through the API, against a fake that holds Sluice to
 * Atlassian's OpenAPI document (test/support/fakeBitbucket.ts; `problems` must stay empty): an
 * API token given as `e-mail:token`, the repositories the account administers in each of its
 * workspaces, activating one by its UUIDs (a hook signed with a secret, a deploy key), a push
 * Bitbucket signs builds and a forged one is refused, deactivating removes both.
 */
import { parseAllowList } from '../../src/ip/ranges';
import { startFakeBitbucket, type FakeBitbucket } from '../support/fakeBitbucket';
import { startApiHarness, type ApiHarness } from '../support/apiApp';

let h: ApiHarness;
let bitbucket: FakeBitbucket;
const org = 'atl';
const TOKEN = 'ATATT3xFfGF0-bitbucket-api-token';
const WS = { uuid: '{11111111-1111-4111-8111-111111111111}', slug: 'acme' };
const APP = '{22222222-2222-4222-8222-222222222222}';
const SHA = (n: number) => n.toString(16).padStart(40, 'c');

beforeAll(async () => {
  bitbucket = await startFakeBitbucket({
    users: { erin: { email: 'erin@acme.test', token: TOKEN } },
    repos: [
      { uuid: APP, workspace: WS, slug: 'app', mainbranch: 'main', sshUrl: 'git@bitbucket.test:acme/app.git', access: { erin: 'admin' } },
      { uuid: '{33333333-3333-4333-8333-333333333333}', workspace: WS, slug: 'docs', mainbranch: 'main', sshUrl: 'git@bitbucket.test:acme/docs.git', access: { erin: 'write' } },
      ...Array.from({ length: 110 }, (_, i) => ({
        uuid: `{44444444-4444-4444-8444-4444444444${i.toString(16).padStart(2, '0')}}`,
        workspace: { uuid: '{55555555-5555-4555-8555-555555555555}', slug: 'erin' },
        slug: `r${i}`,
        mainbranch: 'master',
        sshUrl: `git@bitbucket.test:erin/r${i}.git`,
        access: { erin: 'admin' as const },
      })),
    ],
  });
  h = await startApiHarness({ config: { webhookAllow: parseAllowList('127.0.0.0/8') } });
  expect((await h.admin('POST', '/api/v1/orgs', { name: org, email: 'ci@example.com' })).statusCode).toBe(201);
});
afterAll(async () => {
  await h?.close();
  await bitbucket?.close();
});
afterEach(() => expect(bitbucket.problems).toEqual([]));

const via = (hookUrl: string) => hookUrl.replace(h.config.baseUrl, h.url);
let connection: number;
let repo: { id: number; ssh_public_key: string };

describe('connecting Bitbucket Cloud', () => {
  it('connects with e-mail:token and lists what the account administers in every workspace', async () => {
    const made = await h.admin('POST', `/api/v1/orgs/${org}/connections`, { site: 'bitbucket', api_url: bitbucket.apiUrl, token: `erin@acme.test:${TOKEN}` });
    expect(made.statusCode).toBe(201);
    expect(made.json()).toMatchObject({ account: 'erin' });
    expect(made.body).not.toContain(TOKEN);
    connection = made.json().id;
    const list = (await h.admin('GET', `/api/v1/orgs/${org}/connections/${connection}/repos`)).json() as { site_repo_id: string; full_name: string }[];
    // The second workspace's 110 take two pages (`next`).
    expect(list).toHaveLength(111);
    expect(list.map((r) => r.full_name)).not.toContain('acme/docs');
    expect(list.find((r) => r.full_name === 'acme/app')).toMatchObject({ site_repo_id: `${WS.uuid}/${APP}`, ssh_url: 'git@bitbucket.test:acme/app.git', default_branch: 'main', admin: true });
  });

  it('refuses what the account only writes to, and an id that is not two UUIDs', async () => {
    expect((await h.admin('POST', `/api/v1/orgs/${org}/connections/${connection}/repos`, { site_repo_id: `${WS.uuid}/{33333333-3333-4333-8333-333333333333}` })).statusCode).toBe(403);
    expect((await h.admin('POST', `/api/v1/orgs/${org}/connections/${connection}/repos`, { site_repo_id: `${WS.uuid}/../x` })).statusCode).toBe(400);
    expect((await h.admin('POST', `/api/v1/orgs/${org}/connections/${connection}/repos`, { site_repo_id: 'acme/app' })).statusCode).toBe(404);
  });

  it('activates: a signed hook for pushes and pull requests, a deploy key, statuses to acme/app', async () => {
    const res = await h.admin('POST', `/api/v1/orgs/${org}/connections/${connection}/repos`, { site_repo_id: `${WS.uuid}/${APP}` });
    expect(res.statusCode).toBe(201);
    repo = res.json();
    expect(res.json()).toMatchObject({ name: 'app', pull_url: 'git@bitbucket.test:acme/app.git', status_provider: 'bitbucket', status_repo: 'acme/app' });
    expect(bitbucket.hooksOf(APP)).toEqual([expect.objectContaining({ url: expect.stringMatching(/\/1\/bitbucket\//), active: true, events: ['repo:push', 'pullrequest:created', 'pullrequest:updated', 'pullrequest:fulfilled', 'pullrequest:rejected'], secret: expect.stringMatching(/^[0-9a-f]{64}$/) })]);
    expect(bitbucket.keysOf(APP).map((k) => k.key)).toEqual([repo.ssh_public_key.split(' ').slice(0, 2).join(' ')]);
    // Again: nothing twice.
    expect((await h.admin('POST', `/api/v1/orgs/${org}/connections/${connection}/repos`, { site_repo_id: `${WS.uuid}/${APP}` })).statusCode).toBe(201);
    expect(bitbucket.hooksOf(APP)).toHaveLength(1);
    expect(bitbucket.keysOf(APP)).toHaveLength(1);
  });

  it('a push Bitbucket signs builds; a forged one is refused', async () => {
    await h.admin('POST', `/api/v1/repos/${repo.id}/suites`, { branch: 'main', test_pattern: 'test/*.sh' });
    const before = h.enqueued.length;
    expect(await bitbucket.push(APP, { branch: 'main', before: SHA(1), after: SHA(2) }, { via })).toEqual([200]);
    expect(h.enqueued.length).toBe(before + 1);
    expect(await bitbucket.push(APP, { branch: 'main', before: SHA(2), after: SHA(3) }, { via, secret: 'a-guess' })).toEqual([401]);
    expect(h.enqueued.length).toBe(before + 1);
    expect((await h.admin('GET', `/api/v1/repos/${repo.id}/connection`)).json()).toMatchObject({ hook: 'present', deploy_key: 'present', site_last_delivery: null });
  });

  it('deactivating removes the hook and the key', async () => {
    expect((await h.admin('DELETE', `/api/v1/repos/${repo.id}/connection`)).statusCode).toBe(204);
    expect(bitbucket.hooksOf(APP)).toEqual([]);
    expect(bitbucket.keysOf(APP)).toEqual([]);
    expect(h.logs.join('\n')).not.toContain(TOKEN);
  });
});
