/**
 * A build's test cases and colours in a real browser (Debian's chromium, never downloaded), on
 * a real build of a whole Sluice (issue 37). The repository's tiny framework runs its files in
 * batches and, like jest with jest-junit, prints coloured output (ANSI escapes) and writes a
 * JUnit report with each case's file and a stack trace naming its line. The build page lists the
 * cases failing first with where each failed, filters and searches them, and shows the colours
 * as colours (failure box, live output) with no raw escape on the page; a file that fails
 * quietly (its report says why, its output nothing) shows its case's failure in its box. The
 * report page strips the colours; the suite's page charts the build and lists its failing tests. Muted from the build page, the
 * failing tests leave the next build passed, listed as muted. Screenshots land in test/screenshots/ (not committed).
 */
import { describeWithBrowser, openBrowser, signIn, type Browser } from '../support/browser';
import { script, World } from '../support/world';

const RUNNER = `# Runs each file it is given; each prints its <testcase> elements on fd 3, its output on stdout.
status=0; cases=""
for f in "$@"; do
  if ! out=$(FILE="$f" sh "$f" 3>&1 1>>"$HOME/console.log"); then status=1; fi
  cases="$cases$out"
done
cat "$HOME/console.log" 2>/dev/null; rm -f "$HOME/console.log"
echo "<testsuite name=\\"tiny\\">$cases</testsuite>" > "$SLUICE_REPORT_DIR/report.xml"
exit $status`;

const ESC = '\\033';
const passing = (name: string) =>
  script(`printf '${ESC}[32m✓${ESC}[39m ${name} works\\n'\nprintf '<testcase classname="${name}" name="works" time="0.01" file="%s"/>' "$FILE" >&3`);
/**
 * Fails, jest-style: a red FAIL and grey line numbers on stdout, the stack trace in the report.
 * Its case names no file (the batch cannot pin it), so it runs again alone: its output is its own.
 */
const failing = script(
  [
    `printf '${ESC}[41m${ESC}[1m FAIL ${ESC}[22m${ESC}[49m test/sum_test.sh\\n${ESC}[90m  3 |${ESC}[39m expect(sum(1, 2)).toBe(4)\\n'`,
    `printf '<testcase classname="sum" name="adds up" time="0.02"><failure message="expected 4, received 3">Error: expected 4, received 3\\n    at Object.&lt;anonymous&gt; (%s/%s:3:17)</failure></testcase>' "$PWD" "$FILE" >&3`,
    'exit 1',
  ].join('\n'),
);
/** Prints nothing; only its report says what failed (mocha's xunit reporter to a file, naming no file). */
const quiet = script(`printf '<testcase classname="quiet" name="says nothing"><failure message="only the report knows">at %s/%s:2:1</failure></testcase>' "$PWD" "$FILE" >&3\nexit 1`);

describeWithBrowser('web-cases.test.ts')('test cases and colours on the build page', () => {
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

  it('lists the cases failing first with their line, renders colours, and explains a quiet failure', async () => {
    const { page, screenshots } = browser;
    const files: Record<string, ReturnType<typeof script>> = { 'run.sh': script(RUNNER), 'test/sum_test.sh': failing, 'test/quiet_test.sh': quiet };
    for (const name of ['alpha', 'beta', 'gamma', 'delta']) files[`test/${name}_test.sh`] = passing(name);
    const repo = await w.makeRepo(files, { suite: { branch: 'master', test_pattern: 'test/*_test.sh', test_command: './run.sh {files}', workers: 1 } });

    await signIn(page, w.sluice.url, 'Ada', w.sluice.config.adminToken);
    const build = await w.build(repo);
    expect((await w.eventsOf(build.session)).at(-1)).toMatchObject({ status: 'failed' });
    await page.goto(`${w.sluice.url}/builds/${build.session}`);

    // The cases, failing first, each failure at its file and line.
    const rows = page.locator('#cases tr[data-case]');
    await expect(rows.count()).resolves.toBe(6);
    const firstTwo = [await rows.nth(0).innerText(), await rows.nth(1).innerText()].sort();
    expect(firstTwo[0]).toMatch(/^failed[\s\S]*quiet › says nothing[\s\S]*test\/quiet_test\.sh:2/);
    expect(firstTwo[1]).toMatch(/^failed[\s\S]*sum › adds up[\s\S]*test\/sum_test\.sh:3/);
    await expect(page.locator('[data-cases-total]').innerText()).resolves.toContain('6 cases, failing first');

    // The failure box of the file that printed colours: colours as spans, no raw escape.
    const box = page.locator('[data-failures] article', { hasText: 'test/sum_test.sh' });
    await expect(box.locator('span.ansi-bold').first().innerText()).resolves.toBe(' FAIL ');
    await expect(box.locator('span.ansi-bright-black-fg').first().innerText()).resolves.toBe('  3 |');
    const red = (await page.evaluate(`getComputedStyle(document.querySelector('[data-failures] span.ansi-red-bg')).backgroundColor`)) as string;
    expect(red).toMatch(/^rgb\((1\d\d|2\d\d), \d{1,2}, \d{1,2}\)$/);
    // The quiet file's box says what its report said.
    await expect(page.locator('[data-failures] article', { hasText: 'test/quiet_test.sh' }).innerText()).resolves.toContain('quiet › says nothing (test/quiet_test.sh:2)\nonly the report knows');
    expect(await page.evaluate(`document.body.innerHTML.includes('\\u001b')`)).toBe(false);
    await screenshots('build-cases');

    // Filtered and searched, by the form.
    await page.selectOption('select[name=cases]', 'passed');
    await page.fill('input[name=q]', 'beta');
    await Promise.all([page.waitForURL(/cases=passed/), page.click('#cases button[type=submit]')]);
    await expect(rows.count()).resolves.toBe(1);
    await expect(rows.nth(0).innerText()).resolves.toContain('beta › works');

    // The suite's page: the build as a bar of its chart, and the tests that failed in it.
    await page.goto(`${w.sluice.url}/builds/${build.session}`);
    await Promise.all([page.waitForURL(/\/repos\/\d+\/suites\/\d+$/), page.getByRole('link', { name: 'Its suite’s history' }).click()]);
    const suitePage = page.url();
    await expect(page.getByRole('img', { name: /^Test span of the last build of Suite master/ }).isVisible()).resolves.toBe(true);
    await expect(page.locator(`svg.sc a[href="/builds/${build.session}"] rect.sc-failed`).count()).resolves.toBe(1);
    await expect(page.locator('[data-failing-tests]').innerText()).resolves.toMatch(/sum › adds up[\s\S]*failed in 1 of the last 1 build that ran it/);
    await screenshots('suite-page');
    // A case's history, from its row on the build page.
    await page.goto(`${w.sluice.url}/builds/${build.session}?cases=failing#cases`);
    await Promise.all([page.waitForURL(/#history$/), page.locator('#cases tr[data-case]', { hasText: 'adds up' }).getByRole('link', { name: 'history' }).click()]);
    await expect(page.locator('[data-history-summary]').innerText()).resolves.toBe('Failed in 1 of the last 1 build that ran it.');

    // Muted from the build page, both failing tests leave the next build passed, listed as muted.
    await page.goto(`${w.sluice.url}/builds/${build.session}?cases=failing#cases`);
    for (let left = 2; left > 0; left--) {
      await page.locator('#cases form[data-mute] button').first().click();
      // The page comes back with one button fewer.
      await page.locator('#cases form[data-mute]').nth(left - 1).waitFor({ state: 'detached' });
    }
    const next = await w.build(repo, { branch: 'master', force: true });
    expect((await w.eventsOf(next.session)).at(-1)).toMatchObject({ status: 'passed' });
    await page.goto(`${w.sluice.url}/builds/${next.session}?cases=failing#cases`);
    await expect(page.locator('#cases tr[data-case] .status-muted').count()).resolves.toBe(2);
    await page.goto(`${suitePage}#muted`);
    await expect(page.locator('[data-muted] tbody tr').allInnerTexts()).resolves.toEqual([expect.stringContaining('Ada'), expect.stringContaining('Ada')]);
    await screenshots('suite-muted');

    // The report keeps the words and drops the colours.
    const report = await fetch(`${(await w.eventsOf(build.session)).at(-1)!.url as string}`).then((r) => r.text());
    expect(report).toContain('FAIL  test/sum_test.sh');
    expect(report).not.toContain('\u001b');
  });
});
