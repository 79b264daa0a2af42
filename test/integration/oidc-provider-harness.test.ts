/**
 * The OpenID Connect provider harness (test/support/oidcProvider.ts) against the client library
 * the product uses, openid-client 6: discovery, authorization code + PKCE through the harness's
 * sign-in, ID token and userinfo claims, refresh tokens, and what removing or revoking an
 * account does to them.
 */
import * as client from 'openid-client';
import { hasBrowser, openBrowser } from '../support/browser';
import { startOidcProvider, type OidcHarness } from '../support/oidcProvider';

const REDIRECT_URI = 'http://127.0.0.1:9/auth/callback'; // never fetched: signIn stops at it
const SCOPE = 'openid email profile groups offline_access';
const ALICE = { email: 'alice@example.com', email_verified: true, name: 'Alice Liddell', groups: ['devs', 'ops'] };

let idp: OidcHarness;
let basic: client.Configuration; // client_secret_basic, the default
let post: client.Configuration; // client_secret_post

beforeAll(async () => {
  idp = await startOidcProvider({
    clients: [
      { client_id: 'sluice', client_secret: 'basic-secret', redirect_uris: [REDIRECT_URI] },
      { client_id: 'sluice-post', client_secret: 'post-secret', redirect_uris: [REDIRECT_URI], token_endpoint_auth_method: 'client_secret_post' },
    ],
    accounts: { alice: ALICE },
  });
  // The issuer is http://127.0.0.1: openid-client refuses plain http unless told.
  const execute = [client.allowInsecureRequests];
  basic = await client.discovery(new URL(idp.issuer), 'sluice', undefined, client.ClientSecretBasic('basic-secret'), { execute });
  post = await client.discovery(new URL(idp.issuer), 'sluice-post', undefined, client.ClientSecretPost('post-secret'), { execute });
});

afterAll(() => idp?.stop());

/** An authorization URL as the product builds it (PKCE, state), with what to check the callback against. */
async function authorizationRequest(config = basic, extra: Record<string, string> = { prompt: 'consent' }) {
  const verifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: REDIRECT_URI,
    scope: SCOPE,
    state,
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    ...extra,
  });
  return { url, checks: { pkceCodeVerifier: verifier, expectedState: state, idTokenExpected: true } };
}

/**
 * The product's sign-in: authorization request, the harness as the browser, code exchange. With
 * prompt=consent by default: oidc-provider, per OIDC Core, drops offline_access without it.
 */
async function signInAs(accountId: string, config = basic, extra?: Record<string, string>) {
  const { url, checks } = await authorizationRequest(config, extra);
  const callback = await idp.signIn(url.href, accountId);
  return client.authorizationCodeGrant(config, new URL(callback), checks);
}

test('discovery announces the code flow with S256 PKCE and the groups scope', () => {
  const meta = basic.serverMetadata();
  expect(meta.issuer).toBe(idp.issuer);
  expect(meta.response_types_supported).toEqual(['code']);
  expect(meta.code_challenge_methods_supported).toEqual(['S256']);
  expect(meta.scopes_supported).toEqual(expect.arrayContaining(SCOPE.split(' ')));
  expect(meta.claims_supported).toEqual(expect.arrayContaining(['sub', 'email', 'email_verified', 'name', 'groups']));
});

test('sign-in gives an ID token with sub, email and name, userinfo with groups, and a working refresh token', async () => {
  const tokens = await signInAs('alice');
  expect(tokens.claims()).toMatchObject({ iss: idp.issuer, aud: 'sluice', sub: 'alice', email: ALICE.email, email_verified: true, name: ALICE.name });
  expect(tokens.scope?.split(' ')).toEqual(expect.arrayContaining(SCOPE.split(' ')));
  expect(tokens.expires_in).toBeLessThanOrEqual(600);

  const userinfo = await client.fetchUserInfo(basic, tokens.access_token, 'alice');
  expect(userinfo).toMatchObject({ sub: 'alice', email: ALICE.email, name: ALICE.name, groups: ALICE.groups });

  expect(tokens.refresh_token).toEqual(expect.any(String));
  const refreshed = await client.refreshTokenGrant(basic, tokens.refresh_token!);
  expect(refreshed.access_token).not.toBe(tokens.access_token);
  expect(refreshed.claims()).toMatchObject({ sub: 'alice', email: ALICE.email });
  expect(await client.fetchUserInfo(basic, refreshed.access_token, 'alice')).toMatchObject({ groups: ALICE.groups });
});

test('without prompt=consent, offline_access is dropped but a refresh token is issued all the same', async () => {
  const tokens = await signInAs('alice', basic, {});
  expect(tokens.scope?.split(' ')).not.toContain('offline_access');
  expect(tokens.refresh_token).toEqual(expect.any(String));
  await expect(client.refreshTokenGrant(basic, tokens.refresh_token!)).resolves.toMatchObject({ access_token: expect.any(String) });
});

test('a client registered with client_secret_post signs in too', async () => {
  const tokens = await signInAs('alice', post);
  expect(tokens.claims()).toMatchObject({ aud: 'sluice-post', sub: 'alice' });
  await expect(client.refreshTokenGrant(post, tokens.refresh_token!)).resolves.toMatchObject({ access_token: expect.any(String) });
});

test('an authorization request without PKCE is refused', async () => {
  const url = client.buildAuthorizationUrl(basic, { redirect_uri: REDIRECT_URI, scope: SCOPE, state: 'no-pkce' });
  const callback = new URL(await idp.signIn(url.href, 'alice'));
  expect(callback.searchParams.get('error')).toBe('invalid_request');
  expect(callback.searchParams.get('error_description')).toMatch(/PKCE/);
  expect(callback.searchParams.get('code')).toBeNull();
});

test('an unknown account cannot sign in', async () => {
  const { url } = await authorizationRequest();
  await expect(idp.signIn(url.href, 'nobody')).rejects.toThrow(/400 .*unknown account: nobody/s);
});

test('after removeAccount, the account refresh token fails with invalid_grant and it cannot sign in', async () => {
  const carol = { email: 'carol@example.com', email_verified: true, name: 'Carol', groups: ['devs'] };
  await idp.putAccount('carol', carol);
  const tokens = await signInAs('carol');
  expect(tokens.claims()).toMatchObject({ sub: 'carol', email: carol.email });
  await expect(client.refreshTokenGrant(basic, tokens.refresh_token!)).resolves.toMatchObject({ access_token: expect.any(String) });

  expect(await idp.removeAccount('carol')).toBe(true);
  // The description is generic ("grant request is invalid"); the cause, "referenced account not
  // found", stays in the provider. That the same token refreshed just before is what shows it.
  await expect(client.refreshTokenGrant(basic, tokens.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
  await expect(signInAs('carol')).rejects.toThrow(/unknown account: carol/);
  expect(await idp.removeAccount('carol')).toBe(false);
});

test('after revokeAccount, its refresh and access tokens fail, another account keeps working, and it can sign in again', async () => {
  const bob = { email: 'bob@example.com', name: 'Bob', groups: [] };
  await idp.putAccount('bob', bob);
  const bobs = [await signInAs('bob'), await signInAs('bob', post)];
  const alices = await signInAs('alice');

  expect(await idp.revokeAccount('bob')).toBe(2);
  for (const [tokens, config] of [[bobs[0]!, basic], [bobs[1]!, post]] as const) {
    await expect(client.refreshTokenGrant(config, tokens.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
    await expect(client.fetchUserInfo(config, tokens.access_token, 'bob')).rejects.toThrow();
  }
  await expect(client.refreshTokenGrant(basic, alices.refresh_token!)).resolves.toMatchObject({ access_token: expect.any(String) });

  // Revoking is not removing: the account signs in again and gets a new grant.
  const again = await signInAs('bob');
  await expect(client.refreshTokenGrant(basic, again.refresh_token!)).resolves.toMatchObject({ access_token: expect.any(String) });
});

(hasBrowser ? test : test.skip)('a real browser signs in through the form', async () => {
  const { url, checks } = await authorizationRequest();
  const browser = await openBrowser();
  try {
    // Nothing listens at the redirect URI: answer it in the browser, as the product would.
    await browser.page.route(`${REDIRECT_URI}**`, (route) => route.fulfill({ status: 200, contentType: 'text/plain', body: 'signed in' }));
    await browser.page.goto(url.href, { timeout: 10_000 });
    await browser.page.locator('input[name="login"]').fill('alice', { timeout: 10_000 });
    await browser.page.locator('#sign-in').click({ timeout: 10_000 });
    await browser.page.waitForURL((u) => u.href.startsWith(REDIRECT_URI), { timeout: 10_000 });
    const tokens = await client.authorizationCodeGrant(basic, new URL(browser.page.url()), checks);
    expect(tokens.claims()).toMatchObject({ sub: 'alice', email: ALICE.email });
  } finally {
    await browser.close();
  }
});
