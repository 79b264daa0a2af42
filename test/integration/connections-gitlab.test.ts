/**
 * Connecting GitLab (issue 38) through the API, against a fake GitLab that holds Sluice to the
 * documented requests (test/support/fakeGitLab.ts; `problems` must stay empty): connect with a
 * token, list the projects its account maintains (two pages), activate one (the repository,
 * a signed webhook and a read-only deploy key made), a push delivered as GitLab delivers it,
 * a forged one refused and counted, repair after a hook was deleted, a rename or a key
 * rotation, deactivate; the rights the site refuses.
 */
import { unseal } from '../../src/crypto/sealed';
import { parseAllowList } from '../../src/ip/ranges';
import { startFakeGitLab, type FakeGitLab, type GitLabProject } from '../support/fakeGitLab';
import { startApiHarness, type ApiHarness } from '../support/apiApp';
import { eventually } from '../support/wait';

let h: ApiHarness;
let gitlab: FakeGitLab;
let org: string;
const MAINTAINER = 'glpat-maintainer-token-0001';
const READ_ONLY = 'glpat-read-only-token-0002';
const RENEWED = 'glpat-maintainer-token-0003';
const SHA = (n: number) => n.toString(16).padStart(40, 'a');

const bulk: GitLabProject[] = Array.from({ length: 120 }, (_, i) => ({
  id: 1000 + i,
  path: `bulk/p${i}`,
  sshUrl: `git@gitlab.test:bulk/p${i}.git`,
  defaultBranch: 'main',
  members: { alice: 40 },
}));

beforeAll(async () => {
  gitlab = await startFakeGitLab({
    tokens: { [MAINTAINER]: { username: 'alice', scopes: ['api'] }, [READ_ONLY]: { username: 'carol', scopes: ['read_api'] }, [RENEWED]: { username: 'alice', scopes: ['api'] } },
    projects: [
      { id: 11, path: 'acme/web', sshUrl: 'git@gitlab.test:acme/web.git', defaultBranch: 'main', members: { alice: 40, carol: 40 } },
      { id: 12, path: 'acme/docs', sshUrl: 'git@gitlab.test:acme/docs.git', defaultBranch: 'main', members: { alice: 30 } },
      { id: 13, path: 'other/lib', sshUrl: 'git@gitlab.test:other/lib.git', defaultBranch: 'main', members: { bob: 50 } },
      ...bulk,
    ],
  });
  h = await startApiHarness({ config: { webhookAllow: parseAllowList('127.0.0.0/8') } });
  org = `org${Date.now().toString(36)}`;
  expect((await h.admin('POST', '/api/v1/orgs', { name: org, email: 'ci@example.com' })).statusCode).toBe(201);
});
afterAll(async () => {
  await h?.close();
  await gitlab?.close();
});
afterEach(() => expect(gitlab.problems).toEqual([]));

/** Delivers to the harness what GitLab would deliver to the hook's URL (the API's base URL is not this server's). */
const via = (hookUrl: string) => hookUrl.replace(h.config.baseUrl, h.url);

let connection: number;
let repo: { id: number; name: string; key: string; ssh_public_key: string };

describe('connecting GitLab', () => {
  it('refuses a token GitLab refuses, naming the field', async () => {
    const res = await h.admin('POST', `/api/v1/orgs/${org}/connections`, { site: 'gitlab', api_url: gitlab.apiUrl, token: 'glpat-wrong-token' });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ field: 'token' });
    expect(res.body).not.toContain('glpat-wrong-token');
  });

  it('refuses a site on an address SLUICE_WEBHOOK_ALLOW does not name', async () => {
    const strict = await startApiHarness();
    try {
      await strict.admin('POST', '/api/v1/orgs', { name: 'strict', email: 'ci@example.com' });
      const res = await strict.admin('POST', '/api/v1/orgs/strict/connections', { site: 'gitlab', api_url: gitlab.apiUrl, token: MAINTAINER });
      expect(res.statusCode).toBe(502);
      expect(res.json().message).toMatch(/blocked|not allowed|private|loopback/i);
    } finally {
      await strict.close();
    }
  });

  it('connects with a token GitLab accepts: the account it belongs to, the token sealed and never shown', async () => {
    const res = await h.admin('POST', `/api/v1/orgs/${org}/connections`, { site: 'gitlab', api_url: `${gitlab.apiUrl}/`, token: MAINTAINER });
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({ site: 'gitlab', api_url: gitlab.apiUrl, account: 'alice', created_by: expect.any(String), repos: 0 });
    expect(res.body).not.toContain(MAINTAINER);
    connection = res.json().id;
    const { rows } = await h.db.pool.query('SELECT token_sealed FROM site_connections WHERE id = $1', [connection]);
    expect(rows[0].token_sealed).not.toContain(MAINTAINER);
    expect(unseal(h.config.secretKey, rows[0].token_sealed)).toBe(MAINTAINER);

    const again = await h.admin('POST', `/api/v1/orgs/${org}/connections`, { site: 'gitlab', api_url: gitlab.apiUrl, token: MAINTAINER });
    expect(again.statusCode).toBe(409);
    expect((await h.admin('GET', `/api/v1/orgs/${org}/connections`)).json()).toEqual([expect.objectContaining({ id: connection, account: 'alice' })]);
  });

  it('lists the projects the account maintains, every page', async () => {
    const res = await h.admin('GET', `/api/v1/orgs/${org}/connections/${connection}/repos`);
    expect(res.statusCode).toBe(200);
    const list = res.json() as { site_repo_id: string; full_name: string; admin: boolean; repo: unknown }[];
    expect(list).toHaveLength(121);
    expect(list[0]).toEqual({ site_repo_id: '11', full_name: 'acme/web', web_url: 'https://gitlab.test/acme/web', ssh_url: 'git@gitlab.test:acme/web.git', default_branch: 'main', admin: true, repo: null });
    // A developer's project and another's are not listed.
    expect(list.map((r) => r.full_name)).not.toEqual(expect.arrayContaining(['acme/docs']));
    expect(list.map((r) => r.full_name)).not.toEqual(expect.arrayContaining(['other/lib']));
    expect(gitlab.requests.filter((r) => r.startsWith('GET /api/v4/projects?'))).toHaveLength(2);
  });

  it('refuses to activate what the account does not maintain, asking GitLab', async () => {
    const developer = await h.admin('POST', `/api/v1/orgs/${org}/connections/${connection}/repos`, { site_repo_id: '12' });
    expect(developer.statusCode).toBe(403);
    expect(developer.json().message).toContain('acme/docs');
    const stranger = await h.admin('POST', `/api/v1/orgs/${org}/connections/${connection}/repos`, { site_repo_id: '13' });
    expect(stranger.statusCode).toBe(404);
    expect(stranger.json().field).toBe('site_repo_id');
    expect((await h.admin('POST', `/api/v1/orgs/${org}/connections/${connection}/repos`, { site_repo_id: '../x' })).statusCode).toBe(400);
    expect(gitlab.hooksOf(12)).toEqual([]);
    expect((await h.admin('GET', `/api/v1/orgs/${org}/repos`)).json()).toEqual([]);
  });

  it('activates a project: the repository, a webhook signed with a fresh secret, a read-only deploy key, statuses through GitLab', async () => {
    const res = await h.admin('POST', `/api/v1/orgs/${org}/connections/${connection}/repos`, { site_repo_id: '11' });
    expect(res.statusCode).toBe(201);
    repo = res.json();
    expect(res.json()).toMatchObject({
      name: 'web',
      pull_url: 'git@gitlab.test:acme/web.git',
      default_branch: 'main',
      webhook_secret_set: true,
      status_provider: 'gitlab',
      status_api_url: gitlab.apiUrl,
      status_repo: '11',
      status_token_set: true,
    });

    const hooks = gitlab.hooksOf(11);
    expect(hooks).toHaveLength(1);
    expect(hooks[0]).toMatchObject({ url: `${h.config.baseUrl}/1/gitlab/${repo.key}`, push_events: true, tag_push_events: true, merge_requests_events: true, enable_ssl_verification: true });
    const { rows } = await h.db.pool.query('SELECT webhook_secret_sealed FROM repos WHERE id = $1', [repo.id]);
    expect(hooks[0]!.token).toBe(unseal(h.config.secretKey, rows[0].webhook_secret_sealed));
    expect(hooks[0]!.token).toMatch(/^[0-9a-f]{64}$/);

    expect(gitlab.keysOf(11)).toEqual([expect.objectContaining({ key: repo.ssh_public_key, can_push: false, title: `Sluice ${org}/web` })]);

    const listed = (await h.admin('GET', `/api/v1/orgs/${org}/connections/${connection}/repos`)).json() as { site_repo_id: string; repo: unknown }[];
    expect(listed.find((r) => r.site_repo_id === '11')!.repo).toEqual({ id: repo.id, name: 'web', active: true });
  });

  it('activating again makes nothing twice', async () => {
    const res = await h.admin('POST', `/api/v1/orgs/${org}/connections/${connection}/repos`, { site_repo_id: '11' });
    expect(res.statusCode).toBe(201);
    expect(res.json().id).toBe(repo.id);
    expect(gitlab.hooksOf(11)).toHaveLength(1);
    expect(gitlab.keysOf(11)).toHaveLength(1);
  });

  it('a push GitLab delivers builds; the repository’s health says when it arrived and what GitLab logged', async () => {
    await h.admin('POST', `/api/v1/repos/${repo.id}/suites`, { branch: 'main', test_pattern: 'test/*.sh' });
    const before = h.enqueued.length;
    expect(await gitlab.push(11, { ref: 'refs/heads/main', before: SHA(1), after: SHA(2) }, { via })).toEqual([200]);
    expect(h.enqueued.length).toBe(before + 1);

    const health = await eventually(
      'the hook’s arrival written',
      async () => {
        const body = (await h.admin('GET', `/api/v1/repos/${repo.id}/connection`)).json();
        return body.last_hook_at ? body : null;
      },
      15_000,
    );
    expect(health).toMatchObject({
      connection_id: connection,
      site: 'gitlab',
      account: 'alice',
      site_repo_id: '11',
      site_name: 'acme/web',
      active: true,
      hook: 'present',
      deploy_key: 'present',
      refused_hooks: 0,
      site_last_delivery: { status: 200, ok: true },
      site_error: null,
    });
  });

  it('a hook with a forged token is refused (401) and counted', async () => {
    expect(await gitlab.push(11, { ref: 'refs/heads/main', before: SHA(2), after: SHA(3) }, { via, token: 'forged-token-of-someone' })).toEqual([401]);
    const health = await eventually(
      'the refusal written',
      async () => {
        const body = (await h.admin('GET', `/api/v1/repos/${repo.id}/connection`)).json();
        return body.refused_hooks > 0 ? body : null;
      },
      15_000,
    );
    expect(health).toMatchObject({ refused_hooks: 1, last_refused_at: expect.any(String), site_last_delivery: { status: 401, ok: false } });
  });

  it('repair makes again a hook deleted at GitLab, and leaves the rest as it is', async () => {
    gitlab.dropHook(11, Number(gitlab.hooksOf(11)[0]!.id));
    expect((await h.admin('GET', `/api/v1/repos/${repo.id}/connection`)).json()).toMatchObject({ hook: 'missing', deploy_key: 'present' });
    const keyBefore = gitlab.keysOf(11)[0]!.id;
    const res = await h.admin('POST', `/api/v1/repos/${repo.id}/connection/repair`);
    expect(res.statusCode).toBe(200);
    expect(gitlab.hooksOf(11)).toHaveLength(1);
    expect(gitlab.keysOf(11).map((k) => k.id)).toEqual([keyBefore]);
    expect((await h.admin('GET', `/api/v1/repos/${repo.id}/connection`)).json()).toMatchObject({ hook: 'present', deploy_key: 'present' });
    // The new hook is signed with the same secret: GitLab's pushes keep building.
    expect(await gitlab.push(11, { ref: 'refs/heads/main', before: SHA(3), after: SHA(4) }, { via })).toEqual([200]);
  });

  it('a webhook secret changed by hand: GitLab’s deliveries are refused until repair makes the hook again with the new one', async () => {
    const res = await h.admin('PATCH', `/api/v1/repos/${repo.id}`, { webhook_secret: 'a-secret-typed-by-hand' });
    expect(res.statusCode).toBe(200);
    expect(await gitlab.push(11, { ref: 'refs/heads/main', before: SHA(4), after: SHA(5) }, { via })).toEqual([401]);
    const before = gitlab.hooksOf(11)[0]!.id;
    expect((await h.admin('POST', `/api/v1/repos/${repo.id}/connection/repair`)).statusCode).toBe(200);
    expect(gitlab.hooksOf(11)).toEqual([expect.objectContaining({ token: 'a-secret-typed-by-hand' })]);
    const remade = gitlab.hooksOf(11)[0]!.id;
    expect(remade).not.toBe(before);
    expect(await gitlab.push(11, { ref: 'refs/heads/main', before: SHA(5), after: SHA(6) }, { via })).toEqual([200]);
    // Repair again: nothing to make.
    expect((await h.admin('POST', `/api/v1/repos/${repo.id}/connection/repair`)).statusCode).toBe(200);
    expect(gitlab.hooksOf(11).map((x) => x.id)).toEqual([remade]);
  });

  it('repair follows a rename, and rotated keys get a hook with the new URL and the new deploy key in place of the old', async () => {
    gitlab.rename(11, 'acme/website', 'git@gitlab.test:acme/website.git');
    const rotated = await h.admin('POST', `/api/v1/repos/${repo.id}/rotate-key`);
    expect(rotated.statusCode).toBe(200);
    const key = rotated.json().key as string;
    const sshRotated = await h.admin('POST', `/api/v1/repos/${repo.id}/rotate-ssh-key`);
    expect(sshRotated.statusCode).toBe(200);
    // Until repaired, what is at GitLab is not Sluice's as it is now.
    expect((await h.admin('GET', `/api/v1/repos/${repo.id}/connection`)).json()).toMatchObject({ hook: 'missing', deploy_key: 'missing' });
    const res = await h.admin('POST', `/api/v1/repos/${repo.id}/connection/repair`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ pull_url: 'git@gitlab.test:acme/website.git', status_repo: '11' });
    expect(gitlab.hooksOf(11).map((x) => x.url)).toEqual([`${h.config.baseUrl}/1/gitlab/${key}`]);
    expect(gitlab.keysOf(11).map((k) => k.key)).toEqual([sshRotated.json().ssh_public_key]);
    expect((await h.admin('GET', `/api/v1/repos/${repo.id}/connection`)).json()).toMatchObject({ site_name: 'acme/website', hook: 'present' });
  });

  it('deactivating removes the hook and the key at GitLab; the repository stays, and activating makes them again', async () => {
    const res = await h.admin('DELETE', `/api/v1/repos/${repo.id}/connection`);
    expect(res.statusCode).toBe(204);
    expect(gitlab.hooksOf(11)).toEqual([]);
    expect(gitlab.keysOf(11)).toEqual([]);
    expect((await h.admin('GET', `/api/v1/repos/${repo.id}`)).statusCode).toBe(200);
    expect((await h.admin('GET', `/api/v1/repos/${repo.id}/connection`)).json()).toMatchObject({ active: false, hook: 'missing', deploy_key: 'missing' });

    const again = await h.admin('POST', `/api/v1/orgs/${org}/connections/${connection}/repos`, { site_repo_id: '11' });
    expect(again.statusCode).toBe(201);
    expect(again.json().id).toBe(repo.id);
    expect(gitlab.hooksOf(11)).toHaveLength(1);
    expect(gitlab.keysOf(11)).toHaveLength(1);
  });

  it('a connection takes a new token of the same account, and its repositories’ statuses go out with it', async () => {
    const path = `/api/v1/orgs/${org}/connections/${connection}/token`;
    expect((await h.admin('PUT', path, { token: 'glpat-nobody-s-token' })).statusCode).toBe(400);
    const other = await h.admin('PUT', path, { token: READ_ONLY });
    expect(other.statusCode).toBe(409);
    expect(other.json().message).toContain('carol');
    const res = await h.admin('PUT', path, { token: RENEWED });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ id: connection, account: 'alice', repos: 1 });
    expect(res.body).not.toContain(RENEWED);
    const { rows } = await h.db.pool.query('SELECT r.status_token_sealed, c.token_sealed FROM repos r, site_connections c WHERE r.id = $1 AND c.id = $2', [repo.id, connection]);
    expect(unseal(h.config.secretKey, rows[0].token_sealed)).toBe(RENEWED);
    expect(unseal(h.config.secretKey, rows[0].status_token_sealed)).toBe(RENEWED);
  });

  it('a read-only token may list but not activate: GitLab’s refusal is named', async () => {
    const made = await h.admin('POST', `/api/v1/orgs/${org}/connections`, { site: 'gitlab', api_url: gitlab.apiUrl, token: READ_ONLY });
    expect(made.statusCode).toBe(201);
    const res = await h.admin('POST', `/api/v1/orgs/${org}/connections/${made.json().id}/repos`, { site_repo_id: '11', name: 'web-two' });
    expect(res.statusCode).toBe(403);
    expect(res.json().message).toMatch(/may not/);
    expect(res.body).not.toContain(READ_ONLY);
    // What was made stays, and says what is missing.
    const repos = (await h.admin('GET', `/api/v1/orgs/${org}/repos`)).json() as { id: number; name: string }[];
    const two = repos.find((r) => r.name === 'web-two')!;
    expect((await h.admin('GET', `/api/v1/repos/${two.id}/connection`)).json()).toMatchObject({ active: false, hook: 'missing' });
  });

  it('a repository not activated from a site has no connection (404); deleting a connection keeps its repositories', async () => {
    const plain = await h.admin('POST', `/api/v1/orgs/${org}/repos`, { name: 'plain', scm: 'git', pull_url: 'git@scm.example.test:x.git' });
    expect((await h.admin('GET', `/api/v1/repos/${plain.json().id}/connection`)).statusCode).toBe(404);
    expect((await h.admin('DELETE', `/api/v1/orgs/${org}/connections/${connection}`)).statusCode).toBe(204);
    expect((await h.admin('DELETE', `/api/v1/orgs/${org}/connections/${connection}`)).statusCode).toBe(404);
    expect((await h.admin('GET', `/api/v1/repos/${repo.id}`)).statusCode).toBe(200);
    expect((await h.admin('GET', `/api/v1/repos/${repo.id}/connection`)).statusCode).toBe(404);
  });

  it('no token reached a log line', () => {
    const logs = h.logs.join('\n');
    expect(logs).not.toContain(MAINTAINER);
    expect(logs).not.toContain(READ_ONLY);
    expect(logs).not.toContain(RENEWED);
  });
});
