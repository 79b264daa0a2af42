// Signing in with GitHub (issue 25), which is OAuth 2 without OpenID Connect: against a local
// server that holds every request to GitHub's documented shapes (test/support/fakeGitHub.ts;
// the real GitHub is not reachable here). A team named in a membership rule makes a member;
// someone with no verified address is known by GitHub's private one and refused, saying so;
// a session ends once the person revokes Sluice's access at GitHub.
import { startApiHarness, seedRepo, type ApiHarness } from '../support/apiApp';
import { startFakeGitHub, type FakeGitHub } from '../support/fakeGitHub';
import { Jar, webForms } from '../support/webForms';

const BASE = 'https://ci.example.test';
let gh: FakeGitHub;
let h: ApiHarness;
let forms: ReturnType<typeof webForms>;

beforeAll(async () => {
  gh = await startFakeGitHub({
    clientId: 'Iv1.sluice',
    clientSecret: 'gh-secret',
    users: [
      { id: 583231, login: 'octocat', name: 'The Octocat', emails: [{ email: 'octo@acme.example', primary: true, verified: true }], orgs: ['acme'], teams: ['acme/ci'] },
      // In 150 teams, the one a rule names last (and in another case): found on the second page.
      {
        id: 77,
        login: 'busy',
        name: 'Busy Bee',
        emails: [{ email: 'busy@acme.example', primary: true, verified: true }],
        orgs: ['acme'],
        teams: [...Array.from({ length: 149 }, (_, i) => `acme/team-${i}`), 'ACME/CI'],
      },
      { id: 9, login: 'nomail', name: null, emails: [{ email: 'nomail@acme.example', primary: true, verified: false }], orgs: [], teams: [] },
    ],
  });
  h = await startApiHarness({
    config: { baseUrl: BASE, signInProviders: [{ kind: 'github', id: 'github', name: 'GitHub', clientId: 'Iv1.sluice', clientSecret: 'gh-secret', webUrl: gh.webUrl, apiUrl: gh.apiUrl }] },
  });
  forms = webForms(h);
  await seedRepo(h, { org: 'acme', repo: 'web' });
  // Someone administers the installation already: GitHub's people come in by the rules.
  await h.db.pool.query(`INSERT INTO users (name, email, installation_admin) VALUES ('Root', 'root@acme.example', true)`);
  expect((await h.admin('POST', '/api/v1/orgs/acme/membership-rules', { provider: 'github', claim: 'group', value: 'acme/ci', role: 'maintainer' })).statusCode).toBe(201);
});

afterAll(async () => {
  await h?.close();
  await gh?.close();
});

async function signIn(login: string): Promise<{ status: number; body: string; jar: Jar }> {
  const jar = new Jar();
  const start = await forms.get(jar, '/auth/github?next=/orgs');
  expect(start.statusCode).toBe(303);
  gh.signInAs(login);
  const authorized = await fetch(start.headers.location!, { redirect: 'manual' });
  expect(authorized.status).toBe(302);
  const back = new URL(authorized.headers.get('location')!);
  expect(back.origin + back.pathname).toBe(`${BASE}/auth/github/callback`);
  const done = await forms.get(jar, back.pathname + back.search);
  return { status: done.statusCode, body: done.body, jar };
}

it('signs in a member of a team a rule names, as GitHub documents the flow', async () => {
  const { status, jar } = await signIn('octocat');
  expect(status).toBe(303);
  const orgs = await forms.get(jar, '/orgs');
  expect(orgs.body).toContain('Signed in as <strong>The Octocat</strong>');
  const members = (await h.admin('GET', '/api/v1/orgs/acme/members')).json();
  expect(members).toEqual([expect.objectContaining({ name: 'The Octocat', email: 'octo@acme.example', role: 'maintainer', source: 'rule' })]);
  const { rows } = await h.db.pool.query('SELECT provider, subject FROM user_identities');
  expect(rows).toEqual([{ provider: 'github', subject: '583231' }]);
  expect(gh.problems).toEqual([]);
});

it('reads every page of a person’s teams, and matches names whatever their case', async () => {
  const { status } = await signIn('busy');
  expect(status).toBe(303);
  const members = (await h.admin('GET', '/api/v1/orgs/acme/members')).json() as { email: string; role: string }[];
  expect(members.find((m) => m.email === 'busy@acme.example')).toMatchObject({ role: 'maintainer' });
  expect(gh.problems).toEqual([]);
});

it('refuses someone with no verified address and no membership, naming the address to invite', async () => {
  const { status, body } = await signIn('nomail');
  expect(status).toBe(403);
  expect(body).toContain('9+nomail@users.noreply.github.com is not a member of any organization here');
  expect(gh.problems).toEqual([]);
});

it('ends the session at its refresh once the person revoked Sluice at GitHub', async () => {
  const { jar } = await signIn('octocat');
  await h.db.pool.query(`UPDATE web_sessions SET refresh_at = now() - interval '1 second'`);
  expect((await forms.get(jar, '/orgs')).statusCode).toBe(200);
  gh.revoke('octocat');
  await h.db.pool.query(`UPDATE web_sessions SET refresh_at = now() - interval '1 second'`);
  const after = await forms.get(jar, '/orgs');
  expect(after.statusCode).toBe(303);
  expect(after.headers.location).toBe('/sign-in?next=%2Forgs');
  expect(gh.problems).toEqual([]);
});
