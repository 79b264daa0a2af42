/**
 * The web UI warns administrators while a runner runs builds without isolation (issue 23): a
 * Sluice whose runner has SLUICE_SANDBOX=none, in a real browser. The warning is on every page
 * for a signed-in user, says what builds can reach and names the runner; the sign-in page, seen
 * by anyone, does not show it. Its link leads to the runners page, which lists the runner.
 * The same page makes runner tokens (shown once, with the command that starts a runner with
 * one) and revokes them.
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

  it('makes a runner token, shows it once with the command that starts a runner, and revokes it', async () => {
    const { page } = browser;
    await page.goto(`${w.sluice.url}/runners`);
    if (new URL(page.url()).pathname === '/sign-in') await signIn(page, w.sluice.url, 'Ada', w.sluice.config.adminToken);
    if (new URL(page.url()).pathname !== '/runners') await page.goto(`${w.sluice.url}/runners`);
    const form = page.getByRole('form', { name: 'Make a runner token' });
    // A bad name is refused, naming the field, and the form keeps what was typed.
    await form.getByLabel('Name').fill('no spaces');
    await form.getByRole('button', { name: 'Make a runner token' }).click();
    await expect(page.getByRole('alert').filter({ hasText: 'name:' }).textContent()).resolves.toMatch(/name: .*letters, digits/);
    await form.getByLabel('Name').fill('edge-web');
    await form.getByRole('button', { name: 'Make a runner token' }).click();
    const command = await page.getByLabel('Command that starts a runner with this token').inputValue();
    expect(command).toMatch(new RegExp(`^SLUICE_RUNNER_TOKEN=sluice_rt_[A-Za-z0-9_-]{43} SLUICE_BASE_URL=${w.sluice.url} SLUICE_BUILD_QUEUE=\\S+ node dist/runner/main.js$`));
    const token = /SLUICE_RUNNER_TOKEN=(\S+)/.exec(command)![1]!;
    await browser.screenshots('runner-token-made');

    // Once: the page again does not show it.
    await page.goto(`${w.sluice.url}/runners`);
    expect(await page.content()).not.toContain(token);
    const row = page.locator('tr[data-token="edge-web"]');
    await expect(row.locator('td[data-label="Runner"]').textContent()).resolves.toBe('never seen');
    await row.getByRole('button', { name: 'Revoke runner token edge-web' }).click();
    await page.waitForURL((u) => u.searchParams.has('revoked'));
    await expect(page.locator('tr[data-token="edge-web"] td[data-label="Now"]').textContent()).resolves.toBe('revoked');
    await expect(page.getByRole('status').textContent()).resolves.toMatch(/revoked: its runner gets no more work/);
    const refused = await fetch(`${w.sluice.url}/api/v1/runner/jobs/next`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ runner: 'r', version: '1', queues: ['q'], wait_ms: 0 }),
    });
    expect(refused.status).toBe(401);
    await browser.screenshots('runner-token-revoked');
  });
});
