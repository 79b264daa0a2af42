/**
 * A repository's CI Setup and Branches pages in a real browser (Debian's chromium driven by
 * playwright-core): a repository made through the Organizations page, its SSH key and webhook
 * URLs read off the page and used as a person would (the key authorized on the git server, a
 * trigger posted to the URL), a suite, a setting and a secret through the forms, a refused
 * field shown on its form, and a branch turned off and on again. Screenshots of both pages at
 * a laptop's and a phone's size land in test/screenshots/.
 */
import type { Page } from 'playwright-core';
import { providers } from '../../src/providers';
import { describeWithBrowser, openBrowser, signIn, type Browser } from '../support/browser';
import { script, sessionOfGuid, World } from '../support/world';

describeWithBrowser('web-setup.test.ts')('the CI Setup and Branches pages', () => {
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

  /** Posts an empty trigger to a webhook URL, as `curl -X POST` would. */
  const trigger = async (url: string) => {
    const res = await fetch(url, { method: 'POST' });
    return { status: res.status, text: await res.text() };
  };

  it('sets a repository up through its pages, builds it from the URL shown, and toggles its branch', async () => {
    const { pullUrl } = await w.makeBareRepo('setup', { 'ok_test.sh': script('true') });

    // A repository made on the Organizations page lands on its CI Setup page.
    await page.goto(`${w.sluice.url}/orgs`);
    await signIn(page, w.sluice.url, 'Ada', w.sluice.config.adminToken);
    await page.waitForURL(`${w.sluice.url}/orgs`);
    const org = page.locator(`section[data-org="${w.org.name}"]`);
    await org.getByText(`New repository in ${w.org.name}`).click();
    const newRepo = org.getByRole('form', { name: `New repository in ${w.org.name}` });
    await newRepo.getByLabel('Name').fill('web-setup');
    await newRepo.getByLabel('Pull URL (SSH)').fill(pullUrl);
    await newRepo.getByRole('button', { name: 'Create repository' }).click();
    await page.waitForURL(/\/repos\/\d+$/);
    const repoId = Number(new URL(page.url()).pathname.split('/').pop());
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toContain(`${w.org.name}/web-setup`);
    await expect(page.locator('[data-scm]').textContent()).resolves.toBe('git');

    // The SSH public key, read off the page, is what the git server is told to trust.
    const publicKey = await page.getByLabel('SSH public key', { exact: true }).inputValue();
    expect(publicKey).toMatch(/^ssh-ed25519 \S+ sluice:/);
    w.authorize(publicKey);
    await expect(page.content()).resolves.not.toContain('PRIVATE KEY');

    // One webhook URL per adapter of the registry, each with its Copy button.
    for (const name of Object.keys(providers)) {
      await expect(page.locator(`#hook-${name}`).textContent()).resolves.toMatch(new RegExp(`^${w.sluice.url}/1/${name}/\\S+$`));
      await expect(page.locator(`button[data-copy="#hook-${name}"]`).isVisible()).resolves.toBe(true);
    }
    const genericUrl = (await page.locator('#hook-builds').textContent())!;
    const githubUrl = (await page.locator('#hook-github').textContent())!;
    expect(githubUrl).toBe(genericUrl.replace('/1/builds/', '/1/github/'));

    // A webhook secret too short is refused, and what was typed is not written back.
    const hookSecret = page.getByRole('form', { name: 'Webhook secret' });
    await hookSecret.getByLabel('Secret').fill('too-short-123');
    await hookSecret.getByRole('button', { name: 'Set webhook secret' }).click();
    await expect(page.getByRole('form', { name: 'Webhook secret' }).getByRole('alert').textContent()).resolves.toBe('webhook_secret: must be at least 16 characters');
    await expect(page.getByRole('form', { name: 'Webhook secret' }).getByLabel('Secret').inputValue()).resolves.toBe('');
    await expect(page.content()).resolves.not.toContain('too-short-123');
    await expect(page.locator('[data-webhook-secret]').textContent()).resolves.toBe('not set');

    // No suite yet: a trigger is dropped.
    await expect(trigger(genericUrl)).resolves.toEqual({ status: 422, text: 'DROPPED' });

    // A suite through the form: a bad pattern is refused next to it, with what was typed kept.
    const newSuite = page.getByRole('form', { name: 'New suite' });
    await newSuite.getByLabel('Branch').fill('master');
    await newSuite.getByLabel('Test pattern').fill('/abs/*_test.sh');
    const refused = page.waitForResponse((r) => r.url().endsWith(`/repos/${repoId}/suites`));
    await newSuite.getByRole('button', { name: 'Add suite' }).click();
    expect((await refused).status()).toBe(400);
    await expect(newSuite.getByRole('alert').textContent()).resolves.toBe('test_pattern: must be relative to the repository root');
    await expect(newSuite.getByLabel('Branch').inputValue()).resolves.toBe('master');
    await expect(newSuite.getByLabel('Test pattern').getAttribute('aria-invalid')).resolves.toBe('true');
    await newSuite.getByLabel('Test pattern').fill('*_test.sh');
    await newSuite.getByLabel('Test pattern').press('Enter'); // the keyboard is enough
    await page.waitForURL(/\?saved=suite#suite-\d+$/);
    await expect(page.getByRole('status').textContent()).resolves.toBe('Suite saved.');
    const master = page.locator('details[data-suite="master"]');
    await expect(master.locator(':scope > summary').textContent()).resolves.toContain('*_test.sh');

    // Editing the suite: a bad value is refused on its own form, a good one kept.
    await master.locator(':scope > summary').click();
    const suiteForm = page.getByRole('form', { name: 'Suite master' });
    await suiteForm.getByText('Profiles and plan').click();
    await suiteForm.getByLabel('Profiles').fill('- name: default\n  test_pattern: x');
    await suiteForm.getByRole('button', { name: 'Save suite master' }).click();
    await expect(page.getByRole('form', { name: 'Suite master' }).getByRole('alert').textContent()).resolves.toBe('profiles.0.name: default is the suite itself');
    await page.getByRole('form', { name: 'Suite master' }).getByLabel('Profiles').fill('');
    await page.getByRole('form', { name: 'Suite master' }).getByLabel('Workers').fill('2');
    await page.getByRole('form', { name: 'Suite master' }).getByRole('button', { name: 'Save suite master' }).click();
    await page.waitForURL(/\?saved=suite/);
    await expect(master.locator(':scope > summary').textContent()).resolves.toContain('2 workers');

    // Hooks, cache, services and artifacts, as sluice.yml writes them: a mistake is refused on the
    // form; what is saved is what the API says, shown again as YAML.
    await master.locator(':scope > summary').click();
    const setupField = page.getByRole('form', { name: 'Suite master' }).getByLabel('Setup');
    await page.getByRole('form', { name: 'Suite master' }).getByText('Hooks, cache, services and artifacts').click();
    await setupField.fill('services: [postgres]');
    await page.getByRole('form', { name: 'Suite master' }).getByRole('button', { name: 'Save suite master' }).click();
    await expect(page.getByRole('form', { name: 'Suite master' }).getByRole('alert').textContent()).resolves.toBe('services.0: expected one of "postgresql", "mysql", "redis"');
    await page.getByRole('form', { name: 'Suite master' }).getByLabel('Setup').fill('hooks:\n  worker_setup: echo schema ready\nartifacts: ["coverage/**"]');
    await page.getByRole('form', { name: 'Suite master' }).getByRole('button', { name: 'Save suite master' }).click();
    await page.waitForURL(/\?saved=suite/);
    const [savedSuite] = await w.sluice.admin<Array<Record<string, unknown>>>('GET', `/api/v1/repos/${repoId}/suites`);
    expect(savedSuite).toMatchObject({ hooks: { worker_setup: 'echo schema ready' }, artifacts: ['coverage/**'], cache: null, services: null });
    await expect(master.locator('textarea[name="setup"]').inputValue()).resolves.toContain('worker_setup: echo schema ready');

    // A setting: CI squash, kept.
    const settings = page.getByRole('form', { name: 'Settings' });
    await expect(settings.getByLabel(/CI squash/).isChecked()).resolves.toBe(false);
    await settings.getByLabel(/CI squash/).check();
    await settings.getByRole('button', { name: 'Save settings' }).click();
    await page.waitForURL(/\?saved=settings#settings$/);
    await expect(page.getByRole('form', { name: 'Settings' }).getByLabel(/CI squash/).isChecked()).resolves.toBe(true);
    await expect(w.sluice.admin('GET', `/api/v1/repos/${repoId}`)).resolves.toMatchObject({ ci_squash: true, pull_url: pullUrl, chat_url: null });

    // Commit statuses: a provider and a token, which is never shown again; a path the provider
    // cannot take is refused on the form; the token can be removed.
    const statuses = page.getByRole('form', { name: 'Commit statuses' });
    await statuses.getByLabel('Provider').selectOption('github');
    await statuses.getByLabel('Repository path').fill('not a path');
    await statuses.getByLabel('API token').fill('ghp-token-never-shown');
    await statuses.getByRole('button', { name: 'Save commit statuses' }).click();
    await expect(page.getByRole('form', { name: 'Commit statuses' }).getByRole('alert').textContent()).resolves.toContain('status_repo');
    await expect(page.content()).resolves.not.toContain('ghp-token-never-shown');
    await statuses.getByLabel('Repository path').fill('acme/web-setup');
    await statuses.getByLabel('API token').fill('ghp-token-never-shown');
    await statuses.getByRole('button', { name: 'Save commit statuses' }).click();
    await page.waitForURL(/\?saved=commit-status#statuses$/);
    await expect(page.locator('[data-status-token]').textContent()).resolves.toBe('set');
    await expect(page.content()).resolves.not.toContain('ghp-token-never-shown');
    await expect(w.sluice.admin('GET', `/api/v1/repos/${repoId}`)).resolves.toMatchObject({
      status_provider: 'github',
      status_repo: 'acme/web-setup',
      status_api_url: 'https://api.github.com',
      status_token_set: true,
    });
    // No API URL stored: the field stays empty (the provider's default is not pinned by saving again).
    await expect(statuses.getByLabel('API URL').inputValue()).resolves.toBe('');
    await statuses.getByRole('button', { name: 'Save commit statuses' }).click();
    await page.waitForURL(/\?saved=commit-status#statuses$/);
    await expect(page.getByRole('form', { name: 'Commit statuses' }).getByLabel('API URL').inputValue()).resolves.toBe('');
    // Another provider with the token kept is refused: the token is typed again for it.
    await statuses.getByLabel('Provider').selectOption('gitlab');
    await statuses.getByRole('button', { name: 'Save commit statuses' }).click();
    await expect(page.getByRole('form', { name: 'Commit statuses' }).getByRole('alert').textContent()).resolves.toMatch(/^status_token: set it again for the new provider/);
    await expect(w.sluice.admin('GET', `/api/v1/repos/${repoId}`)).resolves.toMatchObject({ status_provider: 'github', status_token_set: true });
    await statuses.getByLabel('Provider').selectOption('github');
    await page.getByRole('form', { name: 'Commit statuses' }).getByRole('button', { name: 'Remove the token' }).click();
    await page.waitForURL(/\?saved=commit-status#statuses$/);
    await expect(w.sluice.admin('GET', `/api/v1/repos/${repoId}`)).resolves.toMatchObject({ status_provider: 'github', status_token_set: false });
    // "none" turns statuses off and keeps the rest, as the JSON PATCH with only status_provider: null does.
    await statuses.getByLabel('Provider').selectOption('');
    await statuses.getByRole('button', { name: 'Save commit statuses' }).click();
    await page.waitForURL(/\?saved=commit-status#statuses$/);
    await expect(w.sluice.admin('GET', `/api/v1/repos/${repoId}`)).resolves.toMatchObject({ status_provider: null, status_repo: 'acme/web-setup' });

    // A secret: its name is shown, never its value.
    const setSecret = page.getByRole('form', { name: 'Set a secret' });
    await setSecret.getByLabel('Name').fill('API_TOKEN');
    await setSecret.getByLabel('Value').fill('s3cret-value-42');
    await setSecret.getByRole('button', { name: 'Set secret' }).click();
    await page.waitForURL(/\?saved=secret#secrets$/);
    await expect(page.locator('tr[data-secret="API_TOKEN"]').isVisible()).resolves.toBe(true);
    await expect(page.content()).resolves.not.toContain('s3cret-value-42');
    await master.locator(':scope > summary').click(); // its form in the screenshots
    await browser.screenshots('ci-setup');

    // Built from the generic URL shown on the page.
    const accepted = await trigger(genericUrl);
    expect(accepted.status).toBe(200);
    const session = await sessionOfGuid(w.sluice.pool, (JSON.parse(accepted.text) as { guid: string }).guid);
    expect((await w.eventsOf(session)).at(-1)).toMatchObject({ status: 'passed' });

    // Deleted, with the keyboard.
    await page.getByRole('button', { name: 'Delete secret API_TOKEN' }).focus();
    await page.keyboard.press('Enter');
    await page.waitForURL(/\?saved=secret-deleted#secrets$/);
    await expect(page.locator('tr[data-secret="API_TOKEN"]').count()).resolves.toBe(0);
    await expect(w.sluice.admin<unknown[]>('GET', `/api/v1/repos/${repoId}/secrets`)).resolves.toEqual([]);

    // Branches: master with its last build; a branch with a slash, locked through the API.
    await w.sluice.admin('PUT', `/api/v1/repos/${repoId}/branches/${encodeURIComponent('feature/x')}`, { locked_visible: true });
    await page.getByRole('link', { name: 'Branches' }).click();
    await page.waitForURL(`${w.sluice.url}/repos/${repoId}/branches`);
    const row = (name: string) => page.locator(`tr[data-branch="${name}"]`);
    await expect(row('master').locator('[data-last-build]').textContent()).resolves.toContain(`#${session} passed`);
    await expect(row('master').locator('[data-enabled]').textContent()).resolves.toBe('on');
    await expect(row('feature/x').locator('[data-visibility]').textContent()).resolves.toBe('shown, locked visible');
    await browser.screenshots('branches');

    // Turned off, the branch's triggers are dropped; turned on, they build again.
    await row('master').getByRole('button', { name: 'Turn off master' }).click();
    await page.waitForURL(/\?saved=branch#branch-master$/);
    await expect(row('master').locator('[data-enabled]').textContent()).resolves.toBe('off');
    await expect(trigger(genericUrl)).resolves.toEqual({ status: 422, text: 'DROPPED' });
    await row('master').getByRole('button', { name: 'Turn on master' }).click();
    await page.waitForURL(/\?saved=branch#branch-master$/);
    await expect(row('master').locator('[data-enabled]').textContent()).resolves.toBe('on');
    await expect(w.sluice.admin('GET', `/api/v1/repos/${repoId}/branches/master`)).resolves.toMatchObject({ enabled: true });

    // A name with a slash goes through the URL encoded.
    await row('feature/x').getByRole('button', { name: 'Unlock feature/x' }).click();
    await page.waitForURL(/\?saved=branch#branch-feature%2Fx$/);
    await expect(row('feature/x').locator('[data-visibility]').textContent()).resolves.toBe('shown');
    await expect(w.sluice.admin('GET', `/api/v1/repos/${repoId}/branches/${encodeURIComponent('feature/x')}`)).resolves.toMatchObject({ locked_visible: false });

    // An unknown repository is a page that says so.
    for (const path of ['/repos/999999999', '/repos/999999999/branches', '/repos/nope']) {
      const missing = await page.goto(`${w.sluice.url}${path}`);
      expect(missing?.status()).toBe(404);
      await expect(page.getByRole('heading', { name: 'Not found' }).isVisible()).resolves.toBe(true);
    }
  });

  it('a form sent after the sign-in expired comes back to its page, not to the address it posted to', async () => {
    const { id } = await w.sluice.admin<{ id: number }>('POST', `/api/v1/orgs/${w.org.id}/repos`, { name: 'expired', scm: 'git', pull_url: 'git@scm.example.test:acme/expired.git' });
    await page.goto(`${w.sluice.url}/repos/${id}`);
    if (page.url().includes('/sign-in')) await signIn(page, w.sluice.url, 'Ada', w.sluice.config.adminToken);
    await page.waitForURL(`${w.sluice.url}/repos/${id}`);
    // The sign-in cookie expires (the browser drops it); the form's CSRF cookie stays.
    await browser.context.clearCookies({ name: 'sluice_session' });
    await page.getByRole('form', { name: 'Settings' }).getByRole('button', { name: 'Save settings' }).click();
    await page.waitForURL(`${w.sluice.url}/sign-in?next=${encodeURIComponent(`/repos/${id}`)}`);
    await signIn(page, w.sluice.url, 'Ada', w.sluice.config.adminToken);
    expect(page.url()).toBe(`${w.sluice.url}/repos/${id}`);
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toContain(`${w.org.name}/expired`);
  });
});
