/**
 * The web pages in a real browser: Debian's chromium driven by playwright-core (installed by
 * .ci/run; the browser is never downloaded). Sign-in with the admin token, the builds list of
 * real builds with its filters, the cookie's flags, CSRF, sign-out; a build's page with Stop
 * and Rebuild; screenshots of each page at
 * a laptop's and a phone's size land in test/screenshots/ (not committed) for people to look at.
 */
import path from 'node:path';
import { rm, writeFile } from 'node:fs/promises';
import type { BrowserContext, Page } from 'playwright-core';
import { describeWithBrowser, openBrowser, signIn, type Browser } from '../support/browser';
import { eventually } from '../support/sluice';
import { script, World } from '../support/world';

const TEMPORAL_UI = 'http://127.0.0.1:8233';

describeWithBrowser('web.test.ts')('the web pages', () => {
  let w: World;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let screenshots: Browser['screenshots'];

  beforeAll(async () => {
    // The e2e Temporal server runs without its UI: the link to it is checked, not followed.
    w = await World.start({ temporalUiUrl: TEMPORAL_UI });
    browser = await openBrowser();
    ({ context, page, screenshots } = browser);
  });
  afterAll(async () => {
    await browser?.close();
    await w?.stop();
  });

  it('signs in with the admin token, lists real builds with filters, and signs out', async () => {
    const repo = await w.makeRepo({ 'ok_test.sh': script('true') }, { suite: { branch: 'master', test_pattern: '*_test.sh' } });
    const passed = await w.build(repo);
    expect((await w.eventsOf(passed.session)).at(-1)).toMatchObject({ status: 'passed' });
    const bad = await w.makeRepo({ 'bad_test.sh': script('exit 1') }, { suite: { branch: 'master', test_pattern: '*_test.sh' } });
    const failed = await w.build(bad);
    expect((await w.eventsOf(failed.session)).at(-1)).toMatchObject({ status: 'failed' });

    // Not signed in: the builds list sends you to sign in.
    await page.goto(`${w.sluice.url}/`);
    await page.waitForURL(/\/sign-in\?next=%2F$/);
    await screenshots('sign-in');

    await page.getByLabel('Your name').fill('Ada');
    await page.getByLabel('Admin token').fill('not-the-token-at-all');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect(page.getByRole('alert').textContent()).resolves.toContain('That is not the admin token.');

    await page.getByLabel('Admin token').fill(w.sluice.config.adminToken);
    await page.getByLabel('Admin token').press('Enter'); // the keyboard is enough
    await page.waitForURL(`${w.sluice.url}/`);
    await expect(page.getByRole('heading', { name: 'Builds' }).isVisible()).resolves.toBe(true);
    await expect(page.getByText('Signed in as').textContent()).resolves.toContain('Ada');
    const row = (session: number) => page.locator(`tr[data-session="${session}"]`);
    await expect(row(passed.session).locator('.status').textContent()).resolves.toBe('passed');
    await expect(row(failed.session).locator('.status').textContent()).resolves.toBe('failed');
    await expect(row(failed.session).textContent()).resolves.toContain(`${w.org.name}/${bad.name}`);
    await screenshots('builds');

    // The cookie: httpOnly, SameSite=Lax (coming back from an identity provider is a navigation
    // from its site; forms have CSRF tokens), Secure only over HTTPS (this is loopback HTTP).
    const cookie = (await context.cookies()).find((c) => c.name === 'sluice_session')!;
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Lax', secure: false });

    // Filters (the e2e database is shared with the other test files: this World's organization
    // first): by status, then by repository; the report link opens the build's report.
    await page.getByLabel('Organization').fill(w.org.name);
    await page.getByLabel('Status').selectOption('failed');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/status=failed/);
    await expect(page.locator('tr[data-session]').count()).resolves.toBe(1);
    await expect(row(failed.session).isVisible()).resolves.toBe(true);
    await page.getByLabel('Status').selectOption('');
    await page.getByLabel('Organization').fill('');
    await page.getByLabel('Repository').fill(`${w.org.name}/${repo.name}`);
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/repo=/);
    await expect(page.locator('tr[data-session]').count()).resolves.toBe(1);
    // The link opens the build's page, which links its report.
    await row(passed.session).getByRole('link', { name: `#${passed.session}` }).click();
    await page.waitForURL(`${w.sluice.url}/builds/${passed.session}`);
    await page.getByRole('link', { name: 'Report' }).click();
    await page.waitForURL(new RegExp(`/1/reports/${passed.session}\\?token=`));
    await page.goBack();
    await page.goBack();

    // A form post without its CSRF token is refused, even with the session cookie.
    const forged = await context.request.post(`${w.sluice.url}/sign-out`, { form: { next: '/' }, maxRedirects: 0 });
    expect(forged.status()).toBe(403);

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(/\/sign-in$/);
    await page.goto(`${w.sluice.url}/`);
    await page.waitForURL(/\/sign-in\?next=/);
  });

  it("shows a build's page live from queued to running to failed; Stop stops one as the signed-in user, Rebuild builds it again", async () => {
    // The test waits for the release file, then exits with the code written in it.
    const release = path.join(w.tmp, 'release-web');
    const repo = await w.makeRepo(
      { 'wait_test.sh': script(`for i in $(seq 1 1200); do [ -e ${release} ] && { echo "the release says $(cat ${release})"; exit "$(cat ${release})"; }; sleep 0.05; done\nexit 1`) },
      { suite: { branch: 'master', test_pattern: '*_test.sh' } },
    );
    // One build at a time per suite: the second waits in the queue while the first runs.
    const ahead = await w.build(repo);
    await eventually('the first build to run', async () => (await w.session(ahead.session)).status === 'running');
    const build = await w.build(repo, { force: true });

    // Signing in from the build's own address comes back to it.
    await page.goto(`${w.sluice.url}/builds/${build.session}`);
    await page.waitForURL(/\/sign-in\?next=%2Fbuilds%2F/);
    await signIn(page, w.sluice.url, 'Grace', w.sluice.config.adminToken);
    await page.waitForURL(`${w.sluice.url}/builds/${build.session}`);
    const status = page.locator('h1 [data-status]');
    // Live: the page changes without a reload (a mark set now would be lost by one).
    const mark = () => page.evaluate('window.sluiceMark = 1');
    const stillMarked = () => page.evaluate('window.sluiceMark === 1');
    await mark();
    await expect(status.textContent()).resolves.toBe('queued');
    // Queued, it has no workflow yet: no link to the Temporal UI.
    await expect(page.getByRole('link', { name: 'Workflow in Temporal' }).isVisible()).resolves.toBe(false);
    await screenshots('build-queued');

    // The build ahead ends; this one takes its turn, and the page follows.
    await w.sluice.admin('POST', `/api/v1/sessions/${ahead.session}/stop`, { stopped_by: 'web.test' });
    await page.locator('h1 [data-status]', { hasText: 'running' }).waitFor();
    expect(await stillMarked()).toBe(true);
    await expect(page.getByRole('button', { name: 'Rebuild' }).isVisible()).resolves.toBe(false);
    await expect(page.getByRole('link', { name: 'Workflow in Temporal' }).getAttribute('href')).resolves.toBe(
      `${TEMPORAL_UI}/namespaces/default/workflows/${w.sluice.ids.session(build.session)}`,
    );
    await page.locator('tr[data-file="wait_test.sh"] .status', { hasText: 'started' }).waitFor();
    await screenshots('build-running');

    // It fails: the page shows the failure, still without a reload.
    await writeFile(release, '1');
    expect((await w.eventsOf(build.session)).at(-1)).toMatchObject({ status: 'failed', branch: 'master' });
    await page.locator('h1 [data-status]', { hasText: 'failed' }).waitFor();
    await page.locator('tr[data-file="wait_test.sh"] .status', { hasText: 'failed' }).waitFor();
    await expect(page.locator('[data-counts]').textContent()).resolves.toContain('1 failed');
    // The failure's output comes first, as it arrived.
    await page.locator('[data-failures] pre', { hasText: 'the release says 1' }).waitFor();
    // The timeline: a picture, its numbers one click away.
    await expect(page.getByRole('img', { name: `Timeline of build #${build.session}` }).isVisible()).resolves.toBe(true);
    await page.getByText('The numbers').click();
    await expect(page.locator('[data-timeline] tr').filter({ hasText: 'ci_received_at' }).count()).resolves.toBe(1);
    await expect(page.getByRole('button', { name: 'Rebuild' }).isVisible()).resolves.toBe(true);
    await expect(page.getByRole('button', { name: 'Stop' }).isVisible()).resolves.toBe(false);
    expect(await stillMarked()).toBe(true);
    await screenshots('build');

    // Rebuild: a new build of the same trigger, whose page opens and follows it; Stop stops it
    // in the name of who signed in.
    await rm(release);
    await page.getByRole('button', { name: 'Rebuild' }).click();
    await page.waitForURL((url) => /\/builds\/\d+$/.test(url.pathname) && url.pathname !== `/builds/${build.session}`);
    const rebuilt = Number(new URL(page.url()).pathname.split('/').pop());
    await mark();
    await page.locator('h1 [data-status]', { hasText: 'running' }).waitFor();
    await page.getByRole('button', { name: 'Stop' }).click();
    await page.waitForURL(`${w.sluice.url}/builds/${rebuilt}`);
    expect((await w.eventsOf(rebuilt)).at(-1)).toMatchObject({ status: 'stopped', stopped_by: 'Grace' });
    await page.locator('h1 [data-status]', { hasText: 'stopped' }).waitFor();
    await expect(page.getByText('stopped by Grace').count()).resolves.toBeGreaterThan(0);
    await expect(page.getByRole('button', { name: 'Stop' }).isVisible()).resolves.toBe(false);
    await expect(page.getByRole('button', { name: 'Rebuild' }).isVisible()).resolves.toBe(true);

    // A plan's page lists its parts, each linking back to it.
    const plan = await w.makeRepo(
      { 'a/ok_test.sh': script('true'), 'b/ok_test.sh': script('true') },
      {
        suite: {
          branch: 'master',
          test_pattern: '*_test.sh',
          profiles: [
            { name: 'a', test_pattern: 'a/*_test.sh' },
            { name: 'b', test_pattern: 'b/*_test.sh' },
          ],
          plan: ['a', 'b'],
        },
      },
    );
    const parent = await w.build(plan);
    await w.eventsOf(parent.session);
    await page.goto(`${w.sluice.url}/builds/${parent.session}`);
    const parts = page.locator('[data-parts] li');
    await expect(parts.count()).resolves.toBe(2);
    await expect(parts.allTextContents()).resolves.toEqual([expect.stringMatching(/#\d+ a passed/), expect.stringMatching(/#\d+ b passed/)]);
    await parts.first().getByRole('link').click();
    await page.getByRole('link', { name: `build #${parent.session}` }).waitFor();
    await expect(page.getByRole('button', { name: 'Rebuild' }).isVisible()).resolves.toBe(false); // a part: rebuild its parent

    // An unknown build is a page that says so.
    const missing = await page.goto(`${w.sluice.url}/builds/999999999`);
    expect(missing?.status()).toBe(404);
    await expect(page.getByRole('heading', { name: 'Not found' }).isVisible()).resolves.toBe(true);
  });

  it('creates an organization and a repository through the pages, and says what is wrong with a form', async () => {
    await page.goto(`${w.sluice.url}/`);
    if (page.url().includes('/sign-in')) await signIn(page, w.sluice.url, 'Ada', w.sluice.config.adminToken);
    // One click from the builds list.
    await page.getByRole('navigation').getByRole('link', { name: 'Organizations' }).click();
    await page.waitForURL(`${w.sluice.url}/orgs`);
    const orgForm = page.getByRole('form', { name: 'New organization' });
    const name = `web-${Date.now().toString(36)}`;

    // A name the API refuses comes back with its reason and what was typed.
    await orgForm.getByLabel('Name').fill('123');
    await orgForm.getByLabel('E-mail').fill('ci@acme.test');
    await orgForm.getByRole('button', { name: 'Create organization' }).click();
    await expect(orgForm.getByRole('alert').textContent()).resolves.toContain('name: must not be all digits');
    await expect(orgForm.getByLabel('E-mail').inputValue()).resolves.toBe('ci@acme.test');

    await orgForm.getByLabel('Name').fill(name);
    await orgForm.getByRole('button', { name: 'Create organization' }).click();
    await page.waitForURL(`${w.sluice.url}/orgs#org-${name}`);
    const org = page.locator(`[data-org="${name}"]`);
    await expect(org.getByText('No repositories yet.').isVisible()).resolves.toBe(true);
    expect((await w.sluice.admin<{ email: string }>('GET', `/api/v1/orgs/${name}`)).email).toBe('ci@acme.test');

    // The same name again is a conflict, said on the form.
    await orgForm.getByLabel('Name').fill(name);
    await orgForm.getByLabel('E-mail').fill('ci@acme.test');
    await orgForm.getByRole('button', { name: 'Create organization' }).click();
    await expect(orgForm.getByRole('alert').textContent()).resolves.toContain('an organization with this name exists');

    // A repository in it, from the keyboard: its form opens under the organization.
    await page.locator(`[data-org="${name}"] summary`, { hasText: 'New repository in' }).focus();
    await page.keyboard.press('Enter');
    const repoForm = page.getByRole('form', { name: `New repository in ${name}` });
    await repoForm.getByLabel('Name').fill('app');
    await repoForm.getByLabel('SCM').selectOption('hg');
    await repoForm.getByLabel('Pull URL').fill('ssh://hg@hg.acme.test/app');
    await repoForm.getByRole('button', { name: 'Create repository' }).click();
    // It opens the repository's CI Setup page.
    await page.waitForURL(/\/repos\/\d+$/);
    const repo = await w.sluice.admin<{ id: number; scm: string; pull_url: string }>('GET', `/api/v1/repos/${encodeURIComponent(`${name}/app`)}`);
    expect(page.url()).toBe(`${w.sluice.url}/repos/${repo.id}`);
    expect(repo).toMatchObject({ scm: 'hg', pull_url: 'ssh://hg@hg.acme.test/app' });

    // Listed under its organization, with its pages a click away.
    await page.goto(`${w.sluice.url}/orgs#org-${name}`);
    const row = page.locator(`tr[data-repo="${name}/app"]`);
    await expect(row.getByRole('link', { name: `CI setup of ${name}/app` }).getAttribute('href')).resolves.toBe(`/repos/${repo.id}`);
    await expect(row.getByRole('link', { name: `Branches of ${name}/app` }).getAttribute('href')).resolves.toBe(`/repos/${repo.id}/branches`);
    await expect(org.getByRole('link', { name: 'Web hooks' }).getAttribute('href')).resolves.toBe(`/orgs/${name}/webhooks`);
    await page.locator(`[data-org="${name}"]`).scrollIntoViewIfNeeded();
    await screenshots('orgs');
  });
});
