/**
 * The first failure first (issue 49): a build runs the test files likeliest to fail ahead of the
 * timing history's order: the test file its change touched, then a file that failed in the
 * suite's recent builds; the rest longest first. The build page and the API say why.
 */
import { pushCommit, type RepoFiles } from '../support/gitRepo';
import { describeWithBrowser, openBrowser, signIn } from '../support/browser';
import { script, World, type Repo } from '../support/world';

let w: World;
let repo: Repo;
/** The second build's session: its page is looked at below. */
let second: number;
beforeAll(async () => {
  w = await World.start();
});
afterAll(() => w?.stop());

type Test = { path: string; status: string; ran_first: string | null; started_at: string };
const view = async (session: number) => (await w.session(session)) as unknown as { status: string; tests: Test[] };

// 39 files of 0.1 s and a quick one that fails while its fixture says so: the history's order
// runs it last; 5 % of the test time (0.2 s) has room for it and one other file.
const FILES: RepoFiles = {
  ...Object.fromEntries(Array.from({ length: 39 }, (_, i) => [`test/t${String(i).padStart(2, '0')}_test.sh`, script('sleep 0.1')])),
  'test/fails_test.sh': script('grep -q pass test/fixture.txt'),
  'test/fixture.txt': { content: 'fail\n' },
};

it('a first build runs in the usual order, nothing first', async () => {
  repo = await w.makeRepo(FILES, { suite: { branch: 'master', test_pattern: 'test/*_test.sh', workers: 1 } });
  const { session } = await w.build(repo);
  expect((await w.eventsOf(session)).at(-1)).toMatchObject({ status: 'failed' });
  expect((await view(session)).tests.filter((t) => t.ran_first !== null)).toEqual([]);
});

it('the next runs the file its change touched first, then the one that failed last time, each saying why', async () => {
  await pushCommit(repo.bare, { 'test/t30_test.sh': script('sleep 0.1; true') }, 'touch t30');
  const { session } = await w.build(repo);
  second = session;
  const events = await w.eventsOf(session);
  expect(events.map((e) => e.event)).toEqual(['received', 'start', 'test', 'first-fail', 'stop']);
  // The failure came second of 40, told as soon as the two files run first had ended.
  expect(events.find((e) => e.event === 'first-fail')!.counts).toMatchObject({ passed: 1, failed: 1 });

  const v = await view(session);
  const started = [...v.tests].sort((a, b) => Date.parse(a.started_at) - Date.parse(b.started_at));
  expect(started.slice(0, 2).map((t) => [t.path, t.ran_first])).toEqual([
    ['test/t30_test.sh', 'changed'],
    ['test/fails_test.sh', 'failed in 1 of the last 1 build'],
  ]);
  expect(v.tests.filter((t) => t.ran_first !== null)).toHaveLength(2);
});

describeWithBrowser('first-failure.test.ts')('the build page, in a real browser', () => {
  it('says which files ran first and why', async () => {
    const session = second;
    const browser = await openBrowser();
    try {
      const { page } = browser;
      await page.goto(`${w.sluice.url}/builds/${session}`);
      await signIn(page, w.sluice.url, 'Ada', w.sluice.config.adminToken);
      await page.waitForURL(`${w.sluice.url}/builds/${session}`);
      await expect(page.locator('[data-first]').textContent()).resolves.toBe(
        'Ran first, as the likeliest to fail: test/fails_test.sh (failed in 1 of the last 1 build); test/t30_test.sh (changed).',
      );
      await expect(page.locator('tr[data-file="test/t30_test.sh"] [data-why]').textContent()).resolves.toBe('ran first: changed');
      await expect(page.locator('tr[data-file="test/fails_test.sh"] [data-why]').textContent()).resolves.toBe('ran first: failed in 1 of the last 1 build');
      await browser.screenshots('build-first-failure');
    } finally {
      await browser.close();
    }
  });
});
