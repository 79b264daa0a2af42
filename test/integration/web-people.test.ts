// The people pages (issue 25) as a browser without JavaScript uses them: an organization admin
// invites, changes roles, removes and adds a membership rule on the Members page; a person
// makes a token on the API tokens page (shown once, working at once) and revokes it; the Audit
// page lists what they did; a viewer sees the members without the forms.
import { startApiHarness, seedRepo, type ApiHarness } from '../support/apiApp';
import { addPerson, type Person } from '../support/people';
import { Jar, webForms } from '../support/webForms';

let h: ApiHarness;
let forms: ReturnType<typeof webForms>;
let admin: Person;
let viewer: Person;

beforeAll(async () => {
  h = await startApiHarness({ config: { signInProviders: [{ kind: 'github', id: 'github', name: 'GitHub', clientId: 'x', clientSecret: 'y', webUrl: 'https://github.com', apiUrl: 'https://api.github.com' }] } });
  const acme = await seedRepo(h, { org: 'acme', repo: 'web' });
  admin = await addPerson(h.db.pool, h.config, { name: 'Ann Admin', email: 'ann@acme.example', roles: { [acme.orgId]: 'admin' } });
  viewer = await addPerson(h.db.pool, h.config, { name: 'Vic Viewer', email: 'vic@acme.example', roles: { [acme.orgId]: 'viewer' } });
  forms = webForms(h);
});

afterAll(async () => {
  await h?.close();
});

it('lets an organization admin invite, change roles, remove and add a membership rule', async () => {
  const jar = new Jar(admin.cookie);
  const members = '/orgs/acme/members';
  const page = await forms.get(jar, members);
  expect(page.statusCode).toBe(200);
  expect(page.body).toContain('data-member="vic@acme.example"');

  expect((await forms.post(jar, members, members, { email: 'new@acme.example', role: 'maintainer' })).headers.location).toBe(members);
  expect((await forms.get(jar, members)).body).toContain('data-invitation="new@acme.example"');
  // A bad address is shown on the form, with what was typed.
  const bad = await forms.post(jar, members, members, { email: 'nope', role: 'viewer' });
  expect(bad.statusCode).toBe(400);
  expect(bad.body).toContain('email:');
  expect(bad.body).toContain('value="nope"');

  expect((await forms.post(jar, members, `${members}/${viewer.user.id}`, { role: 'maintainer' })).statusCode).toBe(303);
  expect((await h.admin('GET', '/api/v1/orgs/acme/members')).json().find((m: { email: string }) => m.email === 'vic@acme.example').role).toBe('maintainer');

  expect((await forms.post(jar, members, '/orgs/acme/membership-rules', { provider: 'github', claim: 'group', value: 'acme/ci', role: 'viewer' })).statusCode).toBe(303);
  expect((await forms.get(jar, members)).body).toContain('data-rule="acme/ci"');

  expect((await forms.post(jar, members, `${members}/${viewer.user.id}/remove`)).statusCode).toBe(303);
  expect((await forms.get(jar, members)).body).not.toContain('data-member="vic@acme.example"');

  const audit = await forms.get(jar, '/orgs/acme/audit');
  expect(audit.statusCode).toBe(200);
  for (const action of ['invitation.create', 'member.set', 'membership-rule.create', 'member.remove']) expect(audit.body).toContain(`data-audit="${action}"`);
  expect(audit.body).toContain('Ann Admin &lt;ann@acme.example&gt;');
});

it('shows what a provider says of a person as text, never as markup', async () => {
  const orgId = (await h.admin('GET', '/api/v1/orgs/acme')).json().id;
  await addPerson(h.db.pool, h.config, { name: '<b>Eve</b>', email: '"><button formaction="/orgs/acme/delete">x</button>@evil.example', roles: { [orgId]: 'viewer' } });
  const page = await forms.get(new Jar(admin.cookie), '/orgs/acme/members');
  expect(page.body).not.toContain('<b>Eve</b>');
  expect(page.body).not.toContain('<button formaction');
  expect(page.body).toContain('&lt;b&gt;Eve&lt;/b&gt;');
});

it('shows a viewer the members without the forms, and refuses their posts with the reason', async () => {
  const again = await addPerson(h.db.pool, h.config, { name: 'Val', email: 'val@acme.example', roles: { [(await h.admin('GET', '/api/v1/orgs/acme')).json().id]: 'viewer' } });
  const jar = new Jar(again.cookie);
  const page = await forms.get(jar, '/orgs/acme/members');
  expect(page.statusCode).toBe(200);
  expect(page.body).toContain('data-member="ann@acme.example"');
  expect(page.body).not.toContain('action="/orgs/acme/members"');
  // Something that is not there is a page saying so, for anyone signed in.
  const missing = await forms.get(jar, '/builds/999999');
  expect(missing.statusCode).toBe(404);
  expect(missing.body).toContain('There is no build #999999.');
  // Nor the admin's controls on the organizations page.
  const orgs = await forms.get(jar, '/orgs');
  expect(orgs.body).toContain('data-org="acme"');
  for (const control of ['New organization', 'Delete organization acme', 'New repository in acme', 'href="/orgs/acme/audit"']) expect(orgs.body).not.toContain(control);
  expect((await forms.get(new Jar(admin.cookie), '/orgs')).body).toContain('Delete organization acme');
  const refused = await forms.post(jar, '/orgs/acme/members', '/orgs/acme/members', { email: 'x@acme.example', role: 'admin' });
  expect(refused.statusCode).toBe(403);
  expect(refused.body).toContain('this needs the admin role in organization acme; yours is viewer');
});

it('shows each role the repository forms it may use', async () => {
  const acme = (await h.admin('GET', '/api/v1/orgs/acme')).json().id;
  const repo = (await h.admin('GET', '/api/v1/orgs/acme/repos')).json()[0].id;
  const maintainer = await addPerson(h.db.pool, h.config, { name: 'Max', email: 'max@acme.example', roles: { [acme]: 'maintainer' } });
  const setup = await forms.get(new Jar(maintainer.cookie), `/repos/${repo}`);
  expect(setup.statusCode).toBe(200);
  expect(setup.body).toContain('aria-label="New suite"');
  for (const adminOnly of ['aria-label="Settings"', 'aria-label="Set a secret"', 'aria-label="New trigger key"', 'aria-label="Commit statuses"']) expect(setup.body).not.toContain(adminOnly);
  expect((await forms.get(new Jar(admin.cookie), `/repos/${repo}`)).body).toContain('aria-label="Set a secret"');
  const watcher = await addPerson(h.db.pool, h.config, { name: 'Wes', email: 'wes@acme.example', roles: { [acme]: 'viewer' } });
  const branches = await forms.get(new Jar(watcher.cookie), `/repos/${repo}/branches`);
  expect(branches.statusCode).toBe(200);
  expect(branches.body).toContain('data-branch="master"');
  expect(branches.body).not.toContain('Turn off');
  expect((await forms.get(new Jar(maintainer.cookie), `/repos/${repo}/branches`)).body).toContain('Turn off');
});

it('makes a token shown once that works at once, lists it with its last use, and revokes it', async () => {
  const jar = new Jar(admin.cookie);
  const made = await forms.post(jar, '/tokens', '/tokens', { name: 'ci script', org: 'acme', expires_in_days: '7', read_only: 'on' });
  expect(made.statusCode).toBe(200);
  const token = /<textarea id="api-token"[^>]*>(sluice_pt_[A-Za-z0-9_-]{43})<\/textarea>/.exec(made.body)?.[1];
  expect(token).toBeDefined();
  const me = await h.request({ method: 'GET', url: '/api/v1/me', headers: { authorization: `Bearer ${token}` } });
  expect(me.json()).toMatchObject({ name: 'Ann Admin', token: { read_only: true } });
  const list = await forms.get(jar, '/tokens');
  expect(list.body).not.toContain(token);
  expect(list.body).toContain('read-only, acme only');
  const id = /action="\/tokens\/(\d+)\/revoke"/.exec(list.body)![1];
  expect((await forms.post(jar, '/tokens', `/tokens/${id}/revoke`)).statusCode).toBe(303);
  expect((await h.request({ method: 'GET', url: '/api/v1/me', headers: { authorization: `Bearer ${token}` } })).statusCode).toBe(401);
  expect((await forms.get(jar, '/tokens')).body).toContain('revoked');
});
