/**
 * The web pages in a real browser: Debian's chromium driven by playwright-core (installed by
 * .ci/run; the browser is never downloaded). Sign-in with the admin token, the builds list of
 * real builds with its filters, the cookie's flags, CSRF, sign-out; screenshots of each page at
 * a laptop's and a phone's size land in test/screenshots/ (not committed) for people to look at.
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
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
    await row(passed.session).getByRole('link', { name: `#${passed.session}` }).click();
    await page.waitForURL(new RegExp(`/1/reports/${passed.session}\\?token=`));
    await page.goBack();

    // A form post without its CSRF token is refused, even with the session cookie.
    const forged = await context.request.post(`${w.sluice.url}/sign-out`, { form: { next: '/' }, maxRedirects: 0 });
    expect(forged.status()).toBe(403);

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(/\/sign-in$/);
    await page.goto(`${w.sluice.url}/`);
    await page.waitForURL(/\/sign-in\?next=/);
  });
});
