/**
 * The operator's buttons in a real browser: a suite's deadline through its form; a new trigger
 * key and a new SSH key pair from the CI Setup page (the old URL refused at once); a suite, a
 * repository with a build under way (stopped by the signed-in user) and an organization deleted,
 * each after a second click that needs no JavaScript.
 */
import type { Page } from 'playwright-core';
import { describeWithBrowser, openBrowser, signIn, type Browser } from '../support/browser';
import { eventually } from '../support/sluice';
import { script, World } from '../support/world';

describeWithBrowser('web-operator.test.ts')('delete, rotate and deadline buttons', () => {
  let w: World;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    w = await World.start();
    browser = await openBrowser();
    page = browser.page;
  });
  afterAll(async () => {
    await browser?.close();
    await w?.stop();
  });

  const status = async (session: number) =>
    (await w.sluice.pool.query<{ status: string }>('SELECT status FROM sessions WHERE id = $1', [session])).rows[0]?.status;

  it('sets a deadline, makes new keys and deletes a suite on the CI Setup page', async () => {
    const repo = await w.makeRepo({ 'ok_test.sh': script('true') }, { suite: { branch: 'master', test_pattern: '*_test.sh' } });
    await page.goto(`${w.sluice.url}/repos/${repo.id}`);
    await signIn(page, w.sluice.url, 'Ada', w.sluice.config.adminToken);
    await page.waitForURL(`${w.sluice.url}/repos/${repo.id}`);

    // A deadline for the suite.
    const master = page.locator('details[data-suite="master"]');
    await master.locator(':scope > summary').click();
    const form = master.getByRole('form', { name: 'Suite master' });
    await form.getByLabel('Deadline (minutes)').fill('45');
    await form.getByRole('button', { name: 'Save suite master' }).click();
    await page.waitForURL(/saved=suite/);
    await expect(page.locator('details[data-suite="master"] > summary').textContent()).resolves.toContain('deadline 45 min');
    const [suite] = await w.sluice.admin<{ deadline_minutes: number | null }[]>('GET', `/api/v1/repos/${repo.id}/suites`);
    expect(suite!.deadline_minutes).toBe(45);

    // A new trigger key: the URL on the page changes, the old one is refused.
    const oldUrl = (await page.locator('#hook-builds').textContent())!;
    expect(oldUrl).toBe(repo.webhook_url);
    await page.locator('#rotate-key > summary').click();
    await page.getByRole('button', { name: 'Yes, make a new trigger key' }).click();
    await page.waitForURL(/saved=key/);
    await expect(page.getByRole('status').textContent()).resolves.toContain('the old webhook URLs no longer work');
    const newUrl = (await page.locator('#hook-builds').textContent())!;
    expect(newUrl).not.toBe(oldUrl);
    expect((await fetch(oldUrl, { method: 'POST' })).status).toBe(404);

    // A new SSH key pair.
    const oldKey = await page.getByLabel('SSH public key', { exact: true }).inputValue();
    await page.locator('#rotate-ssh-key > summary').click();
    await page.getByRole('button', { name: 'Yes, make a new SSH key pair' }).click();
    await page.waitForURL(/saved=ssh-key/);
    const newKey = await page.getByLabel('SSH public key', { exact: true }).inputValue();
    expect(newKey).toMatch(/^ssh-ed25519 \S+ sluice:/);
    expect(newKey).not.toBe(oldKey);
    await browser.screenshots('ci-setup-operator');

    // Deleting the suite takes a second click.
    await page.locator('details[data-suite="master"] > summary').click();
    await page.getByText('Delete suite master…').click();
    await page.getByRole('button', { name: 'Yes, delete suite master' }).click();
    await page.waitForURL(/saved=suite-deleted/);
    await expect(page.locator('details[data-suite="master"]').count()).resolves.toBe(0);
    await expect(w.sluice.admin('GET', `/api/v1/repos/${repo.id}/suites`)).resolves.toEqual([]);
  });

  it('deletes a repository with a build under way (stopped by the signed-in user), then its organization', async () => {
    const repo = await w.makeRepo({ 'slow_test.sh': script('exec sleep 300') }, { suite: { branch: 'master', test_pattern: '*_test.sh' } });
    const build = await w.build(repo);
    await eventually('the build to run', async () => (await status(build.session)) === 'running');

    await page.goto(`${w.sluice.url}/orgs`);
    const row = page.locator(`tr[data-repo="${w.org.name}/${repo.name}"]`);
    await row.getByText('Delete…').click();
    await browser.screenshots('orgs-delete');
    await row.getByRole('button', { name: `Yes, delete ${w.org.name}/${repo.name}` }).click();
    await page.waitForURL(/\/orgs\?deleted=/);
    await expect(page.getByRole('status').textContent()).resolves.toBe(`${w.org.name}/${repo.name} deleted.`);
    await expect(page.locator(`tr[data-repo="${w.org.name}/${repo.name}"]`).count()).resolves.toBe(0);
    expect(await status(build.session)).toBeUndefined();
    expect((await w.eventsOf(build.session)).at(-1)).toMatchObject({ status: 'stopped', stopped_by: 'Ada' });

    const org = page.locator(`section[data-org="${w.org.name}"]`);
    await org.getByText(`Delete organization ${w.org.name}…`).click();
    await org.getByRole('button', { name: `Yes, delete organization ${w.org.name}` }).click();
    await page.waitForURL(/\/orgs\?deleted=/);
    await expect(page.getByRole('status').textContent()).resolves.toBe(`${w.org.name} deleted.`);
    await expect(page.locator(`section[data-org="${w.org.name}"]`).count()).resolves.toBe(0);
    expect((await fetch(`${w.sluice.url}/api/v1/orgs/${w.org.id}`, { headers: { authorization: `Bearer ${w.sluice.config.adminToken}` } })).status).toBe(404);
  });
});
