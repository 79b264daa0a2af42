/**
 * Connecting Gitea or Forgejo (issue 38) through the API, against a fake Gitea that holds Sluice
 * to what Gitea's API defines (test/support/fakeGitea.ts; `problems` must stay empty): the
 * repositories listed with the admin right Gitea reports (pages of 50), activating one makes an
 * active JSON hook signed with a secret and a read-only key, a push signed as Gitea signs it
 * builds and a forged one is refused, repair follows a rename by the repository's id,
 * deactivating removes both. Gitea keeps no delivery log its API shows: none is reported.
 */
import { unseal } from '../../src/crypto/sealed';
import { parseAllowList } from '../../src/ip/ranges';
import { startFakeGitea, type FakeGitea, type GiteaRepo } from '../support/fakeGitea';
import { startApiHarness, type ApiHarness } from '../support/apiApp';
import { eventually } from '../support/wait';

let h: ApiHarness;
let gitea: FakeGitea;
const org = 'forge';
const TOKEN = 'gitea-token-of-dana-0123456789';
const SHA = (n: number) => n.toString(16).padStart(40, 'b');
const many: GiteaRepo[] = Array.from({ length: 60 }, (_, i) => ({ id: 500 + i, fullName: `dana/r${i}`, sshUrl: `git@gitea.test:dana/r${i}.git`, defaultBranch: 'main', access: { dana: 'admin' } }));

beforeAll(async () => {
  gitea = await startFakeGitea({
    tokens: { [TOKEN]: 'dana' },
    repos: [
      { id: 7, fullName: 'forge/app', sshUrl: 'git@gitea.test:forge/app.git', defaultBranch: 'trunk', access: { dana: 'admin' } },
      { id: 8, fullName: 'forge/wiki', sshUrl: 'git@gitea.test:forge/wiki.git', defaultBranch: 'main', access: { dana: 'write' } },
      ...many,
    ],
  });
  h = await startApiHarness({ config: { webhookAllow: parseAllowList('127.0.0.0/8') } });
  expect((await h.admin('POST', '/api/v1/orgs', { name: org, email: 'ci@example.com' })).statusCode).toBe(201);
});
afterAll(async () => {
  await h?.close();
  await gitea?.close();
});
afterEach(() => expect(gitea.problems).toEqual([]));

const via = (hookUrl: string) => hookUrl.replace(h.config.baseUrl, h.url);
let connection: number;
let repo: { id: number; key: string; ssh_public_key: string };

describe('connecting Gitea', () => {
  it('connects, and lists every repository with the admin right Gitea reports', async () => {
    const made = await h.admin('POST', `/api/v1/orgs/${org}/connections`, { site: 'gitea', api_url: gitea.apiUrl, token: TOKEN });
    expect(made.statusCode).toBe(201);
    expect(made.json()).toMatchObject({ site: 'gitea', account: 'dana' });
    connection = made.json().id;
    const list = (await h.admin('GET', `/api/v1/orgs/${org}/connections/${connection}/repos`)).json() as { full_name: string; admin: boolean }[];
    expect(list).toHaveLength(62);
    expect(list.find((r) => r.full_name === 'forge/app')).toMatchObject({ admin: true, default_branch: 'trunk' });
    expect(list.find((r) => r.full_name === 'forge/wiki')).toMatchObject({ admin: false });
  });

  it('refuses a repository the account may write to but not administer', async () => {
    const res = await h.admin('POST', `/api/v1/orgs/${org}/connections/${connection}/repos`, { site_repo_id: '8' });
    expect(res.statusCode).toBe(403);
    expect(gitea.hooksOf(8)).toEqual([]);
  });

  it('activates: an active JSON hook for pushes, branches and pull requests, signed; a read-only key; statuses by owner/name', async () => {
    const res = await h.admin('POST', `/api/v1/orgs/${org}/connections/${connection}/repos`, { site_repo_id: '7' });
    expect(res.statusCode).toBe(201);
    repo = res.json();
    expect(res.json()).toMatchObject({ name: 'app', pull_url: 'git@gitea.test:forge/app.git', default_branch: 'trunk', status_provider: 'gitea', status_repo: 'forge/app', status_api_url: gitea.apiUrl });
    const [hook] = gitea.hooksOf(7);
    expect(hook).toMatchObject({ type: 'gitea', active: true, events: ['push', 'create', 'delete', 'pull_request'], config: { url: `${h.config.baseUrl}/1/gitea/${repo.key}`, content_type: 'json' } });
    const { rows } = await h.db.pool.query('SELECT webhook_secret_sealed FROM repos WHERE id = $1', [repo.id]);
    expect(hook!.config.secret).toBe(unseal(h.config.secretKey, rows[0].webhook_secret_sealed));
    expect(gitea.keysOf(7)).toEqual([expect.objectContaining({ key: repo.ssh_public_key.split(' ').slice(0, 2).join(' '), read_only: true })]);
  });

  it('a push Gitea signs builds; a forged signature is refused and counted; no delivery log is claimed', async () => {
    await h.admin('POST', `/api/v1/repos/${repo.id}/suites`, { branch: 'main', test_pattern: 'test/*.sh' });
    const before = h.enqueued.length;
    expect(await gitea.push(7, { ref: 'refs/heads/main', before: SHA(1), after: SHA(2) }, { via })).toEqual([200]);
    expect(h.enqueued.length).toBe(before + 1);
    expect(await gitea.push(7, { ref: 'refs/heads/main', before: SHA(2), after: SHA(3) }, { via, secret: 'not-the-secret' })).toEqual([401]);
    expect(h.enqueued.length).toBe(before + 1);
    const health = await eventually(
      'both written',
      async () => {
        const body = (await h.admin('GET', `/api/v1/repos/${repo.id}/connection`)).json();
        return body.last_hook_at && body.refused_hooks > 0 ? body : null;
      },
      15_000,
    );
    expect(health).toMatchObject({ hook: 'present', deploy_key: 'present', refused_hooks: 1, site_last_delivery: null, site_error: null });
  });

  it('repair follows a rename by the repository’s id, and makes a deleted hook again', async () => {
    gitea.rename(7, 'forge/application', 'git@gitea.test:forge/application.git');
    gitea.dropHook(7, gitea.hooksOf(7)[0]!.id);
    const res = await h.admin('POST', `/api/v1/repos/${repo.id}/connection/repair`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ pull_url: 'git@gitea.test:forge/application.git', status_repo: 'forge/application' });
    expect(gitea.hooksOf(7)).toHaveLength(1);
    expect(gitea.keysOf(7)).toHaveLength(1);
  });

  it('deactivating removes the hook and the key', async () => {
    expect((await h.admin('DELETE', `/api/v1/repos/${repo.id}/connection`)).statusCode).toBe(204);
    expect(gitea.hooksOf(7)).toEqual([]);
    expect(gitea.keysOf(7)).toEqual([]);
    expect(JSON.stringify(h.logs)).not.toContain(TOKEN);
  });
});
