/**
 * Images on the web pages, in a real browser (Debian's chromium driven by playwright-core):
 * a suite's Image field and a registry login set on the CI Setup page, a build from the webhook
 * that runs in the image from a private registry, its build page showing the image, its digest
 * and each worker's `image` step, and a rebuild that resolves the image again. Screenshots of
 * both pages at a laptop's and a phone's size land in test/screenshots/.
 */
import { randomBytes } from 'node:crypto';
import type { Page } from 'playwright-core';
import { describeWithBrowser, openBrowser, signIn, type Browser } from '../support/browser';
import { pushImage, startPrivateRegistry, testImageLayers, type TestRegistry } from '../support/registry';
import { script, sessionOfGuid, World } from '../support/world';

describeWithBrowser('web-images.test.ts')('images on the web pages', () => {
  let w: World;
  let browser: Browser;
  let page: Page;
  let registry: TestRegistry;
  const login = { username: 'page-bot', password: `pw-${randomBytes(8).toString('hex')}` };

  beforeAll(async () => {
    registry = await startPrivateRegistry(login);
    w = await World.start({ isolation: 'default' });
    browser = await openBrowser();
    page = browser.page;
  }, 300_000);
  afterAll(async () => {
    await browser?.close();
    await w?.stop();
    await registry?.stop();
  });

  it('sets a suite’s image and a registry login on CI Setup, and shows the build in the image', async () => {
    const layers = await testImageLayers();
    const image = await pushImage(registry.host, 'team/node:22', { layers: [layers.debian, layers.node], auth: login });
    const repo = await w.makeRepo({ 'node_test.sh': script('node --version') }, { suite: { branch: 'master', test_pattern: '*_test.sh' } });

    await page.goto(`${w.sluice.url}/repos/${repo.id}`);
    await signIn(page, w.sluice.url, 'Ada', w.sluice.config.adminToken);
    await page.waitForURL(`${w.sluice.url}/repos/${repo.id}`);

    // The registry login: set through the form, listed without its password.
    const form = page.getByRole('form', { name: 'Set a registry login' });
    await form.getByLabel('Host').fill(registry.host);
    await form.getByLabel('Username').fill(login.username);
    await form.getByLabel('Password or access token').fill(login.password);
    await form.getByRole('button', { name: 'Set registry login' }).click();
    await page.waitForURL(/\?saved=registry#registries$/);
    await expect(page.locator(`tr[data-registry="${registry.host}"]`).textContent()).resolves.toContain(login.username);
    await expect(page.content()).resolves.not.toContain(login.password);

    // The suite's image, in its own field.
    const master = page.locator('details[data-suite="master"]');
    await master.locator(':scope > summary').click();
    const suite = page.getByRole('form', { name: 'Suite master' });
    await suite.getByLabel('Image').fill(`${registry.host}/team/node:22`);
    await suite.getByRole('button', { name: 'Save suite master' }).click();
    await page.waitForURL(/\?saved=suite/);
    await expect(master.locator(':scope > summary').textContent()).resolves.toContain(`image ${registry.host}/team/node:22`);
    await browser.screenshots('repo-setup-image');

    // A build from the webhook, in the image: its page says which, and how each worker got it.
    const res = await fetch(repo.webhook_url, { method: 'POST' });
    expect(res.status).toBe(200);
    const session = await sessionOfGuid(w.sluice.pool, ((await res.json()) as { guid: string }).guid);
    await w.eventsOf(session);
    await page.goto(`${w.sluice.url}/builds/${session}`);
    await expect(page.locator('[data-status]').first().textContent()).resolves.toContain('passed');
    await expect(page.locator('[data-image-ref]').textContent()).resolves.toBe(`${registry.host}/team/node:22`);
    await expect(page.locator('[data-image-digest]').textContent()).resolves.toBe(image.digest.slice(0, 'sha256:'.length + 12));
    await expect(page.locator('[data-image-digest]').getAttribute('title')).resolves.toBe(image.digest);
    await expect(page.getByText(/pulled: 2 layers, [\d.]+ MiB fetched/).first().isVisible()).resolves.toBe(true);
    await browser.screenshots('build-image');

    // Rebuild, resolving the image again: a new build, in what the tag names now.
    await page.getByRole('button', { name: 'Rebuild, resolving the image again' }).click();
    await page.waitForURL((url) => /\/builds\/\d+$/.test(url.pathname) && !url.pathname.endsWith(`/${session}`));
    const rebuilt = Number(new URL(page.url()).pathname.split('/').pop());
    await w.eventsOf(rebuilt);
    const view = (await w.session(rebuilt)) as unknown as { status: string; image: { digest: string } };
    expect(view).toMatchObject({ status: 'passed', image: { digest: image.digest } });
  });
});
