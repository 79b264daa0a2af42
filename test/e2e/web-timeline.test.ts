/**
 * The build as a picture, in a real browser (Debian's chromium, never downloaded), on a real
 * build of a whole Sluice with two workers: a test command with `{files}` (a tiny runner
 * committed in the repository that runs each file it is given and writes JUnit XML naming each
 * file) runs the files in batches; one file fails, one fails once and passes on its retry
 * (`retry_failed: 1`). The page draws the timeline while the build runs and after it ended,
 * without a reload: the steps, both workers with their batches, the failure marked and the
 * flaky file marked, the numbers one click away; it lists the batches with what became of a
 * failed one, and the flaky file with its history. Screenshots at a laptop's and a phone's size
 * land in test/screenshots/ (not committed).
 */
import { describeWithBrowser, openBrowser, signIn, type Browser } from '../support/browser';
import { eventually } from '../support/sluice';
import { script, World } from '../support/world';

const RUNNER = `# A tiny test framework: runs each file it is given; reports each in JUnit XML, with its file.
status=0
cases=""
for f in "$@"; do
  if sh "$f"; then
    cases="$cases<testcase classname=\\"$f\\" name=\\"works\\" file=\\"$f\\" time=\\"0.3\\"/>"
  else
    status=1
    cases="$cases<testcase classname=\\"$f\\" name=\\"works\\" file=\\"$f\\"><failure message=\\"$f failed\\">assertion</failure></testcase>"
  fi
done
echo "<testsuite name=\\"tiny\\">$cases</testsuite>" > "$SLUICE_REPORT_DIR/report.xml"
exit $status`;

describeWithBrowser('web-timeline.test.ts')('the build as a picture', () => {
  let w: World;
  let browser: Browser;

  beforeAll(async () => {
    w = await World.start();
    browser = await openBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await w?.stop();
  });

  it('draws two workers’ batches and files over time, marks the failure and the flaky file, and keeps the numbers one click away', async () => {
    const { page, screenshots } = browser;
    const files: Record<string, ReturnType<typeof script>> = { 'run.sh': script(RUNNER) };
    // Forty files that no build has timed yet: about four batches a worker of about five files each.
    for (let i = 1; i <= 38; i += 1) files[`t${String(i).padStart(2, '0')}_test.sh`] = script('sleep 0.1');
    files['bad_test.sh'] = script('sleep 0.1; echo "expected 2, got 3"; exit 1');
    // Fails in its batch, passes when run again (in the same worker's checkout).
    files['flaky_test.sh'] = script('sleep 0.1; if [ -e .flaky-ran ]; then echo passes now; else touch .flaky-ran; echo fails the first time; exit 1; fi');
    const repo = await w.makeRepo(files, {
      suite: { branch: 'master', test_pattern: '*_test.sh', test_command: './run.sh {files}', workers: 2, retry_failed: 1 },
    });

    await signIn(page, w.sluice.url, 'Ada', w.sluice.config.adminToken);
    const build = await w.build(repo);
    await page.goto(`${w.sluice.url}/builds/${build.session}`);
    // Live: the page changes without a reload (a mark set now would be lost by one).
    await page.evaluate('window.sluiceMark = 1');
    const picture = page.getByRole('img', { name: `Timeline of build #${build.session}` });
    await expect(picture.isVisible()).resolves.toBe(true);

    // While it runs, the picture follows it: a worker's batch running.
    await page.locator('[data-timeline-picture] rect.tl-batch.tl-running').first().waitFor({ timeout: 60_000 });
    // The same picture (read at once: the next update may end the build) says the tests are the step under way.
    const whileRunning = (await page.evaluate(
      `(() => { const svg = document.querySelector('[data-timeline-picture] svg'); return svg.querySelector('rect.tl-batch.tl-running') ? [...svg.querySelectorAll('title')].map((t) => t.textContent) : null; })()`,
    )) as string[] | null;
    if (whileRunning) expect(whileRunning).toEqual(expect.arrayContaining([expect.stringMatching(/^tests: [\d.]+ m?s so far, /)]));
    await screenshots('build-timeline-running');

    expect((await w.eventsOf(build.session)).at(-1)).toMatchObject({ status: 'failed', workers: 2 });
    await page.locator('h1 [data-status]', { hasText: 'failed' }).waitFor();
    await page.locator('[data-timeline-picture] use.tl-mark-flaky').waitFor();
    expect(await page.evaluate('window.sluiceMark === 1')).toBe(true);

    // The steps of spec §6 as a waterfall, then both workers, each with its batches.
    const svg = page.locator('[data-timeline-picture] svg');
    const tooltips = await svg.locator('title').allTextContents();
    expect(tooltips).toEqual(expect.arrayContaining([expect.stringMatching(/^checkout \(until setup\): /), expect.stringMatching(/^tests \(until post_build\): /)]));
    const labels = await svg.locator('text.tl-lane').allTextContents();
    expect(labels).toEqual([expect.stringMatching(/^worker 1 · \d+ files? in \d+ batch(es)?$/), expect.stringMatching(/^worker 2 · \d+ files? in \d+ batch(es)?$/)]);
    expect(tooltips.filter((t) => /^batch \d+ on worker 1: /.test(t)).length).toBeGreaterThan(0);
    expect(tooltips.filter((t) => /^batch \d+ on worker 2: /.test(t)).length).toBeGreaterThan(0);
    // The failure marked: its batch, and its run again alone; the flaky file marked, passing on its second run.
    await expect(svg.locator('use.tl-mark-failed').count()).resolves.toBeGreaterThan(0);
    expect(tooltips).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^batch \d+ on worker \d: \d+ files?, failed \(exit code 1\), .*by (its|their) JUnit results/),
        expect.stringMatching(/^bad_test\.sh: failed, 2 runs, /),
        expect.stringMatching(/^flaky_test\.sh: passed \(flaky\), 2 runs, /),
      ]),
    );
    await expect(svg.locator('rect.tl-failed').count()).resolves.toBeGreaterThan(0);
    await expect(svg.locator('rect.tl-flaky').count()).resolves.toBe(1);
    await expect(svg.locator('desc').textContent()).resolves.toMatch(/2 workers: worker 1 \d+ files? in [\d.]+ m?s, worker 2 .* 1 file failed\. 1 file flaky\./);

    // The flaky file, listed with its history; in the table, flagged, with its runs and batch.
    await expect(page.locator('[data-flaky] li').allTextContents()).resolves.toEqual([
      "flaky_test.sh: passed on run 2; flaky in 1 of its 1 run in the suite's last 1 build",
    ]);
    const flakyRow = page.locator('tr[data-file="flaky_test.sh"]');
    await expect(flakyRow.locator('.badge-flaky').textContent()).resolves.toBe('flaky');
    await expect(flakyRow.locator('td[data-label="Runs"]').textContent()).resolves.toBe('2');
    // Every file ran in a batch; the batches say what became of them.
    for (const cell of await page.locator('[data-tests] td[data-label="Batch"]').allTextContents()) expect(cell).toMatch(/^#\d+$/);
    const batches = page.locator('[data-batches] tr');
    await expect(batches.count()).resolves.toBeGreaterThan(1);
    await expect(page.locator('[data-batches]').textContent()).resolves.toMatch(/failed\s*exit code 1.*the batch failed \(exit code 1\): \d+ files? by (its|their) JUnit results/s);

    // The numbers, one click away: every timing key with when and how long, each worker's span.
    const numbers = page.locator('details.tl-numbers');
    await expect(page.locator('[data-timeline] tr').first().isVisible()).resolves.toBe(false);
    await numbers.locator('summary').click();
    const keys = await page.locator('[data-timeline] tr td[data-label="Timing key"]').allTextContents();
    expect(keys[0]).toBe('ci_received_at');
    expect(keys).toEqual(expect.arrayContaining(['setup', 'exec', 'post_build', 'done']));
    await expect(page.locator('[data-timeline] tr', { hasText: 'post_build' }).first().textContent()).resolves.toMatch(/post_buildtests\+[\d.]+ m?s[\d.]+ m?s/);
    const lanes = page.locator('[data-lanes] tr');
    await expect(lanes.count()).resolves.toBe(2);
    await expect(lanes.nth(0).locator('td[data-label="Worker"]').textContent()).resolves.toBe('1');
    const failedPerLane = (await page.locator('[data-lanes] td[data-label="Failed"]').allTextContents()).map(Number);
    expect(failedPerLane.reduce((a, b) => a + b, 0)).toBe(1);
    await screenshots('build-timeline');

    // The session view says the same.
    type View = { status: string; batches: { worker: number }[]; flaky_files: unknown[]; tests: { path: string }[] };
    const session = (id: number) => w.sluice.admin<View>('GET', `/api/v1/sessions/${id}`);
    const view = await session(build.session);
    expect(new Set(view.batches.map((b) => b.worker))).toEqual(new Set([1, 2]));
    expect(view.flaky_files).toEqual([{ path: 'flaky_test.sh', attempts: 2, flaked: 1, ran: 1, builds: 1 }]);
    expect(view.tests.find((t) => t.path === 'flaky_test.sh')).toMatchObject({ status: 'passed', flaky: true, attempts: 2, batch: expect.any(Number) });

    // A second build: the history counts it.
    await eventually('nothing running', async () => (await session(build.session)).status === 'failed');
    const again = await w.build(repo, { force: true });
    await w.eventsOf(again.session);
    expect((await session(again.session)).flaky_files).toEqual([{ path: 'flaky_test.sh', attempts: 2, flaked: 2, ran: 2, builds: 2 }]);
  });
});
