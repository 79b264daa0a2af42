/**
 * Commit status settings in the management API (`POST /orgs/:org/repos`, `PATCH
 * /repos/:repo`) and their log (`GET /repos/:repo/statuses`), against a real PostgreSQL: the
 * rules between the fields, the token sealed and never shown, the log newest first.
 */
import { unseal } from '../../src/crypto/sealed';
import { insertStatusAttempt } from '../../src/db/commitStatuses';
import { startApiHarness, type ApiHarness } from '../support/apiApp';

let h: ApiHarness;
const TOKEN = 'ghp_ApiT0kenThatMustNeverShow';
/** Everything the API said, to check the token is in none of it. */
const bodies: string[] = [];

async function admin(method: string, url: string, body?: unknown) {
  const res = await h.admin(method, url, body);
  bodies.push(res.body);
  return res;
}

let repoId: number;

beforeAll(async () => {
  h = await startApiHarness();
  await admin('POST', '/api/v1/orgs', { name: 'acme', email: 'ci@acme.test' });
  const res = await admin('POST', '/api/v1/orgs/acme/repos', { name: 'app', scm: 'git', pull_url: 'git@github.com:acme/app.git' });
  repoId = res.json().id;
});

afterAll(async () => {
  await h.close();
});

async function sealedToken(id: number): Promise<string | null> {
  const { rows } = await h.db.pool.query<{ status_token_sealed: string | null }>('SELECT status_token_sealed FROM repos WHERE id = $1', [id]);
  return rows[0]!.status_token_sealed;
}

describe('status settings', () => {
  it('are off by default', async () => {
    expect((await admin('GET', `/api/v1/repos/${repoId}`)).json()).toMatchObject({
      status_provider: null,
      status_api_url: null,
      status_repo: null,
      status_token_set: false,
    });
  });

  it('GitHub: the repository path from the pull URL, the public API by default, the token sealed and shown only as set', async () => {
    const res = await admin('PATCH', `/api/v1/repos/${repoId}`, { status_provider: 'github', status_token: TOKEN });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      status_provider: 'github',
      status_api_url: 'https://api.github.com',
      status_repo: 'acme/app',
      status_token_set: true,
    });
    const sealed = await sealedToken(repoId);
    expect(sealed).toMatch(/^v1:/);
    expect(unseal(h.config.secretKey, sealed!)).toBe(TOKEN);
    expect((await admin('GET', `/api/v1/repos/${repoId}`)).json().status_token_set).toBe(true);
  });

  it('a self-hosted base URL (trailing slash dropped) and a repository path of its own; other settings untouched', async () => {
    const res = await admin('PATCH', `/api/v1/repos/${repoId}`, { status_api_url: 'https://ghe.acme.test/api/v3/', status_repo: 'platform/app', status_token: TOKEN });
    expect(res.json()).toMatchObject({ status_api_url: 'https://ghe.acme.test/api/v3', status_repo: 'platform/app', status_token_set: true });
    const back = await admin('PATCH', `/api/v1/repos/${repoId}`, { status_api_url: null, status_token: TOKEN });
    expect(back.json().status_api_url).toBe('https://api.github.com');
  });

  it('a base URL is stored as fetch reads it, without a trailing slash', async () => {
    const res = await admin('PATCH', `/api/v1/repos/${repoId}`, { status_api_url: 'HTTPS:/GHE.Acme.test:443/api/v3/', status_token: TOKEN });
    expect(res.statusCode).toBe(200);
    expect(res.json().status_api_url).toBe('https://ghe.acme.test/api/v3');
    expect((await admin('PATCH', `/api/v1/repos/${repoId}`, { status_api_url: null, status_token: TOKEN })).json().status_api_url).toBe('https://api.github.com');
  });

  it.each<[string, Record<string, unknown>, string, RegExp]>([
    ['Gitea without a base URL', { status_provider: 'gitea' }, 'status_api_url', /required for gitea/],
    ['Bitbucket Server without a base URL', { status_provider: 'bitbucket-server', status_token: TOKEN }, 'status_api_url', /required for bitbucket-server: .*https:\/\/bitbucket\.example/],
    [
      'Bitbucket Server with its REST API URL for a base URL',
      { status_provider: 'bitbucket-server', status_api_url: 'https://bitbucket.acme.test/rest/api/1.0', status_token: TOKEN },
      'status_api_url',
      /base URL.*not its REST API/,
    ],
    [
      'Bitbucket Server with three segments',
      { status_provider: 'bitbucket-server', status_api_url: 'https://bitbucket.acme.test', status_repo: 'PLAT/sub/app', status_token: TOKEN },
      'status_repo',
      /PROJECT\/repository slug.*for bitbucket-server/,
    ],
    [
      'Bitbucket Server with a path of one segment',
      { status_provider: 'bitbucket-server', status_api_url: 'https://bitbucket.acme.test', status_repo: 'app', status_token: TOKEN },
      'status_repo',
      /PROJECT\/repository slug/,
    ],
    ['GitLab with a one-segment path', { status_provider: 'gitlab', status_repo: 'app' }, 'status_repo', /GitLab project/],
    ['GitHub with three segments', { status_repo: 'a/b/c' }, 'status_repo', /owner\/name/],
    ['an unknown provider', { status_provider: 'sourceforge' }, 'status_provider', /./],
    ['credentials in the base URL', { status_api_url: 'https://user:pw@ghe.acme.test/api/v3' }, 'status_api_url', /credentials/],
    // WHATWG URL (what fetch uses) reads each of these as https://u:p@h.example/api.
    ['credentials after one slash', { status_api_url: 'https:/u:p@h.example/api' }, 'status_api_url', /credentials/],
    ['credentials after no slash', { status_api_url: 'https:u:p@h.example/api' }, 'status_api_url', /credentials/],
    ['credentials after backslashes', { status_api_url: 'https:\\\\u:p@h.example/api' }, 'status_api_url', /credentials/],
    ['a user without a password', { status_api_url: 'https:u@h.example/api' }, 'status_api_url', /credentials/],
    ['a base URL that is not http(s)', { status_api_url: 'ftp://ghe.acme.test' }, 'status_api_url', /http or https/],
    ['a token with a space', { status_token: 'two words' }, 'status_token', /printable ASCII/],
    // The token set was given for GitHub's public API: it does not follow a new provider or URL.
    ['another provider, the token kept', { status_provider: 'gitlab' }, 'status_token', /set it again for the new provider or API URL/],
    ['another API URL, the token kept', { status_api_url: 'https://evil.example/api/v3' }, 'status_token', /set it again/],
    ['another API URL spelled sneakily, the token kept', { status_api_url: 'https:/ghe.acme.test/api/v3' }, 'status_token', /set it again/],
  ])('400 for %s, naming the field, changing nothing', async (_name, body, field, message) => {
    const before = (await admin('GET', `/api/v1/repos/${repoId}`)).json();
    const res = await admin('PATCH', `/api/v1/repos/${repoId}`, body);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: 'invalid request', field });
    expect(res.json().message).toMatch(message);
    expect((await admin('GET', `/api/v1/repos/${repoId}`)).json()).toEqual(before);
  });

  it('the provider and URL in effect given again, or the provider\'s default spelled out, keep the token', async () => {
    for (const body of [{ status_provider: 'github' }, { status_provider: 'github', status_api_url: 'https://api.github.com/' }, { status_api_url: null }]) {
      const res = await admin('PATCH', `/api/v1/repos/${repoId}`, body);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({ status_provider: 'github', status_api_url: 'https://api.github.com', status_token_set: true });
    }
  });

  it('statuses off keeps the token without asking for it; on again, it must be given again', async () => {
    const off = await admin('PATCH', `/api/v1/repos/${repoId}`, { status_provider: null });
    expect(off.statusCode).toBe(200);
    expect(off.json()).toMatchObject({ status_provider: null, status_token_set: true });
    const on = await admin('PATCH', `/api/v1/repos/${repoId}`, { status_provider: 'github' });
    expect(on.statusCode).toBe(400);
    expect(on.json()).toMatchObject({ field: 'status_token' });
    expect((await admin('PATCH', `/api/v1/repos/${repoId}`, { status_provider: 'github', status_token: TOKEN })).json()).toMatchObject({ status_provider: 'github', status_token_set: true });
  });

  it('GitLab with a subgroup path; Gitea with its base URL', async () => {
    expect((await admin('PATCH', `/api/v1/repos/${repoId}`, { status_provider: 'gitlab', status_repo: 'acme/platform/app', status_token: TOKEN })).json()).toMatchObject({
      status_provider: 'gitlab',
      status_api_url: 'https://gitlab.com/api/v4',
      status_repo: 'acme/platform/app',
    });
    expect(
      (await admin('PATCH', `/api/v1/repos/${repoId}`, { status_provider: 'gitea', status_repo: 'acme/app', status_api_url: 'https://gitea.acme.test/api/v1', status_token: TOKEN })).json(),
    ).toMatchObject({ status_provider: 'gitea', status_api_url: 'https://gitea.acme.test/api/v1' });
  });

  it('Bitbucket Server: its base URL (context path kept) and PROJECT/slug', async () => {
    const res = await admin('PATCH', `/api/v1/repos/${repoId}`, {
      status_provider: 'bitbucket-server',
      status_api_url: 'https://bitbucket.acme.test/bitbucket/',
      status_repo: 'PLAT/app',
      status_token: TOKEN,
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ status_provider: 'bitbucket-server', status_api_url: 'https://bitbucket.acme.test/bitbucket', status_repo: 'PLAT/app', status_token_set: true });
    // A token given for this server does not follow it to another.
    const moved = await admin('PATCH', `/api/v1/repos/${repoId}`, { status_api_url: 'https://bitbucket.other.test' });
    expect(moved.statusCode).toBe(400);
    expect(moved.json()).toMatchObject({ field: 'status_token' });
  });

  it('null removes the token; a null provider turns statuses off', async () => {
    expect((await admin('PATCH', `/api/v1/repos/${repoId}`, { status_token: null })).json().status_token_set).toBe(false);
    expect(await sealedToken(repoId)).toBeNull();
    expect((await admin('PATCH', `/api/v1/repos/${repoId}`, { status_provider: null })).json().status_provider).toBeNull();
  });

  it('are taken on creation too, the path from the pull URL when not given', async () => {
    const res = await admin('POST', '/api/v1/orgs/acme/repos', {
      name: 'lib',
      scm: 'git',
      pull_url: 'ssh://git@bitbucket.org/acme/lib.git',
      status_provider: 'bitbucket',
      status_token: 'acme-bot:app-password',
    });
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({ status_provider: 'bitbucket', status_api_url: 'https://api.bitbucket.org/2.0', status_repo: 'acme/lib', status_token_set: true });
    const refused = await admin('POST', '/api/v1/orgs/acme/repos', { name: 'lib2', scm: 'git', pull_url: '/srv/git/lib2.git', status_provider: 'github' });
    expect(refused.statusCode).toBe(400);
    expect(refused.json()).toMatchObject({ field: 'status_repo' });
    expect((await admin('GET', '/api/v1/repos/acme%2Flib2')).statusCode).toBe(404);
  });

  it('Bitbucket Server on creation: the path from an SSH or an HTTP (/scm/) pull URL, the base URL required', async () => {
    for (const [name, pullUrl, path] of [
      ['bbs-ssh', 'ssh://git@bitbucket.acme.test:7999/plat/tool.git', 'plat/tool'],
      ['bbs-http', 'https://bitbucket.acme.test/bitbucket/scm/PLAT/tool.git', 'PLAT/tool'],
    ] as const) {
      const res = await admin('POST', '/api/v1/orgs/acme/repos', {
        name,
        scm: 'git',
        pull_url: pullUrl,
        status_provider: 'bitbucket-server',
        status_api_url: 'https://bitbucket.acme.test/bitbucket',
        status_token: TOKEN,
      });
      expect(res.statusCode).toBe(201);
      expect(res.json()).toMatchObject({ status_provider: 'bitbucket-server', status_api_url: 'https://bitbucket.acme.test/bitbucket', status_repo: path, status_token_set: true });
    }
    const refused = await admin('POST', '/api/v1/orgs/acme/repos', {
      name: 'bbs-nourl',
      scm: 'git',
      pull_url: 'ssh://git@bitbucket.acme.test:7999/plat/tool.git',
      status_provider: 'bitbucket-server',
      status_token: TOKEN,
    });
    expect(refused.statusCode).toBe(400);
    expect(refused.json()).toMatchObject({ error: 'invalid request', field: 'status_api_url' });
    expect((await admin('GET', '/api/v1/repos/acme%2Fbbs-nourl')).statusCode).toBe(404);
  });

  it('the token appears in no answer', () => {
    expect(bodies.join('\n')).not.toContain(TOKEN);
    expect(bodies.join('\n')).not.toContain('app-password');
  });
});

describe('GET /api/v1/repos/:repo/statuses', () => {
  let sessions: number[];

  beforeAll(async () => {
    const { pool } = h.db;
    const suite = await pool.query<{ id: number }>("INSERT INTO suites (repo_id, branch, test_pattern) VALUES ($1, 'master', '*.sh') RETURNING id", [repoId]);
    const event = await pool.query<{ id: number }>(
      "INSERT INTO ci_events (guid, repo_id, provider, decision, trigger) VALUES (gen_random_uuid(), $1, 'builds', 'build', '{}') RETURNING id",
      [repoId],
    );
    sessions = [];
    for (let i = 0; i < 2; i++) {
      const s = await pool.query<{ id: number }>("INSERT INTO sessions (ci_event_id, suite_id, branch, head) VALUES ($1, $2, 'master', 'HEAD') RETURNING id", [
        event.rows[0]!.id,
        suite.rows[0]!.id,
      ]);
      sessions.push(Number(s.rows[0]!.id));
    }
    const base = { repoId, provider: 'github' as const, commitId: 'a'.repeat(40), context: 'sluice/default', url: 'https://api.github.com/repos/acme/app/statuses/' + 'a'.repeat(40), durationMs: 12 };
    await insertStatusAttempt(pool, { ...base, sessionId: sessions[0]!, state: 'pending', attempt: 1, statusCode: 201, outcome: 'delivered', error: null });
    await insertStatusAttempt(pool, { ...base, sessionId: sessions[0]!, state: 'success', attempt: 1, statusCode: 502, outcome: 'retrying', error: 'HTTP 502' });
    await insertStatusAttempt(pool, { ...base, sessionId: sessions[0]!, state: 'success', attempt: 2, statusCode: 201, outcome: 'delivered', error: null });
    await insertStatusAttempt(pool, { ...base, sessionId: sessions[1]!, state: 'pending', attempt: 1, statusCode: 401, outcome: 'dropped', error: 'HTTP 401: Bad credentials' });
  });

  it('lists the attempts newest first', async () => {
    const res = await admin('GET', `/api/v1/repos/${repoId}/statuses`);
    expect(res.statusCode).toBe(200);
    const list = res.json() as Array<Record<string, unknown>>;
    expect(list.map((r) => [r.session, r.state, r.attempt, r.outcome])).toEqual([
      [sessions[1], 'pending', 1, 'dropped'],
      [sessions[0], 'success', 2, 'delivered'],
      [sessions[0], 'success', 1, 'retrying'],
      [sessions[0], 'pending', 1, 'delivered'],
    ]);
    expect(Object.keys(list[0]!).sort()).toEqual(
      ['id', 'session', 'provider', 'commit_id', 'context', 'state', 'url', 'attempt', 'status_code', 'outcome', 'error', 'duration_ms', 'created_at'].sort(),
    );
  });

  it('by session, outcome, and a page at a time', async () => {
    const bySession = (await admin('GET', `/api/v1/repos/acme%2Fapp/statuses?session=${sessions[1]}`)).json();
    expect(bySession).toHaveLength(1);
    expect((await admin('GET', `/api/v1/repos/${repoId}/statuses?outcome=delivered`)).json()).toHaveLength(2);
    const first = (await admin('GET', `/api/v1/repos/${repoId}/statuses?limit=2`)).json();
    const next = (await admin('GET', `/api/v1/repos/${repoId}/statuses?limit=2&before=${first[1].id}`)).json();
    expect([...first, ...next].map((r: { id: number }) => r.id)).toEqual((await admin('GET', `/api/v1/repos/${repoId}/statuses`)).json().map((r: { id: number }) => r.id));
  });

  it("shows in the session's JSON, oldest first", async () => {
    const view = (await admin('GET', `/api/v1/sessions/${sessions[0]}`)).json();
    expect(view.commit_statuses.map((r: { state: string; outcome: string }) => [r.state, r.outcome])).toEqual([
      ['pending', 'delivered'],
      ['success', 'retrying'],
      ['success', 'delivered'],
    ]);
  });

  it('400 for a bad filter, 404 for an unknown repository', async () => {
    const bad = await admin('GET', `/api/v1/repos/${repoId}/statuses?limit=0`);
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toMatchObject({ field: 'limit' });
    expect((await admin('GET', `/api/v1/repos/${repoId}/statuses?outcome=lost`)).statusCode).toBe(400);
    expect((await admin('GET', '/api/v1/repos/999999/statuses')).statusCode).toBe(404);
  });
});
