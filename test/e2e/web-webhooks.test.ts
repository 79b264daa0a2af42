/**
 * An organization's Web Hooks page in a real browser (Debian's chromium driven by
 * playwright-core): adding a webhook with a closure (a broken one refused with its message),
 * previewing the closure as typed, turning signing on and seeing the secret once, Ping; then
 * the delivery log of real builds with its filters, one attempt in full, and Redeliver, checked
 * against what a second real receiver got; a failed attempt as the log shows it. Screenshots of each page at a laptop's and a
 * phone's size land in test/screenshots/.
 */
import type { Locator, Page } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import { describeWithBrowser, openBrowser, signIn, type Browser } from '../support/browser';
import { startReceiver, type ReceivedRequest, type Receiver } from '../support/receiver';
import { script, World } from '../support/world';
import { eventually } from '../support/wait';

/** Reshapes each event (and a ping, which has no repository), and adds a header. */
const CLOSURE = `function transform_payload(p) {
  var name = p.repository ? p.repository.name : 'ping';
  return {
    status: 'ok',
    headers: { 'X-Team': 'widgets' },
    body: { text: name + ' ' + p.event + ': ' + p.status, event: p.event, session: p.session },
  };
}`;

const PASSWORD = 'hook-pass-do-not-show';

describeWithBrowser('web-webhooks.test.ts')('the Web Hooks page', () => {
  let w: World;
  let second: Receiver;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    w = await World.start();
    second = await startReceiver();
    browser = await openBrowser();
    page = browser.page;
  });
  afterAll(async () => {
    await browser?.close();
    await second?.close();
    await w?.stop();
  });

  /** The card of the webhook whose URL is `url`. */
  const card = (url: string): Locator => page.locator('section[data-webhook]').filter({ has: page.locator('h2', { hasText: url }) });
  const alertText = () => page.getByRole('alert').first().textContent();
  const ofXid = (xid: string) => (reqs: ReceivedRequest[]) => reqs.filter((r) => r.headers['x-sluice-delivery'] === xid);

  it('adds a webhook with a closure, previews it, shows its secret once, pings it; logs real builds; redelivers an attempt', async () => {
    const base = w.sluice.url;
    await page.goto(`${base}/orgs`);
    await signIn(page, base, 'Ada', w.sluice.config.adminToken);
    await page.waitForURL(`${base}/orgs`);
    await page.locator(`[data-org="${w.org.name}"]`).getByRole('link', { name: 'Web hooks' }).click();
    await page.waitForURL(`${base}/orgs/${w.org.name}/webhooks`);
    await expect(page.getByRole('heading', { name: `Web hooks of ${w.org.name}` }).isVisible()).resolves.toBe(true);
    await expect(card(w.receiver.url).count()).resolves.toBe(1);

    // A closure that does not compile is refused with its message; what was typed stays, but the password.
    const add = page.getByRole('form', { name: 'Add a web hook' });
    await add.getByLabel('URL').fill(second.url);
    await add.getByLabel('Username').fill('hooks');
    await add.getByLabel('Password').fill(PASSWORD);
    await add.getByLabel('Closure').fill('function transform_payload(p) { return {');
    const [refused] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST'),
      add.getByRole('button', { name: 'Add web hook' }).click(),
    ]);
    expect(refused.status()).toBe(400);
    await expect(alertText()).resolves.toMatch(/^closure: .+/);
    await expect(add.getByLabel('URL').inputValue()).resolves.toBe(second.url);
    await expect(add.getByLabel('Closure').inputValue()).resolves.toBe('function transform_payload(p) { return {');
    await expect(add.getByLabel('Password').inputValue()).resolves.toBe('');
    await expect(add.locator('[data-password-again]').textContent()).resolves.toContain('type it again');
    expect(await page.content()).not.toContain(PASSWORD);

    // A good one, sent with the keyboard.
    await add.getByLabel('Closure').fill(CLOSURE);
    await add.getByLabel('Password').fill(PASSWORD);
    await add.getByLabel('URL').press('Enter');
    await page.waitForURL(/\/webhooks\?saved=\d+#webhook-\d+$/);
    const hook = card(second.url);
    const id = Number(await hook.getAttribute('data-webhook'));
    await expect(hook.locator('.facts').textContent()).resolves.toMatch(/active[\s\S]*not signed[\s\S]*basic auth as hooks, password set[\s\S]*closure, 8 lines/);
    await expect(hook.getByLabel('Closure').inputValue()).resolves.toBe(CLOSURE);
    expect(await page.content()).not.toContain(PASSWORD);

    // Preview of a stop event: the transformed body beside the editor, credentials redacted.
    // A password typed before it is not shown again, and the page says to type it again.
    await expect(hook.locator('[data-password-again]').count()).resolves.toBe(0);
    await hook.getByLabel('Password', { exact: true }).fill('typed-before-preview');
    await hook.getByLabel('Sample event').selectOption('stop');
    await hook.getByRole('button', { name: 'Preview' }).click();
    await page.waitForURL(`${base}/webhooks/${id}/preview#preview-${id}`);
    await expect(hook.getByLabel('Password', { exact: true }).inputValue()).resolves.toBe('');
    await expect(hook.locator('[data-password-again]').textContent()).resolves.toMatch(/type it again before Save, or the one set is kept/);
    expect(await page.content()).not.toContain('typed-before-preview');
    const preview = hook.locator('[data-preview]');
    await expect(preview.getByRole('status').textContent()).resolves.toContain('returned status "ok"');
    expect(JSON.parse((await preview.locator('[data-preview-body]').textContent())!)).toEqual({ text: 'example stop: passed', event: 'stop', session: 1234 });
    const headers = (await preview.locator('[data-preview-headers]').textContent())!;
    expect(headers).toContain('x-team: widgets');
    expect(headers).toContain('authorization: [redacted]');
    await browser.screenshots('webhooks');

    // A closure as typed, not saved: the preview runs it; the saved one stays.
    await hook.getByLabel('Closure').fill(CLOSURE.replace("name + ' '", "'DRAFT ' + name + ' '"));
    await hook.getByLabel('Sample event').selectOption('first-fail');
    await hook.getByRole('button', { name: 'Preview' }).click();
    await expect(preview.locator('[data-preview-body]').textContent()).resolves.toContain('DRAFT example first-fail: running');
    await hook.getByLabel('Closure').fill('function transform_payload(p) { throw new Error("nope") }');
    await hook.getByRole('button', { name: 'Preview' }).click();
    await expect(preview.getByRole('status').textContent()).resolves.toMatch(/The closure failed \(throw\).*nope/s);
    await page.goto(`${base}/orgs/${w.org.name}/webhooks`);
    await expect(hook.getByLabel('Closure').inputValue()).resolves.toBe(CLOSURE);

    // Signing on: the secret is shown once, in the answer itself (not in its address).
    await hook.getByLabel('Sign requests').check();
    await hook.getByRole('button', { name: 'Save' }).click();
    const secretField = page.getByRole('textbox', { name: 'Signing secret' });
    const secret = await secretField.inputValue();
    expect(secret).toMatch(/^whsec_/);
    await expect(page.getByRole('alert').textContent()).resolves.toContain('it will not be shown again');
    expect(page.url()).toBe(`${base}/webhooks/${id}#webhook-${id}`);
    await browser.screenshots('webhook-secret');
    await page.goto(`${base}/orgs/${w.org.name}/webhooks`);
    await expect(secretField.count()).resolves.toBe(0);
    expect(await page.content()).not.toContain(secret);
    await expect(hook.locator('.facts').textContent()).resolves.toContain('signed');

    // Ping: the attempt's page; the receiver got it signed with that secret, body as the closure made it.
    await hook.getByRole('button', { name: `Ping webhook #${id}` }).click();
    await page.waitForURL(/\/deliveries\/\d+$/);
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toMatch(/^Attempt 1 of ping\s+delivered$/);
    const [ping] = await second.waitFor((reqs) => reqs.length === 1);
    expect(new Webhook(secret).verify(ping!.body, ping!.headers as Record<string, string>)).toMatchObject({ text: 'ping ping: undefined', event: 'ping' });
    await page.getByRole('link', { name: 'Delivery log' }).first().click();
    await page.waitForURL(`${base}/webhooks/${id}/deliveries`);
    await expect(page.locator('tr[data-delivery]').count()).resolves.toBe(1);
    await expect(page.locator('tr[data-delivery] [data-label="Event"]').textContent()).resolves.toBe('ping');

    // A real build: its events are logged (newest first), filtered by event.
    const repo = await w.makeRepo({ 'ok_test.sh': script('true') }, { suite: { branch: 'master', test_pattern: '*_test.sh' } });
    const build = await w.build(repo);
    const events = await w.eventsOf(build.session, second);
    expect(events.map((e) => e.event)).toEqual(['received', 'start', 'test', 'stop']);
    const eventsShown = () => page.locator('tr[data-delivery]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-event')));
    // The receiver has `stop` a moment before its attempt is logged: reload until it is.
    await eventually('the stop attempt to be logged', async () => {
      await page.reload();
      return (await eventsShown()).length === 5;
    });
    await expect(eventsShown()).resolves.toEqual(['stop', 'test', 'start', 'received', 'ping']);
    await browser.screenshots('deliveries');
    await page.getByLabel('Event').selectOption('stop');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/event=stop/);
    await expect(eventsShown()).resolves.toEqual(['stop']);
    await page.getByLabel('Event').selectOption('');
    await page.getByLabel('Outcome').selectOption('dropped');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/outcome=dropped/);
    await expect(page.getByText('No attempts match these filters.').isVisible()).resolves.toBe(true);
    await page.getByRole('link', { name: 'Clear' }).click();
    await page.waitForURL(`${base}/webhooks/${id}/deliveries`);

    // One attempt in full: what was sent (redacted) and what came back.
    const stopRow = page.locator('tr[data-event="stop"]');
    await stopRow.getByRole('link', { name: /^Attempt 1 of stop/ }).click();
    await page.waitForURL(/\/deliveries\/\d+$/);
    const stopPage = page.url();
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toMatch(/^Attempt 1 of stop\s+delivered$/);
    const xid = (await page.locator('[data-xid]').textContent())!;
    expect(xid).toBe(second.requests.find((r) => r.headers['x-sluice-event'] === 'stop')!.headers['x-sluice-delivery']);
    expect(JSON.parse((await page.locator('[data-request-body]').textContent())!)).toEqual({ text: `${repo.name} stop: passed`, event: 'stop', session: build.session });
    const sent = (await page.locator('[data-request-headers]').textContent())!;
    expect(sent).toContain('x-team: widgets');
    expect(sent).toContain('authorization: [redacted]');
    expect(sent).toContain('webhook-signature: [redacted]');
    await expect(page.locator('[data-response-body]').textContent()).resolves.toBe('ok');
    const html = await page.content();
    expect(html).not.toContain(PASSWORD);
    expect(html).not.toContain(secret);
    await browser.screenshots('delivery');

    // Redeliver: attempt 2 of the same event, same xid, and the receiver got it again.
    await page.getByRole('button', { name: 'Redeliver' }).click();
    await page.waitForURL((url) => /\/deliveries\/\d+$/.test(url.pathname) && url.href !== stopPage);
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toMatch(/^Attempt 2 of stop\s+delivered$/);
    await expect(page.locator('[data-xid]').textContent()).resolves.toBe(xid);
    const twice = ofXid(xid)(await second.waitFor((reqs) => ofXid(xid)(reqs).length === 2));
    expect(twice[1]!.body).toBe(twice[0]!.body);
    await page.getByRole('link', { name: 'Delivery log' }).first().click();
    await page.waitForURL(`${base}/webhooks/${id}/deliveries`);
    await expect(eventsShown()).resolves.toEqual(['stop', 'stop', 'test', 'start', 'received', 'ping']);
  });

  it('shows a failed attempt, rotates a secret, deletes after a second click, and says what does not exist', async () => {
    const base = w.sluice.url;
    const { id } = await w.sluice.admin<{ id: number }>('POST', `/api/v1/orgs/${w.org.id}/webhooks`, { url: `${second.url}/rotated`, sign: true });
    await page.goto(`${base}/orgs/${w.org.name}/webhooks`);
    const hook = page.locator(`section[data-webhook="${id}"]`);

    // A receiver that answers 500: a ping is tried once, and the log says what came back.
    second.respondWith(() => ({ status: 500, body: 'receiver is down' }));
    try {
      await hook.getByRole('button', { name: `Ping webhook #${id}` }).click();
      await page.waitForURL(/\/deliveries\/\d+$/);
    } finally {
      second.respondWith(() => ({ status: 200, body: 'ok' }));
    }
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toMatch(/^Attempt 1 of ping\s+gave up$/);
    await expect(page.locator('[data-response-body]').textContent()).resolves.toBe('receiver is down');
    await page.getByRole('link', { name: 'Delivery log' }).first().click();
    await page.getByLabel('Outcome').selectOption('gave_up');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/outcome=gave_up/);
    await expect(page.locator('tr[data-delivery] [data-label="Answer"]').textContent()).resolves.toContain('HTTP 500');
    await page.goto(`${base}/orgs/${w.org.name}/webhooks`);
    await hook.getByRole('button', { name: `Rotate the signing secret of webhook #${id}` }).click();
    const rotated = await page.getByRole('textbox', { name: 'Signing secret' }).inputValue();
    expect(rotated).toMatch(/^whsec_/);

    // Delete: the first click only opens the confirmation.
    await hook.getByText(`Delete webhook #${id}…`).click();
    await hook.getByRole('button', { name: `Yes, delete webhook #${id}` }).click();
    await page.waitForURL(/\?deleted=\d+$/);
    await expect(page.getByRole('status').textContent()).resolves.toBe(`Webhook #${id} deleted, with its delivery log.`);
    await expect(hook.count()).resolves.toBe(0);

    for (const path of ['/orgs/no-such-org/webhooks', `/webhooks/${id}/deliveries`, '/deliveries/999999999', '/webhooks/x']) {
      const res = await page.goto(`${base}${path}`);
      expect([path, res?.status()]).toEqual([path, 404]);
      await expect(page.getByRole('heading', { name: 'Not found' }).isVisible()).resolves.toBe(true);
    }
  });
});
