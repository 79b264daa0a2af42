/**
 * Connecting a hosting site in a real browser (issue 38), on a whole Sluice: an admin connects
 * GitLab (a fake that holds Sluice to GitLab's documented API, test/support/fakeGitLab.ts) with
 * a token, picks a project and activates it with one click. The deploy key Sluice adds at the
 * site is what lets it pull (the fake hands its deploy keys to the SSH git server), and GitLab's
 * push hook, delivered as GitLab delivers it, builds; the commit statuses go back to GitLab. The
 * repository page shows the hook's arrival and GitLab's delivery log, Repair makes a deleted hook
 * again, a forged hook is refused and counted, Deactivate removes the hook and the key, and the
 * connection takes a new token.
 * Screenshots land in test/screenshots/ (not committed).
 */
import { describeWithBrowser, openBrowser, signIn, type Browser } from '../support/browser';
import { startFakeGitLab, type FakeGitLab } from '../support/fakeGitLab';
import { pushCommit, revParse } from '../support/gitRepo';
import { eventually } from '../support/wait';
import { script, sessionEvents, World } from '../support/world';

const TOKEN = 'glpat-e2e-maintainer-000001';

describeWithBrowser('web-connections.test.ts')('connecting GitLab on the web', () => {
  let w: World;
  let browser: Browser;
  let gitlab: FakeGitLab;
  let bare: string;

  beforeAll(async () => {
    w = await World.start();
    browser = await openBrowser();
    const made = await w.makeBareRepo('shop', { 'a_test.sh': script('echo fine') });
    bare = made.bare;
    gitlab = await startFakeGitLab({
      tokens: { [TOKEN]: { username: 'alice', scopes: ['api'] } },
      projects: [
        { id: 21, path: 'acme/shop', sshUrl: made.pullUrl, defaultBranch: 'master', members: { alice: 40 } },
        { id: 22, path: 'acme/handbook', sshUrl: 'git@gitlab.test:acme/handbook.git', defaultBranch: 'main', members: { alice: 40 } },
      ],
    });
    // What GitLab's deploy keys allow, the git server allows: nothing else is authorized.
    gitlab.onKeys = (keys) => w.ssh.setAuthorizedKeys(keys);
  });
  afterAll(async () => {
    await browser?.close();
    await gitlab?.close();
    await w?.stop();
  });
  afterEach(() => expect(gitlab.problems).toEqual([]));

  it('connects, activates with one click, builds on GitLab’s push, reports back, repairs and deactivates', async () => {
    const { page, screenshots } = browser;
    await signIn(page, w.sluice.url, 'Ada Admin', w.sluice.config.adminToken);

    // The organization's Hosting sites page, from the organizations list.
    await page.goto(`${w.sluice.url}/orgs`);
    await page.locator(`#org-${w.org.name}`).getByRole('link', { name: 'Hosting sites' }).click();
    await page.getByLabel('Site', { exact: true }).selectOption('gitlab');
    await page.getByLabel('API URL').fill(gitlab.apiUrl);
    await page.getByLabel('Access token').fill('glpat-not-a-real-token');
    await page.getByRole('button', { name: 'Connect' }).click();
    expect(await page.getByRole('alert').textContent()).toContain('refused the token');
    // The refused token is not typed back into the page.
    expect(await page.getByLabel('Access token').inputValue()).toBe('');
    await page.getByLabel('Access token').fill(TOKEN);
    await page.getByRole('button', { name: 'Connect' }).click();
    await page.waitForURL(/\/connections\/[0-9]+$/);
    await page.locator('tr[data-site-repo="acme/shop"]').waitFor();
    expect(await page.locator('h1').textContent()).toContain('as alice');
    await screenshots('connection-repos');

    // Activate: the repository's CI Setup page, with the site's parts made.
    await page.locator('tr[data-site-repo="acme/shop"]').getByRole('button', { name: 'Activate' }).click();
    await page.waitForURL(/\/repos\/[0-9]+\?saved=activated/);
    const repoId = Number(/\/repos\/([0-9]+)/.exec(page.url())![1]);
    expect(await page.getByRole('status').textContent()).toContain('Activated');
    expect(await page.locator('tr[data-site="hook"]').textContent()).toContain('present');
    expect(await page.locator('tr[data-site="deploy-key"]').textContent()).toContain('present');
    expect(gitlab.hooksOf(21)).toHaveLength(1);
    expect(gitlab.keysOf(21)).toHaveLength(1);

    // A suite, then a push at GitLab: its hook builds the pushed commit, pulled with the deploy key.
    await w.sluice.admin('POST', `/api/v1/repos/${repoId}/suites`, { branch: 'master', test_pattern: '*_test.sh' });
    const before = await revParse(bare, 'master');
    const after = await pushCommit(bare, { 'b_test.sh': script('echo also fine') }, 'a second test');
    expect(await gitlab.push(21, { ref: 'refs/heads/master', before, after, message: 'a second test' })).toEqual([200]);
    const session = await eventually(
      'the push’s session',
      async () => {
        const list = await w.sluice.admin<{ session: number }[]>('GET', `/api/v1/sessions?repo=${encodeURIComponent(`${w.org.name}/shop`)}`);
        return list[0]?.session ?? null;
      },
      30_000,
    );
    const stop = (await sessionEvents(w.receiver, session, 90_000)).at(-1)!;
    expect(stop).toMatchObject({ status: 'passed', commit_id: after });

    // Its statuses at GitLab, on the project's id: running, then success.
    const posted = await eventually('two statuses at GitLab', async () => (gitlab.statuses.length >= 2 ? gitlab.statuses : null), 30_000);
    expect(posted.map((s) => [s.projectId, s.sha, s.state, s.name])).toEqual([
      [21, after, 'running', 'sluice/default'],
      [21, after, 'success', 'sluice/default'],
    ]);

    // The page says when the hook arrived and what GitLab logged of its delivery.
    await eventually(
      'the hook’s arrival on the page',
      async () => {
        await page.goto(`${w.sluice.url}/repos/${repoId}`);
        return !(await page.locator('tr[data-site="last-hook"]').textContent())!.includes('never');
      },
      20_000,
    );
    expect(await page.locator('tr[data-site="delivery"]').textContent()).toContain('200');
    await screenshots('repo-site-health');

    // A forged hook: refused, counted on the page.
    expect(await gitlab.push(21, { ref: 'refs/heads/master', before, after }, { token: 'someone-else-s-guess' })).toEqual([401]);
    await eventually(
      'the refusal on the page',
      async () => {
        await page.goto(`${w.sluice.url}/repos/${repoId}`);
        return /^\s*Refused \(bad signature\)\s*1\b/.test((await page.locator('tr[data-site="refused"]').textContent()) ?? '');
      },
      20_000,
    );

    // Someone deletes the hook at GitLab: the page says so, Repair makes it again.
    gitlab.dropHook(21, gitlab.hooksOf(21)[0]!.id);
    await page.goto(`${w.sluice.url}/repos/${repoId}`);
    expect(await page.locator('tr[data-site="hook"]').textContent()).toContain('missing');
    await page.getByRole('button', { name: 'Repair' }).click();
    await page.waitForURL(/saved=repaired/);
    expect(await page.locator('tr[data-site="hook"]').textContent()).toContain('present');
    expect(gitlab.hooksOf(21)).toHaveLength(1);

    // Deactivate: gone at GitLab; the repository stays.
    await page.getByRole('button', { name: 'Deactivate' }).click();
    await page.waitForURL(/saved=deactivated/);
    expect(await page.getByRole('status').textContent()).toContain('Deactivated');
    expect(gitlab.hooksOf(21)).toEqual([]);
    expect(gitlab.keysOf(21)).toEqual([]);
    await screenshots('repo-site-deactivated');

    // A new token for the connection (the old one expired): the same account's, from its row.
    await page.goto(`${w.sluice.url}/orgs/${w.org.name}/connections`);
    await page.getByText('Replace token…').click();
    await page.getByLabel('New token of alice').fill(TOKEN);
    await page.getByRole('button', { name: 'Replace' }).click();
    await page.waitForURL(/connections\?token/);
    expect(await page.getByRole('status').textContent()).toContain('Token replaced');
    await screenshots('connections');
  });
});
