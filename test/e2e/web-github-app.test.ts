/**
 * Sluice as a GitHub App in a real browser (issue 38), on a whole Sluice, against a fake GitHub
 * held to its documentation (test/support/fakeGitHubApp.ts): an admin makes the app with GitHub's
 * manifest flow from the Hosting sites page, GitHub's `installation` event brings the
 * installation's repositories, one is activated with a click, and a push through the app's one
 * webhook builds: the runner pulls over HTTP with an installation token minted for that checkout
 * and that repository alone, and the result goes back as a check run, in progress then failed,
 * with an annotation at each failing test's file and line (55: two requests). A forged delivery
 * is refused; the repository stops building through the app with one click.
 * Screenshots land in test/screenshots/ (not committed).
 */
import { describeWithBrowser, openBrowser, signIn, type Browser } from '../support/browser';
import { startFakeGitHubApp, type FakeGitHubApp } from '../support/fakeGitHubApp';
import { pushCommit, revParse } from '../support/gitRepo';
import { eventually } from '../support/wait';
import { script, sessionEvents, World } from '../support/world';

/** Runs the test files given, writing a JUnit report: `test/bad.sh` fails 55 cases, each at its own line. */
const RUNNER = script(`status=0; cases=""
for f in "$@"; do
  if [ "$f" = test/bad.sh ]; then
    status=1
    for i in $(seq 1 55); do cases="$cases<testcase classname=\\"bad\\" name=\\"case $i\\" file=\\"$f\\"><failure message=\\"boom $i\\">Error: boom $i
    at $f:$i:1</failure></testcase>"; done
  else
    cases="$cases<testcase classname=\\"$f\\" name=\\"works\\" time=\\"0.01\\" file=\\"$f\\"/>"
  fi
done
echo "<testsuite name=\\"tiny\\">$cases</testsuite>" > "$SLUICE_REPORT_DIR/report.xml"
exit $status`);

describeWithBrowser('web-github-app.test.ts')('a GitHub App on the web', () => {
  let w: World;
  let browser: Browser;
  let github: FakeGitHubApp;
  let bare: string;

  beforeAll(async () => {
    w = await World.start();
    browser = await openBrowser();
    bare = (await w.makeBareRepo('shop', { 'run.sh': RUNNER, 'test/a.sh': { content: 'true\n' } })).bare;
    github = await startFakeGitHubApp({ repos: [{ id: 501, fullName: 'acme/shop', defaultBranch: 'master', bare }] });
  });
  afterAll(async () => {
    await browser?.close();
    await github?.close();
    await w?.stop();
  });
  afterEach(() => expect(github.problems).toEqual([]));

  it('makes the app, activates a repository with a click, builds its push over an installation token and reports a check run with annotations', async () => {
    const { page, screenshots } = browser;
    await signIn(page, w.sluice.url, 'Ada Admin', w.sluice.config.adminToken);

    // The manifest flow: Sluice's form, GitHub's page, back to Sluice with the app made.
    await page.goto(`${w.sluice.url}/orgs/${w.org.name}/connections`);
    await page.getByLabel('GitHub address').fill(github.webUrl);
    await page.getByLabel('GitHub organization').fill('acme');
    await page.getByRole('button', { name: 'Create a GitHub App' }).click();
    await page.getByRole('button', { name: 'Create the app on GitHub' }).waitFor();
    await screenshots('github-app-manifest');
    await page.getByRole('button', { name: 'Create the app on GitHub' }).click();
    await page.waitForURL(/\/github-apps\/[0-9]+\?created$/);
    expect(await page.getByRole('status').textContent()).toContain('GitHub made the app');
    expect(await page.locator('#install').getAttribute('href')).toBe(`${github.webUrl}/apps/${github.app()!.slug}/installations/new`);

    // Installed at GitHub (its own pages, not faked): the event brings the repository.
    const { status } = await github.install('acme', [501]);
    expect(status).toBe(200);
    await page.reload();
    await screenshots('github-app');
    await page.locator('tr[data-site-repo="acme/shop"]').getByRole('button', { name: 'Activate' }).click();
    await page.waitForURL(/\/repos\/[0-9]+\?saved=app-activated/);
    const repoId = Number(/\/repos\/([0-9]+)/.exec(page.url())![1]);
    expect(await page.getByRole('status').textContent()).toContain('check runs');
    expect(await page.locator('#github-app').textContent()).toContain('acme/shop');
    await screenshots('github-app-repo');

    // A suite; a push at GitHub, delivered through the app's one webhook.
    await w.sluice.admin('POST', `/api/v1/repos/${repoId}/suites`, { branch: 'master', test_pattern: 'test/*.sh', test_command: './run.sh {files}' });
    const before = await revParse(bare, 'master');
    const after = await pushCommit(bare, { 'test/bad.sh': { content: 'false\n' } }, 'a failing test');
    expect(await github.push(501, { ref: 'refs/heads/master', before, after })).toBe(200);
    const session = await eventually(
      'the push’s session',
      async () => (await w.sluice.admin<{ session: number }[]>('GET', `/api/v1/sessions?repo=${encodeURIComponent(`${w.org.name}/shop`)}`))[0]?.session ?? null,
      30_000,
    );
    const stop = (await sessionEvents(w.receiver, session, 90_000)).at(-1)!;
    expect(stop).toMatchObject({ status: 'failed', commit_id: after });

    // Pulled with a token for that repository alone, read-only.
    const pulls = github.clones.filter((c) => c.repo === 'acme/shop');
    expect(pulls.length).toBeGreaterThan(0);
    for (const c of pulls) expect(github.tokens.get(c.token)).toMatchObject({ repositoryIds: [501], permissions: { contents: 'read' } });

    // The check run: in progress, then failed, with the 55 failures at their lines.
    const run = await eventually('a completed check run', async () => (github.checkRuns[0]?.status === 'completed' ? github.checkRuns[0] : null), 30_000);
    expect(github.checkRuns).toHaveLength(1);
    expect(run).toMatchObject({ repo: 'acme/shop', name: 'sluice/default', head_sha: after, conclusion: 'failure', details_url: expect.stringContaining(String(session)) });
    expect(run.requests[0]).toMatchObject({ status: 'in_progress' });
    expect(run.annotations).toHaveLength(55);
    expect(run.annotations[54]).toMatchObject({ path: 'test/bad.sh', start_line: 55, annotation_level: 'failure', title: 'bad case 55', message: expect.stringContaining('boom 55') });
    expect(run.output!.summary).toContain('| failed | 1 |');

    // A forged delivery is refused; the app's page shows GitHub's log of it.
    expect(await github.push(501, { ref: 'refs/heads/master', before, after }, { secret: 'a guess' })).toBe(401);
    await page.goto(`${w.sluice.url}/orgs/${w.org.name}/github-apps/${(await w.sluice.admin<{ id: number }[]>('GET', `/api/v1/orgs/${w.org.name}/github-apps`))[0]!.id}`);
    expect(await page.locator('tr[data-app="delivery"]').textContent()).toContain('401');

    // The repository's card says when the app's webhook last brought one of its events.
    await eventually(
      'the hook’s arrival on the page',
      async () => {
        await page.goto(`${w.sluice.url}/repos/${repoId}`);
        return !(await page.locator('[data-app="last-hook"]').textContent())!.includes('never');
      },
      20_000,
    );

    // No longer through the app, with one click.
    await page.getByRole('button', { name: 'Stop building through the app' }).click();
    await page.waitForURL(/saved=app-deactivated/);
    expect(await page.locator('#github-app').count()).toBe(0);
    expect((await w.sluice.admin<{ app_id: number }[]>('GET', `/api/v1/orgs/${w.org.name}/github-apps`)).map((a) => a.app_id)).toEqual([4242]);
    await page.goto(`${w.sluice.url}/orgs/${w.org.name}/connections`);
    await screenshots('connections-with-app');
  });
});
