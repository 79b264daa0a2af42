/**
 * The web pages in a real browser: Debian's chromium driven by playwright-core (installed by
 * .ci/run; the browser is never downloaded). Sign-in with the admin token, the builds list of
 * real builds with its filters, the cookie's flags, CSRF, sign-out; a build's page with Stop
 * and Rebuild; screenshots of each page at
 * a laptop's and a phone's size land in test/screenshots/ (not committed) for people to look at.
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { script, World } from '../support/world';

const CHROMIUM = '/usr/bin/chromium';
const SCREENSHOTS = path.join(__dirname, '..', 'screenshots');
const SIZES = [
  { name: 'laptop', width: 1280, height: 800 },
  { name: 'phone', width: 390, height: 844 },
];

const runs = existsSync(CHROMIUM);
if (!runs) console.warn(`web.test.ts skipped: no browser at ${CHROMIUM} (.ci/run installs Debian's chromium)`);

(runs ? describe : describe.skip)('the web pages', () => {
  let w: World;
  let context: BrowserContext;
  let profile: string;
  let page: Page;

  beforeAll(async () => {
    w = await World.start();
    profile = await mkdtemp(path.join(os.tmpdir(), 'sluice-chromium-'));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
      viewport: SIZES[0],
    });
    page = context.pages()[0] ?? (await context.newPage());
    await mkdir(SCREENSHOTS, { recursive: true });
  });
  afterAll(async () => {
    await context?.close();
    await w?.stop();
    if (profile) await rm(profile, { recursive: true, force: true });
  });

  async function screenshots(name: string): Promise<void> {
    for (const size of SIZES) {
      await page.setViewportSize(size);
      await page.screenshot({ path: path.join(SCREENSHOTS, `${name}-${size.width}x${size.height}.png`), fullPage: true });
    }
    await page.setViewportSize(SIZES[0]!);
  }

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

    // The cookie: httpOnly, SameSite=Strict (Secure only over HTTPS; this is loopback HTTP).
    const cookie = (await context.cookies()).find((c) => c.name === 'sluice_session')!;
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict', secure: false });

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

  it("shows a build's page live; Stop stops it as the signed-in user, Rebuild builds it again", async () => {
    // The test waits for the release file, then exits with the code written in it.
    const release = path.join(w.tmp, 'release-web');
    const repo = await w.makeRepo(
      { 'wait_test.sh': script(`for i in $(seq 1 1200); do [ -e ${release} ] && { echo "the release says $(cat ${release})"; exit "$(cat ${release})"; }; sleep 0.05; done\nexit 1`) },
      { suite: { branch: 'master', test_pattern: '*_test.sh' } },
    );
    const build = await w.build(repo);

    // Signing in from the build's own address comes back to it.
    await page.goto(`${w.sluice.url}/builds/${build.session}`);
    await page.waitForURL(/\/sign-in\?next=%2Fbuilds%2F/);
    await page.getByLabel('Your name').fill('Grace');
    await page.getByLabel('Admin token').fill(w.sluice.config.adminToken);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${w.sluice.url}/builds/${build.session}`);
    const status = page.locator('h1 [data-status]');
    // Live: the page changes without a reload (a mark set now would be lost by one).
    const mark = () => page.evaluate('window.sluiceMark = 1');
    const stillMarked = () => page.evaluate('window.sluiceMark === 1');
    await mark();
    await page.locator('h1 [data-status]', { hasText: 'running' }).waitFor();
    expect(await stillMarked()).toBe(true);
    await expect(page.getByRole('button', { name: 'Rebuild' }).isVisible()).resolves.toBe(false);
    await screenshots('build-running');

    await page.getByRole('button', { name: 'Stop' }).click();
    await page.waitForURL(`${w.sluice.url}/builds/${build.session}`);
    expect((await w.eventsOf(build.session)).at(-1)).toMatchObject({ status: 'stopped', stopped_by: 'Grace' });
    await page.locator('h1 [data-status]', { hasText: 'stopped' }).waitFor();
    await expect(page.getByText('stopped by Grace').count()).resolves.toBeGreaterThan(0);
    await expect(page.getByRole('button', { name: 'Stop' }).isVisible()).resolves.toBe(false);

    // Rebuild: a new build of the same trigger, whose page opens and follows it to its end.
    await page.getByRole('button', { name: 'Rebuild' }).click();
    await page.waitForURL((url) => /\/builds\/\d+$/.test(url.pathname) && url.pathname !== `/builds/${build.session}`);
    const rebuilt = Number(new URL(page.url()).pathname.split('/').pop());
    await mark();
    await page.locator('h1 [data-status]', { hasText: 'running' }).waitFor();
    await writeFile(release, '1');
    expect((await w.eventsOf(rebuilt)).at(-1)).toMatchObject({ status: 'failed', branch: 'master' });
    await page.locator('h1 [data-status]', { hasText: 'failed' }).waitFor();
    await page.locator('tr[data-file="wait_test.sh"] .status', { hasText: 'failed' }).waitFor();
    await expect(page.locator('[data-counts]').textContent()).resolves.toContain('1 failed');
    // The failure's output comes first, as it arrived.
    await page.locator('[data-failures] pre', { hasText: 'the release says 1' }).waitFor();
    await expect(page.getByRole('listitem').filter({ hasText: 'ci_received_at' }).count()).resolves.toBe(1);
    await expect(page.getByRole('button', { name: 'Rebuild' }).isVisible()).resolves.toBe(true);
    expect(await stillMarked()).toBe(true);
    await expect(status.textContent()).resolves.toBe('failed');
    await screenshots('build');

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
});
