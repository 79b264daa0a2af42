/**
 * Connecting GitHub with a person's token (issue 38) through the API, against a fake held to
 * GitHub's REST documentation (test/support/fakeGitHubSite.ts; `problems` must stay empty): the
 * repositories the account administers (pages of 100), activating one (a JSON webhook for
 * pushes, branches and pull requests signed with a secret; a read-only deploy key), a push GitHub
 * signs builds and shows in the hook's deliveries, a forged one is refused, repair follows a
 * rename by the repository's id, deactivating removes both.
 */
import { parseAllowList } from '../../src/ip/ranges';
import { startFakeGitHubSite, type FakeGitHubSite } from '../support/fakeGitHubSite';
import { startApiHarness, type ApiHarness } from '../support/apiApp';

let h: ApiHarness;
let github: FakeGitHubSite;
const org = 'gh';
const TOKEN = 'github_pat_11AAAAAAA0example';
const SHA = (n: number) => n.toString(16).padStart(40, 'e');

beforeAll(async () => {
  github = await startFakeGitHubSite({
    tokens: { [TOKEN]: 'octocat' },
    repos: [
      { id: 9001, fullName: 'acme/shop', sshUrl: 'git@github.test:acme/shop.git', defaultBranch: 'main', access: { octocat: 'admin' } },
      { id: 9002, fullName: 'acme/site', sshUrl: 'git@github.test:acme/site.git', defaultBranch: 'main', access: { octocat: 'write' } },
      ...Array.from({ length: 120 }, (_, i) => ({ id: 9100 + i, fullName: `octocat/r${i}`, sshUrl: `git@github.test:octocat/r${i}.git`, defaultBranch: 'main', access: { octocat: 'admin' as const } })),
    ],
  });
  h = await startApiHarness({ config: { webhookAllow: parseAllowList('127.0.0.0/8') } });
  expect((await h.admin('POST', '/api/v1/orgs', { name: org, email: 'ci@example.com' })).statusCode).toBe(201);
});
afterAll(async () => {
  await h?.close();
  await github?.close();
});
afterEach(() => expect(github.problems).toEqual([]));

const via = (hookUrl: string) => hookUrl.replace(h.config.baseUrl, h.url);
let connection: number;
let repo: { id: number; ssh_public_key: string; key: string };

describe('connecting GitHub with a token', () => {
  it('connects and lists every repository, saying which the account administers', async () => {
    const made = await h.admin('POST', `/api/v1/orgs/${org}/connections`, { site: 'github', api_url: github.apiUrl, token: TOKEN });
    expect(made.statusCode).toBe(201);
    expect(made.json()).toMatchObject({ site: 'github', account: 'octocat' });
    connection = made.json().id;
    const list = (await h.admin('GET', `/api/v1/orgs/${org}/connections/${connection}/repos`)).json() as { full_name: string; admin: boolean }[];
    expect(list).toHaveLength(122);
    expect(list.find((r) => r.full_name === 'acme/site')).toMatchObject({ admin: false });
    expect((await h.admin('POST', `/api/v1/orgs/${org}/connections/${connection}/repos`, { site_repo_id: '9002' })).statusCode).toBe(403);
  });

  it('activates: a signed JSON webhook, a read-only deploy key, statuses to acme/shop', async () => {
    const res = await h.admin('POST', `/api/v1/orgs/${org}/connections/${connection}/repos`, { site_repo_id: '9001' });
    expect(res.statusCode).toBe(201);
    repo = res.json();
    expect(res.json()).toMatchObject({ name: 'shop', pull_url: 'git@github.test:acme/shop.git', default_branch: 'main', status_provider: 'github', status_repo: 'acme/shop', status_api_url: github.apiUrl });
    expect(github.hooksOf(9001)).toEqual([
      expect.objectContaining({ active: true, events: ['push', 'create', 'delete', 'pull_request'], config: { url: `${h.config.baseUrl}/1/github/${repo.key}`, content_type: 'json', secret: expect.stringMatching(/^[0-9a-f]{64}$/), insecure_ssl: '0' } }),
    ]);
    expect(github.keysOf(9001)).toEqual([expect.objectContaining({ key: repo.ssh_public_key.split(' ').slice(0, 2).join(' '), read_only: true })]);
  });

  it('a push GitHub signs builds and is in the hook’s deliveries; a forged one is refused', async () => {
    await h.admin('POST', `/api/v1/repos/${repo.id}/suites`, { branch: 'main', test_pattern: 'test/*.sh' });
    const before = h.enqueued.length;
    expect(await github.push(9001, { ref: 'refs/heads/main', before: SHA(1), after: SHA(2) }, { via })).toEqual([200]);
    expect(h.enqueued.length).toBe(before + 1);
    expect((await h.admin('GET', `/api/v1/repos/${repo.id}/connection`)).json()).toMatchObject({ hook: 'present', deploy_key: 'present', site_last_delivery: { status: 200, ok: true } });
    expect(await github.push(9001, { ref: 'refs/heads/main', before: SHA(2), after: SHA(3) }, { via, secret: 'guess' })).toEqual([401]);
    expect((await h.admin('GET', `/api/v1/repos/${repo.id}/connection`)).json()).toMatchObject({ site_last_delivery: { status: 401, ok: false } });
  });

  it('repair follows a rename by the repository’s id; deactivating removes the hook and key', async () => {
    github.rename(9001, 'acme/storefront', 'git@github.test:acme/storefront.git');
    const res = await h.admin('POST', `/api/v1/repos/${repo.id}/connection/repair`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ pull_url: 'git@github.test:acme/storefront.git', status_repo: 'acme/storefront' });
    expect(github.hooksOf(9001)).toHaveLength(1);
    expect((await h.admin('DELETE', `/api/v1/repos/${repo.id}/connection`)).statusCode).toBe(204);
    expect(github.hooksOf(9001)).toEqual([]);
    expect(github.keysOf(9001)).toEqual([]);
    expect(h.logs.join('\n')).not.toContain(TOKEN);
  });
});
