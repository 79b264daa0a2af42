// The management API (/api/v1) against a real PostgreSQL. Temporal is not involved here: the
// harness's enqueue is a recording stand-in (see test/support/apiApp.ts).
import { unseal } from '../../src/crypto/sealed';
import { startApiHarness, type ApiHarness } from '../support/apiApp';

let h: ApiHarness;

beforeAll(async () => {
  h = await startApiHarness();
});

afterAll(async () => {
  await h.close();
});

/** Everything the API ever said, so tests can assert what never appears in any response. */
const bodies: string[] = [];
async function admin(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, body?: unknown) {
  const res = await h.admin(method, url, body);
  bodies.push(res.body);
  return res;
}

describe('authorization', () => {
  it.each([
    ['no header', undefined],
    ['wrong token', 'Bearer not-the-token'],
    ['wrong scheme', 'Basic abc'],
    ['empty bearer', 'Bearer '],
  ])('401 with %s', async (_name, authorization) => {
    for (const [method, url] of [
      ['GET', '/api/v1/orgs'],
      ['POST', '/api/v1/orgs'],
      ['GET', '/api/v1/repos/1'],
      ['GET', '/api/v1/webhooks/1/deliveries'],
      ['GET', '/api/v1/sessions/1'],
    ] as const) {
      const res = await h.request({ method, url, headers: authorization ? { authorization } : {}, payload: method === 'POST' ? { name: 'x', email: 'x@example.com' } : undefined });
      expect(res.statusCode).toBe(401);
      expect(res.json()).toMatchObject({ error: 'unauthorized' });
      expect(res.headers['www-authenticate']).toMatch(/^Bearer/);
    }
    // Nothing was created by the refused POST.
    const { rows } = await h.db.pool.query('SELECT 1 FROM orgs');
    expect(rows).toHaveLength(0);
  });

  it('accepts the right token, any case of "Bearer"', async () => {
    const res = await h.request({ method: 'GET', url: '/api/v1/orgs', headers: { authorization: `bearer ${h.config.adminToken}` } });
    expect(res.statusCode).toBe(200);
  });
});

describe('organizations', () => {
  it('creates and reads one by id and by name', async () => {
    const res = await admin('POST', '/api/v1/orgs', { name: 'acme', email: 'ci@acme.example' });
    expect(res.statusCode).toBe(201);
    const org = res.json();
    expect(org).toMatchObject({ id: expect.any(Number), name: 'acme', email: 'ci@acme.example' });
    expect((await admin('GET', `/api/v1/orgs/${org.id}`)).json()).toMatchObject({ id: org.id, name: 'acme' });
    expect((await admin('GET', '/api/v1/orgs/acme')).json()).toMatchObject({ id: org.id });
    expect((await admin('GET', '/api/v1/orgs')).json()).toEqual([expect.objectContaining({ name: 'acme' })]);
  });

  it('409 on a duplicate name', async () => {
    const res = await admin('POST', '/api/v1/orgs', { name: 'acme', email: 'other@acme.example' });
    expect(res.statusCode).toBe(409);
    expect(res.json()).toEqual({ error: 'conflict', field: 'name', message: expect.any(String) });
  });

  it.each<[string, unknown, string, string]>([
    ['missing email', { name: 'x1' }, 'email', 'required'],
    ['bad email', { name: 'x1', email: 'nope' }, 'email', 'expected an email address'],
    ['name with a space', { name: 'a b', email: 'a@b.example' }, 'name', 'use letters, digits, ".", "_" and "-", starting with a letter or digit'],
    ['all-digit name', { name: '123', email: 'a@b.example' }, 'name', 'must not be all digits (ids are)'],
    ['name of wrong type', { name: 5, email: 'a@b.example' }, 'name', 'expected string'],
    ['unknown field', { name: 'x1', email: 'a@b.example', colour: 'red' }, 'colour', 'unknown field'],
    ['array body', [1], 'body', 'expected object'],
  ])('400 for %s', async (_name, body, field, message) => {
    const res = await admin('POST', '/api/v1/orgs', body);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: 'invalid request', field, message });
  });

  it('400 for a body that is not JSON', async () => {
    const res = await h.request({
      method: 'POST',
      url: '/api/v1/orgs',
      headers: { authorization: `Bearer ${h.config.adminToken}`, 'content-type': 'application/json' },
      payload: '{"name":',
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: 'invalid request', field: 'body' });
  });

  it('404 for an unknown org', async () => {
    for (const ref of ['999999', 'nobody']) {
      const res = await admin('GET', `/api/v1/orgs/${ref}`);
      expect(res.statusCode).toBe(404);
      expect(res.json()).toEqual({ error: 'not found', message: 'no such organization' });
    }
  });
});

describe('repositories', () => {
  let repo: Record<string, unknown> & { id: number; key: string; webhook_url: string; ssh_public_key: string };

  it('creates one with a key, a webhook URL and an SSH public key', async () => {
    const res = await admin('POST', '/api/v1/orgs/acme/repos', {
      name: 'widgets',
      scm: 'git',
      pull_url: 'git@scm.example.test:acme/widgets.git',
      ci_squash: true,
      branch_blacklist: ['wip/*'],
      chat_url: 'https://chat.example.test/hook',
    });
    expect(res.statusCode).toBe(201);
    repo = res.json();
    expect(repo).toMatchObject({
      id: expect.any(Number),
      org_id: expect.any(Number),
      org_name: 'acme',
      name: 'widgets',
      scm: 'git',
      pull_url: 'git@scm.example.test:acme/widgets.git',
      ci_push_url: null,
      pull_request_only: false,
      ci_squash: true,
      branch_blacklist: ['wip/*'],
      chat_url: 'https://chat.example.test/hook',
    });
    expect(repo.key).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(repo.webhook_url).toBe(`https://ci.example.test/1/builds/${repo.key}`);
    expect(repo.ssh_public_key).toMatch(/^ssh-ed25519 [A-Za-z0-9+/=]+ sluice:acme\/widgets$/);
  });

  it('stores the private key sealed and the key only as hash and sealed copy', async () => {
    const { rows } = await h.db.pool.query('SELECT * FROM repos WHERE id = $1', [repo.id]);
    const row = rows[0];
    expect(row.ssh_private_key_sealed).toMatch(/^v1:/);
    expect(unseal(h.config.secretKey, row.ssh_private_key_sealed)).toContain('BEGIN OPENSSH PRIVATE KEY');
    expect(unseal(h.config.secretKey, row.key_sealed)).toBe(repo.key);
    expect(JSON.stringify(row)).not.toContain(repo.key);
  });

  it('reads it by id and by org/name', async () => {
    expect((await admin('GET', `/api/v1/repos/${repo.id}`)).json()).toEqual(repo);
    expect((await admin('GET', '/api/v1/repos/acme%2Fwidgets')).json()).toEqual(repo);
    expect((await admin('GET', '/api/v1/orgs/acme/repos')).json()).toEqual([repo]);
  });

  it('patches settings', async () => {
    const res = await admin('PATCH', `/api/v1/repos/${repo.id}`, {
      pull_request_only: true,
      ci_push_url: 'ssh://ci.example.test/widgets',
      chat_url: null,
      branch_blacklist: [],
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      pull_request_only: true,
      ci_squash: true,
      ci_push_url: 'ssh://ci.example.test/widgets',
      chat_url: null,
      branch_blacklist: [],
      key: repo.key,
    });
  });

  it('shows the SSH host keys it trusts, which an operator may set or reset', async () => {
    expect((await admin('GET', `/api/v1/repos/${repo.id}`)).json().ssh_known_hosts).toBeNull();
    const line = 'git.example.test ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n';
    expect((await admin('PATCH', `/api/v1/repos/${repo.id}`, { ssh_known_hosts: line })).json().ssh_known_hosts).toBe(line);
    const bad = await admin('PATCH', `/api/v1/repos/${repo.id}`, { ssh_known_hosts: 'host\u0000key' });
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toMatchObject({ field: 'ssh_known_hosts', message: 'known_hosts lines: printable ASCII and newlines only' });
    // null forgets them: the next connection learns them again (trust on first use).
    expect((await admin('PATCH', `/api/v1/repos/${repo.id}`, { ssh_known_hosts: null })).json().ssh_known_hosts).toBeNull();
  });

  it('refuses to patch name, scm or unknown fields', async () => {
    for (const field of ['name', 'scm', 'key']) {
      const res = await admin('PATCH', `/api/v1/repos/${repo.id}`, { [field]: 'x' });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ field, message: 'unknown field' });
    }
  });

  it('409 for the same name in the same org, fine in another org', async () => {
    const dup = await admin('POST', '/api/v1/orgs/acme/repos', { name: 'widgets', scm: 'hg', pull_url: 'ssh://hg.example.test/w' });
    expect(dup.statusCode).toBe(409);
    expect(dup.json()).toMatchObject({ error: 'conflict', field: 'name' });
    await admin('POST', '/api/v1/orgs', { name: 'other', email: 'ci@other.example' });
    const ok = await admin('POST', '/api/v1/orgs/other/repos', { name: 'widgets', scm: 'hg', pull_url: 'ssh://hg.example.test/w' });
    expect(ok.statusCode).toBe(201);
    expect(ok.json().key).not.toBe(repo.key);
  });

  it.each<[string, Record<string, unknown>, string, string]>([
    ['missing scm', { name: 'r1', pull_url: 'x' }, 'scm', 'required'],
    ['bad scm', { name: 'r1', scm: 'svn', pull_url: 'x' }, 'scm', 'expected one of "git", "hg"'],
    ['missing pull_url', { name: 'r1', scm: 'git' }, 'pull_url', 'required'],
    ['pull_url that is an option', { name: 'r1', scm: 'git', pull_url: '--upload-pack=x' }, 'pull_url', 'must not start with "-"'],
    ['pull_url with a space', { name: 'r1', scm: 'git', pull_url: 'a b' }, 'pull_url', 'must not contain whitespace or control characters'],
    ['chat_url not http', { name: 'r1', scm: 'git', pull_url: 'x', chat_url: 'ftp://x' }, 'chat_url', 'expected an http or https URL'],
    ['ci_squash as string', { name: 'r1', scm: 'git', pull_url: 'x', ci_squash: 'yes' }, 'ci_squash', 'expected boolean'],
    ['branch_blacklist item', { name: 'r1', scm: 'git', pull_url: 'x', branch_blacklist: [''] }, 'branch_blacklist.0', 'must not be empty'],
  ])('400 for %s', async (_name, body, field, message) => {
    const res = await admin('POST', '/api/v1/orgs/acme/repos', body);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: 'invalid request', field, message });
  });

  it('404 for unknown repositories and orgs', async () => {
    for (const url of ['/api/v1/repos/999999', '/api/v1/repos/acme%2Fnope', '/api/v1/repos/nope', '/api/v1/repos/a%2Fb%2Fc']) {
      expect((await admin('GET', url)).statusCode).toBe(404);
    }
    expect((await admin('POST', '/api/v1/orgs/nobody/repos', { name: 'r', scm: 'git', pull_url: 'x' })).statusCode).toBe(404);
  });

  describe('suites', () => {
    it('creates one and lists it', async () => {
      const res = await admin('POST', `/api/v1/repos/${repo.id}/suites`, { branch: 'master', test_pattern: 'test/**/*.sh', test_command: 'sh -e', workers: 4 });
      expect(res.statusCode).toBe(201);
      const suite = res.json();
      expect(suite).toMatchObject({ id: expect.any(Number), repo_id: repo.id, branch: 'master', test_pattern: 'test/**/*.sh', test_command: 'sh -e', workers: 4 });
      expect((await admin('GET', `/api/v1/repos/${repo.id}/suites`)).json()).toEqual([suite]);
    });

    it('defaults workers to 1 and test_command to null; strips refs/heads/', async () => {
      const res = await admin('POST', '/api/v1/repos/acme%2Fwidgets/suites', { branch: 'refs/heads/dev', test_pattern: '*.sh' });
      expect(res.statusCode).toBe(201);
      expect(res.json()).toMatchObject({ branch: 'dev', workers: 1, test_command: null });
    });

    it('409 for a second suite on the same branch', async () => {
      const res = await admin('POST', `/api/v1/repos/${repo.id}/suites`, { branch: 'master', test_pattern: '*.sh' });
      expect(res.statusCode).toBe(409);
      expect(res.json()).toMatchObject({ error: 'conflict', field: 'branch' });
    });

    it.each<[string, Record<string, unknown>, string, string]>([
      ['bad branch', { branch: 'a..b', test_pattern: '*' }, 'branch', 'must not contain ".."'],
      ['missing pattern', { branch: 'x' }, 'test_pattern', 'required'],
      ['absolute pattern', { branch: 'x', test_pattern: '/etc/*' }, 'test_pattern', 'must be relative to the repository root'],
      ['climbing pattern', { branch: 'x', test_pattern: 'a/../../*' }, 'test_pattern', 'must not contain ".." segments'],
      ['workers 0', { branch: 'x', test_pattern: '*', workers: 0 }, 'workers', 'must be at least 1'],
      ['workers 65', { branch: 'x', test_pattern: '*', workers: 65 }, 'workers', 'must be at most 64'],
      ['workers 1.5', { branch: 'x', test_pattern: '*', workers: 1.5 }, 'workers', 'expected int'],
    ])('400 for %s', async (_name, body, field, message) => {
      const res = await admin('POST', `/api/v1/repos/${repo.id}/suites`, body);
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({ error: 'invalid request', field, message });
    });

    it('keeps named profiles and a plan, and changes them with PATCH', async () => {
      const unit = { name: 'unit', test_pattern: 'test/unit/*.sh', env: { KIND: 'unit' }, workers: 2 };
      const res = await admin('POST', `/api/v1/repos/${repo.id}/suites`, {
        branch: 'plans',
        test_pattern: '*.sh',
        profiles: [unit, { name: 'lint', test_pattern: 'lint/*.sh', test_command: 'sh' }],
        plan: ['unit', 'lint'],
      });
      expect(res.statusCode).toBe(201);
      const suite = res.json();
      expect(suite).toMatchObject({ profiles: [unit, { name: 'lint', test_command: 'sh' }], plan: ['unit', 'lint'] });
      const patched = await admin('PATCH', `/api/v1/repos/${repo.id}/suites/${suite.id}`, { plan: null, profiles: [unit] });
      expect(patched.json()).toMatchObject({ profiles: [unit], plan: null, test_pattern: '*.sh' });
    });

    it.each<[string, Record<string, unknown>, string]>([
      ['a profile named default', { profiles: [{ name: 'default', test_pattern: '*' }] }, 'profiles.0.name'],
      ['two profiles of one name', { profiles: [{ name: 'a', test_pattern: '*' }, { name: 'a', test_pattern: '*' }] }, 'profiles'],
      ['a profile without a pattern', { profiles: [{ name: 'a' }] }, 'profiles.0.test_pattern'],
      ['an empty plan', { plan: [] }, 'plan'],
      ['a bad env name', { profiles: [{ name: 'a', test_pattern: '*', env: { 'A-B': 'x' } }] }, 'profiles.0.env.A-B'],
    ])('400 for %s', async (_name, extra, field) => {
      const res = await admin('POST', `/api/v1/repos/${repo.id}/suites`, { branch: 'bad-plans', test_pattern: '*', ...extra });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ error: 'invalid request', field });
    });
  });

  it('never shows the SSH private key or any sealed value', async () => {
    const { rows } = await h.db.pool.query('SELECT ssh_private_key_sealed, key_sealed FROM repos');
    const all = bodies.join('\n');
    expect(all).not.toContain('PRIVATE KEY');
    for (const row of rows) {
      const privateKey = unseal(h.config.secretKey, row.ssh_private_key_sealed);
      const base64Body = privateKey.split('\n').slice(1, 3).join('');
      expect(all).not.toContain(base64Body);
      expect(all).not.toContain(row.ssh_private_key_sealed);
      expect(all).not.toContain(row.key_sealed);
    }
  });
});

describe('webhooks', () => {
  let hookId: number;

  it('creates one, trimming the URL and hiding the password', async () => {
    const res = await admin('POST', '/api/v1/orgs/acme/webhooks', {
      url: 'https://hooks.example.test/ci  \n',
      username: 'bot',
      password: 's3cret-pass',
      closure: 'function transform_payload(p) { return { status: "ok", headers: {}, body: p }; }',
    });
    expect(res.statusCode).toBe(201);
    const hook = res.json();
    hookId = hook.id;
    expect(hook).toEqual({
      id: expect.any(Number),
      org_id: expect.any(Number),
      url: 'https://hooks.example.test/ci',
      username: 'bot',
      has_password: true,
      signed: false,
      closure: expect.stringContaining('transform_payload'),
      active: true,
      created_at: expect.any(String),
    });
    const { rows } = await h.db.pool.query('SELECT password_sealed FROM webhooks WHERE id = $1', [hookId]);
    expect(unseal(h.config.secretKey, rows[0].password_sealed)).toBe('s3cret-pass');
  });

  it('lists, reads, patches and deletes', async () => {
    expect((await admin('GET', '/api/v1/orgs/acme/webhooks')).json()).toEqual([expect.objectContaining({ id: hookId })]);
    expect((await admin('GET', `/api/v1/webhooks/${hookId}`)).json()).toMatchObject({ id: hookId, has_password: true });

    const patched = await admin('PATCH', `/api/v1/webhooks/${hookId}`, { password: null, active: false, url: 'http://hooks.example.test/v2 ' });
    expect(patched.statusCode).toBe(200);
    expect(patched.json()).toMatchObject({ has_password: false, active: false, url: 'http://hooks.example.test/v2', username: 'bot' });

    const other = (await admin('POST', '/api/v1/orgs/acme/webhooks', { url: 'https://x.example.test/' })).json();
    expect(other).toMatchObject({ username: null, has_password: false, closure: null });
    expect((await admin('DELETE', `/api/v1/webhooks/${other.id}`)).statusCode).toBe(204);
    expect((await admin('GET', `/api/v1/webhooks/${other.id}`)).statusCode).toBe(404);
    expect((await admin('DELETE', `/api/v1/webhooks/${other.id}`)).statusCode).toBe(404);
  });

  it.each<[string, Record<string, unknown>, string, string]>([
    ['missing url', {}, 'url', 'required'],
    ['ftp url', { url: 'ftp://x.example.test/' }, 'url', 'expected an http or https URL'],
    ['not a url', { url: 'hooks' }, 'url', 'expected an http or https URL'],
    ['credentials in url', { url: 'https://u:p@x.example.test/' }, 'url', 'must not contain credentials; use username and password'],
    ['password as number', { url: 'https://x.example.test/', password: 5 }, 'password', 'expected string'],
    ['unknown field', { url: 'https://x.example.test/', secret: 'x' }, 'secret', 'unknown field'],
  ])('400 for %s', async (_name, body, field, message) => {
    const res = await admin('POST', '/api/v1/orgs/acme/webhooks', body);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: 'invalid request', field, message });
  });

  it('404 for unknown or malformed ids', async () => {
    for (const id of ['999999', 'abc', '0', '-1']) {
      expect((await admin('GET', `/api/v1/webhooks/${id}`)).statusCode).toBe(404);
      expect((await admin('GET', `/api/v1/webhooks/${id}/deliveries`)).statusCode).toBe(404);
    }
    expect((await admin('POST', '/api/v1/orgs/nobody/webhooks', { url: 'https://x.example.test/' })).statusCode).toBe(404);
  });

  it('lists deliveries newest first, with paging', async () => {
    await h.db.pool.query(
      `INSERT INTO deliveries (webhook_id, event, xid, attempt, status_code, outcome, error, duration_ms)
       SELECT $1, 'stop', 'xid-' || n, n, CASE WHEN n = 3 THEN 200 ELSE 503 END,
              CASE WHEN n = 3 THEN 'delivered' ELSE 'retrying' END, NULL, 10 * n
         FROM generate_series(1, 3) AS n`,
      [hookId],
    );
    const all = (await admin('GET', `/api/v1/webhooks/${hookId}/deliveries`)).json();
    expect(all.map((d: { attempt: number }) => d.attempt)).toEqual([3, 2, 1]);
    expect(all[0]).toEqual({
      id: expect.any(Number),
      xid: 'xid-3',
      event: 'stop',
      session: null,
      attempt: 3,
      status_code: 200,
      outcome: 'delivered',
      error: null,
      duration_ms: 30,
      created_at: expect.any(String),
    });
    const first = (await admin('GET', `/api/v1/webhooks/${hookId}/deliveries?limit=2`)).json();
    expect(first.map((d: { attempt: number }) => d.attempt)).toEqual([3, 2]);
    const next = (await admin('GET', `/api/v1/webhooks/${hookId}/deliveries?limit=2&before=${first[1].id}`)).json();
    expect(next.map((d: { attempt: number }) => d.attempt)).toEqual([1]);

    const bad = await admin('GET', `/api/v1/webhooks/${hookId}/deliveries?limit=0`);
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toMatchObject({ field: 'limit' });
  });

  it('never shows the password', () => {
    expect(bodies.join('\n')).not.toContain('s3cret-pass');
  });
});

describe('sessions', () => {
  it('404 for an unknown or malformed session', async () => {
    expect((await admin('GET', '/api/v1/sessions/999999')).statusCode).toBe(404);
    expect((await admin('GET', '/api/v1/sessions/x')).statusCode).toBe(404);
  });
  // A session that exists is covered in api-triggers.test.ts, where triggers make them.
});

describe('unknown routes', () => {
  it('404 JSON', async () => {
    const res = await admin('GET', '/api/v1/nothing');
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ error: 'not found', message: 'no such route' });
  });
});
