// People through the JSON API (issue 25): personal tokens (shown once, stored hashed, scoped,
// expiring, revoked, with their last use), members and invitations, the audit trail (who,
// when, from where, what; secrets by name only) and `stopped_by` as the person who stopped.
import { createHash } from 'node:crypto';
import { startApiHarness, seedRepo, type ApiHarness } from '../support/apiApp';
import { addPerson, type Person } from '../support/people';

let h: ApiHarness;
let acme: Awaited<ReturnType<typeof seedRepo>>;
let umbrella: Awaited<ReturnType<typeof seedRepo>>;
let dev: Person;
const stops: { session: number; by: string }[] = [];

beforeAll(async () => {
  h = await startApiHarness({
    stop: async (target, by) => {
      stops.push({ session: target.sessionId, by });
      return true;
    },
  });
  acme = await seedRepo(h, { org: 'acme', repo: 'web' });
  umbrella = await seedRepo(h, { org: 'umbrella', repo: 'api' });
  dev = await addPerson(h.db.pool, h.config, { name: 'Dana Dev', email: 'dana@acme.example', roles: { [acme.orgId]: 'admin', [umbrella.orgId]: 'viewer' } });
});

afterAll(async () => {
  await h?.close();
});

const as = (bearer: string, method: string, url: string, payload?: unknown) => h.request({ method, url, headers: { authorization: bearer }, payload });

describe('personal API tokens', () => {
  it('are shown once, kept only as a hash, and act as their owner', async () => {
    const made = await as(dev.bearer, 'POST', '/api/v1/tokens', { name: 'laptop' });
    expect(made.statusCode).toBe(201);
    const { token, ...shown } = made.json();
    expect(token).toMatch(/^sluice_pt_[A-Za-z0-9_-]{43}$/);
    expect(shown).toMatchObject({ name: 'laptop', read_only: false, org: null, last_used_at: null, revoked_at: null });
    // 90 days unless told.
    expect(new Date(shown.expires_at).getTime() - Date.now()).toBeGreaterThan(89 * 86_400_000);
    const { rows } = await h.db.pool.query<{ token_hash: Buffer }>('SELECT token_hash FROM api_tokens WHERE name = $1', ['laptop']);
    expect(rows[0]!.token_hash).toEqual(createHash('sha256').update(token).digest());
    expect(JSON.stringify(await h.db.pool.query('SELECT * FROM api_tokens'))).not.toContain(token);

    const me = await as(`Bearer ${token}`, 'GET', '/api/v1/me');
    expect(me.json()).toMatchObject({ kind: 'user', name: 'Dana Dev', email: 'dana@acme.example', roles: expect.arrayContaining([{ org: acme.orgId, role: 'admin' }]) });
    const listed = (await as(dev.bearer, 'GET', '/api/v1/tokens')).json() as { name: string; last_used_at: string | null }[];
    expect(listed.find((t) => t.name === 'laptop')!.last_used_at).not.toBeNull();
    expect(JSON.stringify(listed)).not.toContain(token);
    // Names are one's own: the same twice is a conflict.
    expect((await as(dev.bearer, 'POST', '/api/v1/tokens', { name: 'laptop' })).json()).toMatchObject({ error: 'conflict', field: 'name' });
  });

  it('do no more than their scope: read-only, one organization', async () => {
    const ro = (await as(dev.bearer, 'POST', '/api/v1/tokens', { name: 'dashboard', read_only: true })).json().token as string;
    expect((await as(`Bearer ${ro}`, 'GET', `/api/v1/repos/${acme.repo.id}/secrets`)).statusCode).toBe(200);
    const write = await as(`Bearer ${ro}`, 'PUT', `/api/v1/repos/${acme.repo.id}/secrets/NPM_TOKEN`, { value: 'x' });
    expect(write.statusCode).toBe(403);
    expect(write.json()).toEqual({ error: 'forbidden', message: 'this token is read-only' });
    // Making a token is a write: not with a read-only one.
    expect((await as(`Bearer ${ro}`, 'POST', '/api/v1/tokens', { name: 'child' })).statusCode).toBe(403);

    const scoped = (await as(dev.bearer, 'POST', '/api/v1/tokens', { name: 'umbrella-only', org: 'umbrella' })).json();
    expect(scoped.org).toEqual({ id: umbrella.orgId, name: 'umbrella' });
    const other = await as(`Bearer ${scoped.token}`, 'GET', `/api/v1/repos/${acme.repo.id}`);
    expect(other.statusCode).toBe(403);
    expect(other.json().message).toBe('this token is limited to another organization');
    expect((await as(`Bearer ${scoped.token}`, 'GET', '/api/v1/orgs')).json().map((o: { name: string }) => o.name)).toEqual(['umbrella']);
    // It may not make tokens (they could be wider), nor revoke its owner's.
    expect((await as(`Bearer ${scoped.token}`, 'POST', '/api/v1/tokens', { name: 'child' })).json()).toMatchObject({ error: 'forbidden', message: 'a token limited to one organization cannot make or revoke tokens' });
    expect((await as(`Bearer ${scoped.token}`, 'DELETE', `/api/v1/tokens/${scoped.id}`)).statusCode).toBe(403);
    // Its owner is a viewer of umbrella: the token is no more than that.
    expect((await as(`Bearer ${scoped.token}`, 'GET', `/api/v1/repos/${umbrella.repo.id}/secrets`)).statusCode).toBe(403);
    // Scoped to an organization its owner is not in: refused when made.
    const stranger = await addPerson(h.db.pool, h.config, { name: 'Sam', email: 'sam@umbrella.example', roles: { [umbrella.orgId]: 'viewer' } });
    expect((await as(stranger.bearer, 'POST', '/api/v1/tokens', { name: 'x', org: 'acme' })).json()).toMatchObject({ field: 'org' });
  });

  it('make tokens that live no longer than the token that made them', async () => {
    const short = (await as(dev.bearer, 'POST', '/api/v1/tokens', { name: 'two days', expires_in_days: 2 })).json();
    const child = (await as(`Bearer ${short.token}`, 'POST', '/api/v1/tokens', { name: 'child of two days', expires_in_days: 300 })).json();
    expect(child.expires_at).toBe(short.expires_at);
  });

  it('stop working once revoked or expired, or once their owner is removed', async () => {
    const made = (await as(dev.bearer, 'POST', '/api/v1/tokens', { name: 'short', expires_in_days: 1 })).json();
    const bearer = `Bearer ${made.token}`;
    expect((await as(bearer, 'GET', '/api/v1/me')).statusCode).toBe(200);
    await h.db.pool.query(`UPDATE api_tokens SET expires_at = now() - interval '1 second' WHERE id = $1`, [made.id]);
    const expired = await as(bearer, 'GET', '/api/v1/me');
    expect(expired.statusCode).toBe(401);
    expect(expired.json().message).toBe('that token is not valid (unknown, revoked or expired)');

    const again = (await as(dev.bearer, 'POST', '/api/v1/tokens', { name: 'revoked' })).json();
    expect((await as(dev.bearer, 'DELETE', `/api/v1/tokens/${again.id}`)).statusCode).toBe(204);
    expect((await as(`Bearer ${again.token}`, 'GET', '/api/v1/me')).statusCode).toBe(401);
    // Someone else's token is not yours to revoke.
    const other = await addPerson(h.db.pool, h.config, { name: 'Olga', email: 'olga@acme.example', roles: { [acme.orgId]: 'viewer' } });
    expect((await as(dev.bearer, 'DELETE', `/api/v1/tokens/${(await as(other.bearer, 'GET', '/api/v1/tokens')).json()[0].id}`)).statusCode).toBe(404);

    expect((await h.admin('DELETE', `/api/v1/users/${other.user.id}`)).statusCode).toBe(204);
    // The last installation administrator stays: without one, the next stranger to sign in would become one.
    const root = await addPerson(h.db.pool, h.config, { name: 'Root', email: 'root@example.com', installationAdmin: true });
    expect((await h.admin('DELETE', `/api/v1/users/${root.user.id}`)).json()).toMatchObject({ error: 'conflict', field: 'user' });
    expect((await h.admin('PATCH', `/api/v1/users/${root.user.id}`, { installation_admin: false })).statusCode).toBe(409);
    expect((await h.admin('PATCH', `/api/v1/users/${dev.user.id}`, { installation_admin: true })).json()).toMatchObject({ installation_admin: true });
    expect((await h.admin('PATCH', `/api/v1/users/${root.user.id}`, { installation_admin: false })).json()).toMatchObject({ installation_admin: false });
    expect((await h.admin('PATCH', `/api/v1/users/${dev.user.id}`, { installation_admin: false })).statusCode).toBe(409);
    // As it was: Root administers the installation, Dana her organizations.
    await h.admin('PATCH', `/api/v1/users/${root.user.id}`, { installation_admin: true });
    expect((await h.admin('PATCH', `/api/v1/users/${dev.user.id}`, { installation_admin: false })).statusCode).toBe(200);
    expect((await as(other.bearer, 'GET', '/api/v1/me')).statusCode).toBe(401);
    // The admin token is nobody: it owns no tokens.
    expect((await h.admin('POST', '/api/v1/tokens', { name: 'x' })).statusCode).toBe(403);
  });
});

describe('members', () => {
  it('are invited by address (at once when known), given roles and removed, by an organization admin only', async () => {
    const viewer = await addPerson(h.db.pool, h.config, { name: 'Vic', email: 'vic@acme.example', roles: { [acme.orgId]: 'viewer' } });
    // Someone whose provider never verified their address: an invitation of it is not theirs.
    const claimed = await addPerson(h.db.pool, h.config, { name: 'Claims', email: 'cto@acme.example', emailVerified: false });
    expect((await as(dev.bearer, 'POST', '/api/v1/orgs/acme/invitations', { email: 'cto@acme.example', role: 'admin' })).json()).toMatchObject({ invitation: { email: 'cto@acme.example' } });
    expect((await as(claimed.bearer, 'GET', `/api/v1/repos/${acme.repo.id}`)).statusCode).toBe(404);
    // Known already: a member at once.
    const known = await as(dev.bearer, 'POST', '/api/v1/orgs/acme/invitations', { email: 'VIC@acme.example', role: 'maintainer' });
    expect(known.json()).toMatchObject({ member: { name: 'Vic', role: 'maintainer' } });
    const unknown = await as(dev.bearer, 'POST', '/api/v1/orgs/acme/invitations', { email: 'new@acme.example', role: 'viewer' });
    expect(unknown.json()).toMatchObject({ invitation: { email: 'new@acme.example', role: 'viewer', invited_by: 'Dana Dev <dana@acme.example>' } });
    expect((await as(dev.bearer, 'POST', '/api/v1/orgs/acme/invitations', { email: 'not an address', role: 'viewer' })).json()).toMatchObject({ field: 'email' });
    expect((await as(dev.bearer, 'PUT', `/api/v1/orgs/acme/members/${viewer.user.id}`, { role: 'owner' })).json()).toMatchObject({ field: 'role' });

    // A maintainer may not manage members.
    const refused = await as(viewer.bearer, 'PUT', `/api/v1/orgs/acme/members/${viewer.user.id}`, { role: 'admin' });
    expect(refused.statusCode).toBe(403);
    expect(refused.json().message).toBe('this needs the admin role in organization acme; yours is maintainer');

    expect((await as(dev.bearer, 'PUT', `/api/v1/orgs/acme/members/${viewer.user.id}`, { role: 'viewer' })).json()).toMatchObject({ role: 'viewer' });
    expect((await as(dev.bearer, 'DELETE', `/api/v1/orgs/acme/members/${viewer.user.id}`)).statusCode).toBe(204);
    // No longer a member: told no more about acme than about an organization that does not exist.
    expect((await as(viewer.bearer, 'GET', `/api/v1/repos/${acme.repo.id}`)).json()).toEqual({ error: 'not found', message: 'no such repository' });
    expect((await as(dev.bearer, 'GET', '/api/v1/orgs/acme/members')).json().map((m: { email: string }) => m.email)).toEqual(['dana@acme.example']);
    // A viewer sees the repository, not its trigger key (a maintainer's).
    const watcher = await addPerson(h.db.pool, h.config, { name: 'Wes', email: 'wes@acme.example', roles: { [acme.orgId]: 'viewer' } });
    expect((await as(watcher.bearer, 'GET', `/api/v1/repos/${acme.repo.id}`)).json()).toMatchObject({ name: 'web', key: null, webhook_url: null });
    expect((await as(watcher.bearer, 'GET', '/api/v1/orgs/acme/repos')).json()[0]).toMatchObject({ key: null, webhook_url: null });
    expect((await as(dev.bearer, 'GET', `/api/v1/repos/${acme.repo.id}`)).json().key).toBe(acme.repo.key);
  });
});

describe('the audit trail', () => {
  it('records who changed what, from where, with secrets by name only, and shows each admin their organizations’', async () => {
    expect((await as(dev.bearer, 'PUT', `/api/v1/repos/${acme.repo.id}/secrets/NPM_TOKEN`, { value: 'npm_s3cr3t_value' })).statusCode).toBe(201);
    const trigger = await h.request({ method: 'POST', url: new URL(acme.repo.webhook_url).pathname, payload: { branch: 'master', force: true } });
    expect(trigger.statusCode).toBe(200);
    const session = h.enqueued.at(-1)!.sessionId;
    // A person's token stops as that person, whatever the body says.
    expect((await as(dev.bearer, 'POST', `/api/v1/sessions/${session}/stop`, { stopped_by: 'someone-else' })).statusCode).toBe(202);
    expect(stops.at(-1)).toEqual({ session, by: 'dana@acme.example' });
    // The admin token must say who.
    expect((await h.admin('POST', `/api/v1/sessions/${session}/stop`)).json()).toMatchObject({ field: 'stopped_by' });
    // A delete stops builds under way as the person too, whatever the query says.
    const doomed = await seedRepo(h, { org: 'doomed' });
    await as(dev.bearer, 'PUT', `/api/v1/orgs/doomed/members/${dev.user.id}`, { role: 'admin' }).then((r) => expect(r.statusCode).toBe(404));
    await h.admin('PUT', `/api/v1/orgs/doomed/members/${dev.user.id}`, { role: 'admin' });
    expect((await h.request({ method: 'POST', url: new URL(doomed.repo.webhook_url).pathname, payload: { branch: 'master', force: true } })).statusCode).toBe(200);
    const doomedSession = h.enqueued.at(-1)!.sessionId;
    expect((await as(dev.bearer, 'DELETE', `/api/v1/repos/${doomed.repo.id}?stopped_by=mallory&force=true`)).statusCode).toBeLessThan(300);
    expect(stops.find((s) => s.session === doomedSession)).toEqual({ session: doomedSession, by: 'dana@acme.example' });
    expect((await h.admin('POST', `/api/v1/repos/${umbrella.repo.id}/suites`, { branch: 'dev', test_pattern: 'tests/*.sh' })).statusCode).toBe(201);

    const entries = (await as(dev.bearer, 'GET', '/api/v1/audit?limit=500')).json() as { actor: string; action: string; target: string; details: Record<string, unknown>; ip: string; org: { name: string } | null }[];
    const secret = entries.find((e) => e.action === 'secret.set')!;
    expect(secret).toMatchObject({ actor: 'Dana Dev <dana@acme.example>', target: `/api/v1/repos/${acme.repo.id}/secrets/NPM_TOKEN`, details: { value: '(set)' }, ip: '127.0.0.1', org: { name: 'acme' } });
    expect(JSON.stringify(entries)).not.toContain('npm_s3cr3t_value');
    expect(entries.find((e) => e.action === 'session.stop')).toMatchObject({ actor: 'Dana Dev <dana@acme.example>', target: `/api/v1/sessions/${session}/stop` });
    expect(entries.some((e) => e.action === 'member.remove')).toBe(true);
    // Dana administers acme (and doomed, gone), not umbrella: its entries are not hers to read.
    expect(entries.every((e) => e.org?.name === 'acme' || e.org?.name === 'doomed' || e.org?.name === null)).toBe(true);
    expect(entries.some((e) => e.org?.name === 'umbrella')).toBe(false);
    const all = (await h.admin('GET', '/api/v1/audit?limit=500')).json() as typeof entries;
    expect(all.find((e) => e.action === 'suite.create')).toMatchObject({ actor: 'admin token', org: { name: 'umbrella' } });
    expect(all.find((e) => e.action === 'user.remove')).toMatchObject({ actor: 'admin token', org: null });
    expect((await as(dev.bearer, 'GET', '/api/v1/orgs/umbrella/audit')).statusCode).toBe(403);
    // Reads and refusals are not changes.
    expect(all.some((e) => e.action === undefined || e.target === '/api/v1/me')).toBe(false);
  });
});

describe('reports', () => {
  it('open with a Bearer token that may see the build, and stay shut to one that may not', async () => {
    const trigger = await h.request({ method: 'POST', url: new URL(acme.repo.webhook_url).pathname, payload: { branch: 'master', force: true } });
    expect(trigger.statusCode).toBe(200);
    const session = h.enqueued.at(-1)!.sessionId;
    const viewer = await addPerson(h.db.pool, h.config, { name: 'Rita', email: 'rita@acme.example', roles: { [acme.orgId]: 'viewer' } });
    const outsider = await addPerson(h.db.pool, h.config, { name: 'Otto', email: 'otto@umbrella.example', roles: { [umbrella.orgId]: 'admin' } });
    const report = (bearer?: string) => h.request({ method: 'GET', url: `/1/reports/${session}`, headers: { accept: 'application/json', ...(bearer ? { authorization: bearer } : {}) } });
    expect((await report(viewer.bearer)).statusCode).toBe(200);
    expect((await report(`Bearer ${h.config.adminToken}`)).statusCode).toBe(200);
    // Not theirs, or nobody's: the same 404 as a session that does not exist.
    expect((await report(outsider.bearer)).statusCode).toBe(404);
    expect((await report()).statusCode).toBe(404);
  });
});
