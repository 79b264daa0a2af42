/**
 * The web UI warns administrators while a runner runs builds without isolation (issue 23): a
 * Sluice whose runner has SLUICE_SANDBOX=none, in a real browser. The warning is on every page
 * for a signed-in user, says what builds can reach and names the runner; the sign-in page, seen
 * by anyone, does not show it. Its link leads to the runners page, which lists the runner.
 */
import { describeWithBrowser, openBrowser, signIn, type Browser } from '../support/browser';
import { World } from '../support/world';

describeWithBrowser('web-isolation.test.ts')('a runner without isolation', () => {
  let w: World;
  let browser: Browser;

  beforeAll(async () => {
    w = await World.start({ sandbox: 'none' });
    browser = await openBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await w?.stop();
  });

  it('is shown to administrators on every page, saying what builds can reach, and to nobody else', async () => {
    const { page } = browser;
    await page.goto(`${w.sluice.url}/sign-in`);
    await expect(page.getByRole('alert').count()).resolves.toBe(0);
    await signIn(page, w.sluice.url, 'Ada', w.sluice.config.adminToken);
    for (const path of ['/', '/orgs']) {
      await page.goto(`${w.sluice.url}${path}`);
      const warning = page.getByRole('alert').filter({ hasText: 'Builds are not isolated' });
      await expect(warning.textContent()).resolves.toMatch(/SLUICE_SANDBOX=none/);
      await expect(warning.textContent()).resolves.toContain(w.sluice.runnerNames[0]!);
    }
    await browser.screenshots('isolation-warning');

    // The banner's link: the runners page lists this runner as not isolated, with why, and idle.
    await page.getByRole('alert').getByRole('link', { name: 'Runners' }).click();
    await page.waitForURL((u) => u.pathname === '/runners');
    const row = page.locator(`tr[data-runner="${w.sluice.runnerNames[0]!}"]`);
    await expect(row.locator('td[data-label="Isolation"]').textContent()).resolves.toMatch(/not isolated[\s\S]*SLUICE_SANDBOX=none/);
    await expect(row.locator('td[data-label="Now"]').textContent()).resolves.toBe('idle');
    await browser.screenshots('runners');
  });
});
