/**
 * Live output end to end (issue 22), on a whole Sluice with two runners: a build's two lanes,
 * each on its own runner, run a slow file that prints lines over a few seconds, and both are
 * followed through `GET /api/v1/sessions/:id/output?follow=true` while they run, masked; then,
 * in a real browser (Debian's chromium, never downloaded), the build page shows a running file's
 * output growing without a reload, and stays usable beside a file that prints megabytes.
 */
import http from 'node:http';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { describeWithBrowser, openBrowser, signIn, type Browser } from '../support/browser';
import { eventually } from '../support/wait';
import { script, World } from '../support/world';

let w: World;

beforeAll(async () => {
  // One slot a runner: each of the build's two lanes runs on a runner of its own.
  w = await World.start({ runners: 2, runnerSlots: 1 });
});
afterAll(async () => {
  await w?.stop();
});

interface Followed {
  /** The events so far, parsed. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  events(): any[];
  ended: Promise<void>;
}

/** Follows a session's output as NDJSON with the admin token. */
function follow(session: number): Promise<Followed> {
  return new Promise((resolve, reject) => {
    const req = http.get(`${w.sluice.url}/api/v1/sessions/${session}/output?follow=true`, { headers: { authorization: `Bearer ${w.sluice.config.adminToken}` } }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`output answered ${res.statusCode}`));
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      const ended = new Promise<void>((done) => res.on('close', () => done()));
      resolve({ events: () => text.split('\n').filter(Boolean).map((l) => JSON.parse(l)), ended });
    });
    req.on('error', reject);
  });
}

/** A test file that prints `<name> line <i>` every 0.3 s, `lines` times, then marks that it ended. */
const slow = (name: string, lines: number, done: string) =>
  script(`i=1\nwhile [ $i -le ${lines} ]; do echo "${name} line $i with $API_TOKEN"; i=$((i+1)); sleep 0.3; done\ntouch ${done}`);

const TOKEN = 'tok_live_e2e_5a4b3c2d1e';

describe('GET /api/v1/sessions/:id/output on a build over two runners', () => {
  it('follows both lanes while their files run, masked, each file its own source, then ends with the build', async () => {
    const doneA = path.join(w.tmp, 'a.done');
    const doneB = path.join(w.tmp, 'b.done');
    const repo = await w.makeRepo(
      { 'test/a_test.sh': slow('alpha', 12, doneA), 'test/b_test.sh': slow('beta', 12, doneB) },
      { suite: { branch: 'master', test_pattern: 'test/*_test.sh', workers: 2 } },
    );
    await w.sluice.admin('PUT', `/api/v1/repos/${repo.id}/secrets/API_TOKEN`, { value: TOKEN });
    const { session } = await w.build(repo);
    const followed = await follow(session);

    // Lines of both files arrive while both still run (neither has written its marker): the
    // two lanes ran at once, so on two runners (one slot each), and both were followed live.
    const whenBothSeen = await eventually(
      'a line of each file',
      async () => {
        const text = followed.events().filter((e) => e.event === 'output').map((e) => e.text).join('');
        return text.includes('alpha line 2 with ****') && text.includes('beta line 2 with ****') && { aRunning: !existsSync(doneA), bRunning: !existsSync(doneB) };
      },
      60_000,
    );
    expect(whenBothSeen).toEqual({ aRunning: true, bRunning: true });

    await followed.ended;
    const events = followed.events();
    expect(events.at(-1)).toEqual({ event: 'done', status: 'passed' });
    const output = events.filter((e) => e.event === 'output');
    expect(output.map((e) => e.seq)).toEqual(output.map((_, i) => i + 1));
    expect(JSON.stringify(events)).not.toContain(TOKEN);
    for (const [name, file] of [['alpha', 'test/a_test.sh'], ['beta', 'test/b_test.sh']]) {
      const mine = output.filter((e) => e.source.kind === 'file' && e.source.path === file);
      expect(mine.map((e) => e.text).join('')).toBe(Array.from({ length: 12 }, (_, i) => `${name} line ${i + 1} with ****\n`).join(''));
      expect(mine.at(-1).end).toMatchObject({ status: 'passed', exit_code: 0 });
    }
    // Each file on a lane of its own.
    expect(new Set(output.map((e) => e.source.worker))).toEqual(new Set([1, 2]));
    expect((await w.session(session)).tests.map((t) => t.status)).toEqual(['passed', 'passed']);
  });
});

describeWithBrowser('live-output.test.ts')('the build page follows running output', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await openBrowser();
  });
  afterAll(async () => {
    await browser?.close();
  });

  it("shows a running file's output growing without a reload, and stays usable beside a file printing megabytes", async () => {
    const { page, screenshots } = browser;
    const repo = await w.makeRepo(
      {
        'test/slow_test.sh': script('i=1\nwhile [ $i -le 25 ]; do echo "tick $i: checking the widget frobnicator"; i=$((i+1)); sleep 0.3; done'),
        // About 8 MB at once, then a wait: the page gets the first 1 MiB and keeps the last 64 KiB of it.
        'test/big_test.sh': script("yes 'a long line of output from a test that prints megabytes of it, over and over again' | head -c 8000000\nsleep 5"),
      },
      { suite: { branch: 'master', test_pattern: 'test/*_test.sh', workers: 2 } },
    );
    const { session } = await w.build(repo);

    await signIn(page, w.sluice.url, 'Ada', w.sluice.config.adminToken);
    await page.goto(`${w.sluice.url}/builds/${session}`);
    const slowBox = page.locator('[data-output-key$="/test/slow_test.sh"]');
    await slowBox.locator('pre').filter({ hasText: 'tick 3:' }).waitFor({ timeout: 60_000 });
    const before = (await slowBox.locator('pre').textContent())!;
    await expect(slowBox.locator('.status').textContent()).resolves.toBe('running');
    // More lines come into the same box, while the file still runs, without a reload.
    await page.evaluate('window.notReloaded = true');
    await slowBox.locator('pre').filter({ hasText: 'tick 8:' }).waitFor({ timeout: 30_000 });
    const after = (await slowBox.locator('pre').textContent())!;
    expect(after.startsWith(before)).toBe(true);
    expect(after.length).toBeGreaterThan(before.length);
    await expect(slowBox.locator('.status').textContent()).resolves.toBe('running');
    expect(await page.evaluate('window.notReloaded')).toBe(true);

    // The big file: cut at 1 MiB, saying so, and only its last 64 KiB in the page.
    const bigBox = page.locator('[data-output-key$="/test/big_test.sh"]');
    await bigBox.locator('pre').filter({ hasText: 'live output stops after the first 1048576 bytes' }).waitFor({ timeout: 30_000 });
    const bigText = (await bigBox.locator('pre').textContent())!;
    expect(bigText.length).toBeLessThanOrEqual(64 * 1024 + 2);
    expect(bigText.startsWith('…\n')).toBe(true);
    // The page answers at once: a script round trip and the live section's whole text are small.
    const started = Date.now();
    await page.evaluate('document.querySelectorAll("[data-live-output] pre").length');
    expect(Date.now() - started).toBeLessThan(1_000);
    expect((await page.locator('[data-live-output]').textContent())!.length).toBeLessThan(3 * 64 * 1024);
    await screenshots('build-live-output');

    // The file ends: its box says how, and the page stops following when the build is over.
    await slowBox.locator('.status-passed').waitFor({ timeout: 60_000 });
    await expect(slowBox.locator('pre').textContent()).resolves.toContain('tick 25: checking the widget frobnicator');
    await page.locator('[data-status].status-passed').waitFor({ timeout: 60_000 });
    await screenshots('build-live-output-ended');
  });
});
