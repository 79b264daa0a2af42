/**
 * Signing in through an identity provider in a real browser (issue 25): a real OpenID provider
 * on loopback (oidc-provider, test/support/oidcProvider.ts), a person invited as maintainer
 * signs in with it, stops a running build (as themselves: `stopped_by` is their address), and
 * the organization's audit trail says so; a viewer sees the build without the buttons.
 */
import type { Page } from 'playwright-core';
import { describeWithBrowser, openBrowser, type Browser } from '../support/browser';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { startOidcProvider, type OidcHarness } from '../support/oidcProvider';
import { eventually, freePort } from '../support/sluice';
import { script, World } from '../support/world';

describeWithBrowser('web-sign-in.test.ts')('signing in with an identity provider', () => {
  let db: TestDatabase;
  let idp: OidcHarness;
  let w: World;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    // A database of its own: who signs in first becomes an installation administrator.
    db = await createTestDatabase('sluice_sign_in');
    const port = await freePort();
    idp = await startOidcProvider({
      clients: [{ client_id: 'sluice', client_secret: 'sluice-secret', redirect_uris: [`http://127.0.0.1:${port}/auth/corp/callback`] }],
      accounts: {
        ada: { email: 'ada@acme.example', email_verified: true, name: 'Ada Lovelace', groups: ['engineering'] },
        vic: { email: 'vic@acme.example', email_verified: true, name: 'Vic Viewer', groups: [] },
      },
    });
    w = await World.start({
      port,
      databaseUrl: db.url,
      signInProviders: [{ kind: 'oidc', id: 'corp', name: 'Corp SSO', issuer: idp.issuer, clientId: 'sluice', clientSecret: 'sluice-secret', groupsClaim: 'groups', scopes: ['openid', 'email', 'profile', 'groups', 'offline_access'] }],
    });
    // Someone administers the installation already: Ada comes in as what she is invited as.
    await db.pool.query(`INSERT INTO users (name, email, installation_admin) VALUES ('Root', 'root@acme.example', true)`);
    await w.sluice.admin('POST', `/api/v1/orgs/${w.org.id}/invitations`, { email: 'ada@acme.example', role: 'maintainer' });
    await w.sluice.admin('POST', `/api/v1/orgs/${w.org.id}/invitations`, { email: 'vic@acme.example', role: 'viewer' });
    browser = await openBrowser();
    page = browser.page;
  });
  afterAll(async () => {
    await browser?.close();
    await w?.stop();
    await idp?.stop();
    await db?.drop();
  });

  const status = async (session: number) => (await db.pool.query<{ status: string }>('SELECT status FROM sessions WHERE id = $1', [session])).rows[0]?.status;

  async function signInAs(account: string, to: string): Promise<void> {
    await page.goto(to);
    await page.waitForURL(/\/sign-in/);
    await browser.screenshots('sign-in-providers');
    await page.getByRole('link', { name: 'Sign in with Corp SSO' }).click();
    await page.waitForURL((url) => url.href.startsWith(idp.issuer));
    await page.locator('input[name=login]').fill(account);
    await page.locator('#sign-in').click();
    await page.waitForURL(to);
  }

  it('signs a maintainer in, who stops a running build as themselves, recorded in the audit trail', async () => {
    const repo = await w.makeRepo({ 'slow_test.sh': script('exec sleep 300') }, { suite: { branch: 'master', test_pattern: '*_test.sh' } });
    const build = await w.build(repo);
    await eventually('the build to run', async () => (await status(build.session)) === 'running');

    await signInAs('ada', `${w.sluice.url}/builds/${build.session}`);
    await expect(page.locator('header').textContent()).resolves.toContain('Signed in as Ada Lovelace');
    await page.getByRole('button', { name: 'Stop' }).click();
    await page.locator('h1 [data-status]', { hasText: 'stopped' }).waitFor();
    expect((await w.eventsOf(build.session)).at(-1)).toMatchObject({ status: 'stopped', stopped_by: 'ada@acme.example' });

    // Her organization's Members page shows her role; she may not change anyone's (no forms).
    await page.goto(`${w.sluice.url}/orgs/${w.org.name}/members`);
    await expect(page.locator('tr[data-member="ada@acme.example"]').textContent()).resolves.toContain('maintainer');
    await expect(page.getByRole('button', { name: 'Invite' }).count()).resolves.toBe(0);
    await browser.screenshots('members-maintainer');
    // The audit trail is an admin's: refused with the reason.
    const audit = await page.goto(`${w.sluice.url}/orgs/${w.org.name}/audit`);
    expect(audit!.status()).toBe(403);
    await expect(page.getByRole('alert').textContent()).resolves.toContain(`this needs the admin role in organization ${w.org.name}; yours is maintainer`);
    const entries = await w.sluice.admin<{ action: string; actor: string; target: string }[]>('GET', `/api/v1/orgs/${w.org.id}/audit`);
    expect(entries.find((e) => e.action === 'session.stop')).toMatchObject({ actor: 'Ada Lovelace <ada@acme.example>', target: `/builds/${build.session}/stop` });
    await page.getByRole('button', { name: 'Sign out', exact: true }).click();
    await page.waitForURL(/\/sign-in/);
  });

  it('shows a viewer a build without Stop or Rebuild', async () => {
    const repo = await w.makeRepo({ 'ok_test.sh': script('true') }, { suite: { branch: 'master', test_pattern: '*_test.sh' } });
    const build = await w.build(repo);
    await eventually('the build to end', async () => (await status(build.session)) === 'passed');
    await signInAs('vic', `${w.sluice.url}/builds/${build.session}`);
    await page.locator('h1 [data-status]', { hasText: 'passed' }).waitFor();
    await expect(page.getByRole('button', { name: 'Rebuild' }).count()).resolves.toBe(0);
    await expect(page.getByRole('button', { name: 'Stop' }).count()).resolves.toBe(0);
    await browser.screenshots('build-viewer');
  });
});
