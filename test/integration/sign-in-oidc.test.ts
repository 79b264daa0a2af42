// Signing in with OpenID Connect (issue 25), against a real provider on loopback (panva's
// certified oidc-provider, test/support/oidcProvider.ts): the first person becomes an
// installation administrator, a stranger is refused with the reason, an invited address and a
// provider group become members with their roles, a member removed mid-session is refused at
// the next request, and a session ends when the provider disowns the person at its refresh.
import type { Response } from '../support/apiApp';
import { Jar, webForms } from '../support/webForms';
import { startApiHarness, seedRepo, type ApiHarness } from '../support/apiApp';
import { startOidcProvider, type OidcHarness } from '../support/oidcProvider';

const BASE = 'https://ci.example.test';
const CALLBACK = `${BASE}/auth/corp/callback`;

let idp: OidcHarness;
let h: ApiHarness;
let session: number;
let get: ReturnType<typeof webForms>['get'];
let post: ReturnType<typeof webForms>['post'];

beforeAll(async () => {
  idp = await startOidcProvider({
    clients: [
      { client_id: 'sluice', client_secret: 'sluice-secret', redirect_uris: [CALLBACK] },
      { client_id: 'sluice-plain', client_secret: 'plain-secret', redirect_uris: [`${BASE}/auth/plain/callback`] },
    ],
    accounts: {
      alice: { email: 'alice@acme.example', email_verified: true, name: 'Alice Admin', groups: [] },
      bob: { email: 'bob@acme.example', email_verified: true, name: 'Bob Viewer', groups: [] },
      carol: { email: 'carol@acme.example', email_verified: true, name: 'Carol Maintainer', groups: ['ci-maintainers'] },
      mallory: { email: 'mallory@elsewhere.example', email_verified: true, name: 'Mallory', groups: [] },
      // Claims an invited address its provider never verified.
      claimer: { email: 'zed@acme.example', email_verified: false, name: 'Not Zed', groups: [] },
    },
  });
  h = await startApiHarness({
    config: {
      baseUrl: BASE,
      signInProviders: [
        { kind: 'oidc', id: 'corp', name: 'Corp SSO', issuer: idp.issuer, clientId: 'sluice', clientSecret: 'sluice-secret', groupsClaim: 'groups', scopes: ['openid', 'email', 'profile', 'groups', 'offline_access'] },
        // The same provider under another id, not asked for offline_access.
        { kind: 'oidc', id: 'plain', name: 'Plain SSO', issuer: idp.issuer, clientId: 'sluice-plain', clientSecret: 'plain-secret', groupsClaim: 'groups', scopes: ['openid', 'email', 'profile'] },
      ],
    },
  });
  const acme = await seedRepo(h, { org: 'acme', repo: 'web' });
  await h.request({ method: 'POST', url: new URL(acme.repo.webhook_url).pathname, payload: { branch: 'master', force: true } });
  session = h.enqueued.at(-1)!.sessionId;
  ({ get, post } = webForms(h));
});

afterAll(async () => {
  await h?.close();
  await idp?.stop();
});

/** Signs `account` in through the provider, as a browser would: the answer, and the browser. */
async function signIn(account: string, next = '/orgs', provider = 'corp'): Promise<{ res: Response; jar: Jar }> {
  const jar = new Jar();
  const start = await get(jar, `/auth/${provider}?next=${encodeURIComponent(next)}`);
  expect(start.statusCode).toBe(303);
  expect(start.headers.location).toMatch(new RegExp(`^${idp.issuer}/`));
  const answer = new URL(await idp.signIn(start.headers.location!, account));
  expect(answer.origin + answer.pathname).toBe(`${BASE}/auth/${provider}/callback`);
  return { res: await get(jar, answer.pathname + answer.search), jar };
}

const signedInAs = (res: Response) => /Signed in as <strong>([^<]+)<\/strong>/.exec(res.body)?.[1];

it('makes the first person to sign in an installation administrator, and sends them where they were going', async () => {
  const { res, jar } = await signIn('alice', '/runners');
  expect(res.statusCode).toBe(303);
  expect(res.headers.location).toBe('/runners');
  const runners = await get(jar, '/runners');
  expect(runners.statusCode).toBe(200);
  expect(signedInAs(runners)).toBe('Alice Admin');
  const { rows } = await h.db.pool.query('SELECT name, email, installation_admin FROM users');
  expect(rows).toEqual([{ name: 'Alice Admin', email: 'alice@acme.example', installation_admin: true }]);
});

it('refuses someone nobody invited, saying which address to invite', async () => {
  const { res } = await signIn('mallory');
  expect(res.statusCode).toBe(403);
  expect(res.body).toContain('mallory@elsewhere.example is not a member of any organization here: ask an administrator to invite that address');
  expect(res.headers['set-cookie']?.some((c) => c.startsWith('sluice_session='))).toBeFalsy();
});

it('gives an invitation only to someone whose provider verified the address', async () => {
  expect((await h.admin('POST', '/api/v1/orgs/acme/invitations', { email: 'zed@acme.example', role: 'admin' })).statusCode).toBe(201);
  const { res } = await signIn('claimer');
  expect(res.statusCode).toBe(403);
  expect(res.body).toContain('zed@acme.example is not a member of any organization here');
  expect((await h.admin('GET', '/api/v1/orgs/acme/invitations')).json()).toEqual([expect.objectContaining({ email: 'zed@acme.example' })]);
  expect((await h.admin('DELETE', `/api/v1/orgs/acme/invitations/${(await h.admin('GET', '/api/v1/orgs/acme/invitations')).json()[0].id}`)).statusCode).toBe(204);
});

it('makes an invited address a member with its role, who may see builds but not stop them', async () => {
  const invited = await h.admin('POST', '/api/v1/orgs/acme/invitations', { email: 'Bob@acme.example', role: 'viewer' });
  expect(invited.statusCode).toBe(201);
  const { res, jar } = await signIn('bob', `/builds/${session}`);
  expect(res.headers.location).toBe(`/builds/${session}`);
  const build = await get(jar, `/builds/${session}`);
  expect(build.statusCode).toBe(200);
  expect(signedInAs(build)).toBe('Bob Viewer');
  // The stop button is there for nobody below maintainer to press: pressing it anyway is a 403 with the reason.
  const stop = await post(jar, `/builds/${session}`, `/builds/${session}/stop`);
  expect(stop.statusCode).toBe(403);
  expect(stop.body).toContain('this needs the maintainer role in organization acme; yours is viewer');
  // The invitation was taken.
  expect((await h.admin('GET', '/api/v1/orgs/acme/invitations')).json()).toEqual([]);
});

it('makes members from a provider group, and a member removed mid-session is refused at the next request', async () => {
  expect((await h.admin('POST', '/api/v1/orgs/acme/membership-rules', { provider: 'corp', claim: 'group', value: 'ci-maintainers', role: 'maintainer' })).statusCode).toBe(201);
  const { jar } = await signIn('carol');
  const members = (await h.admin('GET', '/api/v1/orgs/acme/members')).json() as { name: string; role: string; source: string; user: number }[];
  expect(members.map((m) => [m.name, m.role, m.source])).toEqual([
    ['Bob Viewer', 'viewer', 'invitation'],
    ['Carol Maintainer', 'maintainer', 'rule'],
  ]);
  expect((await get(jar, `/builds/${session}`)).statusCode).toBe(200);

  const carol = members.find((m) => m.name === 'Carol Maintainer')!;
  expect((await h.admin('DELETE', `/api/v1/orgs/acme/members/${carol.user}`)).statusCode).toBe(204);
  const after = await get(jar, `/builds/${session}`);
  // Outside the organization now: its builds are not there for her.
  expect(after.statusCode).toBe(404);
  expect(after.body).toContain(`There is no build #${session}.`);
  // Her group makes her one again at her next sign-in.
  const again = await signIn('carol', `/builds/${session}`);
  expect((await get(again.jar, `/builds/${session}`)).statusCode).toBe(200);
});

it('asks the provider again when the session’s time comes, and ends it once the provider no longer knows the person', async () => {
  const { jar } = await signIn('bob', '/');
  const due = async () => h.db.pool.query(`UPDATE web_sessions SET refresh_at = now() - interval '1 second' WHERE name = 'Bob Viewer'`);
  // Still the provider's: the session goes on, and is not asked again for a while (Bob signed in before, too).
  await due();
  expect((await get(jar, '/')).statusCode).toBe(200);
  const { rows } = await h.db.pool.query<{ later: boolean }>(`SELECT bool_or(refresh_at > now()) AS later FROM web_sessions WHERE name = 'Bob Viewer'`);
  expect(rows[0]!.later).toBe(true);

  expect(await idp.removeAccount('bob')).toBe(true);
  await due();
  const refused = await get(jar, '/');
  expect(refused.statusCode).toBe(303);
  expect(refused.headers.location).toBe('/sign-in?next=%2F');
});

it('lets a session with nothing to ask its provider with last its time, asking nobody', async () => {
  const { jar } = await signIn('alice', '/', 'plain');
  // This test provider issues a refresh token for every code grant; many do not without
  // offline_access: the session is left as theirs would be.
  await h.db.pool.query(`UPDATE web_sessions SET refresh_token = NULL, refresh_at = now() - interval '1 second' WHERE provider = 'plain'`);
  expect((await get(jar, '/')).statusCode).toBe(200);
  // Not asked again for the refresh period (15 minutes), not every minute.
  const { rows } = await h.db.pool.query<{ minutes: number }>(`SELECT (extract(epoch FROM refresh_at - now()) / 60)::float8 AS minutes FROM web_sessions WHERE provider = 'plain'`);
  expect(rows[0]!.minutes).toBeGreaterThan(10);
});

it('ends every session of a person an installation administrator removes', async () => {
  const { jar } = await signIn('carol', '/');
  expect((await get(jar, '/')).statusCode).toBe(200);
  const users = (await h.admin('GET', '/api/v1/users')).json() as { id: number; email: string }[];
  const carol = users.find((u) => u.email === 'carol@acme.example')!;
  expect((await h.admin('DELETE', `/api/v1/users/${carol.id}`)).statusCode).toBe(204);
  expect((await get(jar, '/')).statusCode).toBe(303);
});

it('signs a person out of every browser at once', async () => {
  const first = await signIn('alice', '/');
  const second = await signIn('alice', '/');
  expect((await get(second.jar, '/')).statusCode).toBe(200);
  const out = await post(first.jar, '/', '/sign-out-everywhere');
  expect(out.statusCode).toBe(303);
  expect((await get(second.jar, '/')).statusCode).toBe(303);
});

it('refuses an answer that does not belong to the browser that started the sign-in', async () => {
  const jar = new Jar();
  const start = await get(jar, '/auth/corp');
  const answer = new URL(await idp.signIn(start.headers.location!, 'alice'));
  // Another browser (no cookie of this sign-in) brings the answer back.
  const stranger = await h.request({ method: 'GET', url: answer.pathname + answer.search });
  expect(stranger.statusCode).toBe(400);
  expect(stranger.body).toContain('This sign-in has expired or was started in another browser');
  expect(await get(new Jar(), '/auth/nowhere')).toMatchObject({ statusCode: 404 });
});
