/**
 * Running only what a change can affect (issue 40), end to end on a whole Sluice whose runners
 * isolate builds as in production (the build user, bubblewrap): a push to the default branch
 * records the dependency map (each file alone under the real strace), pull requests run only
 * the files their change reaches and skip the rest as not affected, and everything runs when the
 * map cannot judge (a manifest, an `always_full` glob, `[ci full]`, a full rebuild).
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { describeWithBrowser, openBrowser, signIn } from '../support/browser';
import { git, pushCommit, revParse, type RepoFiles } from '../support/gitRepo';
import { World, type Repo } from '../support/world';

let w: World;
let repo: Repo;
let pr = 0;
beforeAll(async () => {
  w = await World.start({ isolation: 'default' });
  repo = await w.makeRepo(PROJECT, { suite: { branch: 'master', test_pattern: 'tests/*_test.*', test_command: 'sh' } });
});
afterAll(() => w?.stop());

type Affected =
  | { mode: 'map'; commit: string; cost?: { files: number; traced_ms: number; usual_ms: number } }
  | { mode: 'full'; reason: string }
  | { mode: 'selected'; map_commit: string; ran: number; total: number; causes: string[]; reasons: Record<string, string> };
type Test = { path: string; status: string };
type View = { status: string; reason: string | null; counts: Record<string, number>; affected?: Affected; tests: Test[] };

/** A shell project: fixtures, sourced helpers, and a Node.js test that requires modules through another. */
const PROJECT: RepoFiles = {
  'lib/a.sh': { content: 'a() { echo a; }\n' },
  'lib/b.sh': { content: 'b() { echo b; }\n' },
  'lib/util.js': { content: 'exports.one = () => 1;\n' },
  'lib/app.js': { content: "const util = require('./util');\nmodule.exports = () => util.one() + 1;\n" },
  'lib/unused.js': { content: 'exports.never = true;\n' },
  'tests/a_test.sh': { content: '. lib/a.sh\na\n' },
  'tests/b_test.sh': { content: '. lib/b.sh\nb\ngrep -q ok tests/fixtures/b.txt\n' },
  'tests/c_test.sh': { content: 'ls tests/fixtures >/dev/null\necho alone\n' },
  'tests/app_test.sh': { content: "node -e \"if (require('./lib/app')() !== 2) process.exit(1)\"\n" },
  'tests/fixtures/b.txt': { content: 'ok\n' },
  'package.json': { content: '{"name": "fixture", "private": true}\n' },
  'sluice.yml': { content: 'profiles:\n  default:\n    affected:\n      map_every: 2\n      always_full: ["tests/support/**"]\n' },
};

const view = async (session: number) => (await w.session(session)) as unknown as View;

/** A pushed build of master, ended; its view. */
async function buildMaster(): Promise<View> {
  const { session } = await w.build(repo);
  await w.eventsOf(session);
  return view(session);
}

/** A pull request (as a fork's: its own ref, the master suite) changing `files` on master's tip; its build's view. */
async function pullRequest(files: RepoFiles, message = 'change'): Promise<View & { session: number }> {
  const branch = `pr-${++pr}`;
  await git(repo.bare, ['branch', branch, 'master']);
  await pushCommit(repo.bare, files, message, branch);
  const { session } = await w.build(repo, { branch: 'master', ref: `refs/heads/${branch}`, changeset: { kind: 'github', id: String(pr) } });
  await w.eventsOf(session);
  return { ...(await view(session)), session };
}

const statuses = (v: View) => Object.fromEntries(v.tests.map((t) => [t.path, t.status]));
const mapRows = async () =>
  (await w.sluice.pool.query<{ session_id: string; path: string; reads: string[] }>(
    'SELECT m.session_id, f.path, f.reads FROM dependency_maps m LEFT JOIN dependency_map_files f USING (session_id) WHERE m.repo_id = $1 ORDER BY m.session_id, f.path',
    [repo.id],
  )).rows;

it('a push to the default branch runs everything and records what each file read, traced in the sandbox', async () => {
  const v = await buildMaster();
  expect({ status: v.status, counts: v.counts }).toMatchObject({ status: 'passed', counts: { passed: 4, skipped: 0 } });
  expect(v.affected).toEqual({ mode: 'map', commit: await revParse(repo.bare, 'master') });
  const reads = Object.fromEntries((await mapRows()).map((r) => [r.path, r.reads]));
  expect(Object.keys(reads).sort()).toEqual(['tests/a_test.sh', 'tests/app_test.sh', 'tests/b_test.sh', 'tests/c_test.sh']);
  expect(reads['tests/a_test.sh']).toEqual(['lib/a.sh', 'tests/a_test.sh']);
  expect(reads['tests/b_test.sh']).toEqual(['lib/b.sh', 'tests/b_test.sh', 'tests/fixtures/b.txt']);
  expect(reads['tests/c_test.sh']).toEqual(['tests/c_test.sh']);
  // Node.js, through the module one module requires, and not the module nothing requires.
  expect(reads['tests/app_test.sh']).toEqual(expect.arrayContaining(['lib/app.js', 'lib/util.js', 'tests/app_test.sh']));
  expect(reads['tests/app_test.sh']).not.toContain('lib/unused.js');
});

it('a pull request runs only the files its change reaches, says why, and skips the rest as not affected', async () => {
  const v = await pullRequest({ 'lib/util.js': { content: 'exports.one = () => 1; // same\n' } });
  expect({ status: v.status, reason: v.reason }).toEqual({ status: 'passed', reason: null });
  expect(v.counts).toMatchObject({ passed: 1, skipped: 3, failed: 0, error: 0 });
  expect(v.affected).toEqual({
    mode: 'selected',
    map_commit: expect.stringMatching(/^[0-9a-f]{40}$/),
    ran: 1,
    total: 4,
    causes: ['lib/util.js'],
    reasons: { 'tests/app_test.sh': 'depends on lib/util.js' },
  });
  expect(statuses(v)).toEqual({ 'tests/a_test.sh': 'skipped', 'tests/app_test.sh': 'passed', 'tests/b_test.sh': 'skipped', 'tests/c_test.sh': 'skipped' });
  // The report says it in a sentence, with the map's commit.
  const report = await (await fetch((await w.session(v.session)).url as string)).text();
  expect(report).toContain(`Ran 1 of 4 test files, affected by lib/util.js; the rest were not affected (dependency map of ${(v.affected as { map_commit: string }).map_commit.slice(0, 10)}).`);
});

it('a change that breaks what a test reads fails the build; a fixture and a new test file run, unrelated ones do not', async () => {
  const broken = await pullRequest({ 'lib/a.sh': { content: 'a() { exit 3; }\n' } });
  expect(broken.status).toBe('failed');
  expect(statuses(broken)).toEqual({ 'tests/a_test.sh': 'failed', 'tests/app_test.sh': 'skipped', 'tests/b_test.sh': 'skipped', 'tests/c_test.sh': 'skipped' });

  const fixture = await pullRequest({ 'tests/fixtures/b.txt': { content: 'not good\n' }, 'tests/d_test.sh': { content: 'echo new\n' } });
  expect(fixture.status).toBe('failed');
  expect(fixture.affected).toMatchObject({ mode: 'selected', ran: 2, total: 5, reasons: { 'tests/b_test.sh': 'depends on tests/fixtures/b.txt', 'tests/d_test.sh': 'changed' } });
  // c_test lists tests/fixtures: a file modified there leaves its listing as it was, a file added changes it.
  expect(statuses(fixture)).toMatchObject({ 'tests/b_test.sh': 'failed', 'tests/d_test.sh': 'passed', 'tests/a_test.sh': 'skipped', 'tests/c_test.sh': 'skipped' });
  const added = await pullRequest({ 'tests/fixtures/c.txt': { content: 'new\n' } });
  expect(added.affected).toMatchObject({ mode: 'selected', ran: 1, reasons: { 'tests/c_test.sh': 'depends on tests/fixtures/c.txt' } });
});

it('everything runs when the map cannot judge: a manifest, an always_full glob, [ci full], a full rebuild', async () => {
  const manifest = await pullRequest({ 'package.json': { content: '{"name": "fixture", "private": true, "version": "2.0.0"}\n' } });
  expect(manifest.affected).toEqual({ mode: 'full', reason: 'package.json changed (dependencies or settings every test depends on)' });
  expect(manifest.counts).toMatchObject({ passed: 4, skipped: 0 });

  const glob = await pullRequest({ 'tests/support/env.sh': { content: 'X=1\n' } });
  expect(glob.affected).toEqual({ mode: 'full', reason: 'tests/support/env.sh changed (matches always_full tests/support/**)' });

  const marked = await pullRequest({ 'lib/b.sh': { content: 'b() { echo bee; }\n' } }, 'tune b [ci full]');
  expect(marked.affected).toEqual({ mode: 'full', reason: '[ci full] in the commit message' });
  expect(marked.counts).toMatchObject({ passed: 4, skipped: 0 });

  // One click: the same commit as the selected build, every file.
  const selected = await pullRequest({ 'lib/b.sh': { content: 'b() { echo b2; }\n' } });
  expect(selected.affected).toMatchObject({ mode: 'selected', ran: 1 });
  const rebuilt = await w.sluice.admin<{ session: number }>('POST', `/api/v1/sessions/${selected.session}/rebuild`, { full: true });
  await w.eventsOf(rebuilt.session);
  const full = await view(rebuilt.session);
  expect(full.affected).toEqual({ mode: 'full', reason: 'the trigger asked for a full run (full: true)' });
  expect(full.counts).toMatchObject({ passed: 4, skipped: 0 });
});

it('pull requests never record a map; the default branch records one every map_every builds, and at once after a manifest changed', async () => {
  // Every build so far but the first was a pull request (a fork's, as far as Sluice knows).
  expect(new Set((await mapRows()).map((r) => r.session_id)).size).toBe(1);
  await pushCommit(repo.bare, { 'lib/c.txt': { content: 'c\n' } }, 'one');
  expect((await buildMaster()).affected).toEqual({ mode: 'full', reason: 'master is the default branch, which always runs in full' });
  await pushCommit(repo.bare, { 'lib/c.txt': { content: 'cc\n' } }, 'two');
  // Its cost is shown: the files' time under strace beside theirs in the builds before.
  const mapped = await buildMaster();
  expect(mapped.affected).toEqual({ mode: 'map', commit: await revParse(repo.bare, 'master'), cost: { files: 4, traced_ms: expect.any(Number), usual_ms: expect.any(Number) } });
  const cost = mapped.affected?.mode === 'map' ? mapped.affected.cost : undefined;
  expect(cost?.traced_ms).toBeGreaterThan(0);
  expect(cost?.usual_ms).toBeGreaterThan(0);
  expect(new Set((await mapRows()).map((r) => r.session_id)).size).toBe(2);

  // A pull request now reads the newer map, from the commit its branch starts at.
  const v = await pullRequest({ 'lib/a.sh': { content: 'a() { echo A; }\n' } });
  expect(v.affected).toMatchObject({ mode: 'selected', map_commit: await revParse(repo.bare, 'master'), ran: 1, causes: ['lib/a.sh'] });

  // A push changing a manifest maps again at once, one build after the last map: with the old
  // map, every pull request would run in full until the cadence came round.
  await pushCommit(repo.bare, { 'package.json': { content: '{"name": "fixture", "private": true, "version": "1.1.0"}\n' } }, 'bump');
  const bumped = await revParse(repo.bare, 'master');
  expect((await buildMaster()).affected).toMatchObject({ mode: 'map', commit: bumped });
  const after = await pullRequest({ 'lib/b.sh': { content: 'b() { echo B; }\n' } });
  expect(after.affected).toMatchObject({ mode: 'selected', map_commit: bumped, ran: 1, causes: ['lib/b.sh'] });
});

it('the command-line client shows what ran, and asks for every file on a trigger or a rebuild', async () => {
  const cli = (args: string[]) =>
    promisify(execFile)(process.execPath, ['--import', 'tsx', path.join(__dirname, '..', '..', 'src', 'cli', 'main.ts'), ...args], {
      cwd: path.join(__dirname, '..', '..'),
      env: { PATH: process.env.PATH, HOME: w.tmp, SLUICE_URL: w.sluice.url, SLUICE_TOKEN: w.sluice.config.adminToken },
    });
  const v = await pullRequest({ 'lib/util.js': { content: 'exports.one = () => 1; // again\n' } });
  const shown = await cli(['show', String(v.session)]);
  expect(shown.stdout).toMatch(/tests run: +Ran 1 of 4 test files, affected by lib\/util\.js; the rest/);
  const rebuilt = JSON.parse((await cli(['rebuild', String(v.session), '--full', '--json'])).stdout) as { session: number };
  await w.eventsOf(rebuilt.session);
  expect((await view(rebuilt.session)).affected).toEqual({ mode: 'full', reason: 'the trigger asked for a full run (full: true)' });
  const triggered = JSON.parse((await cli(['trigger', `${w.org.name}/${repo.name}`, '--full', '--json'])).stdout) as { guid: string; sessions: Array<{ session: number }> };
  await w.eventsOf(triggered.sessions[0]!.session);
  const { rows } = await w.sluice.pool.query<{ full: boolean }>("SELECT (trigger->'full')::boolean AS full FROM ci_events WHERE guid = $1", [triggered.guid]);
  expect(rows).toEqual([{ full: true }]);
});

describeWithBrowser('affected.test.ts')('the build page, in a real browser', () => {
  it('says what ran and why, each file’s reason on its row, and runs every file in one click', async () => {
    const v = await pullRequest({ 'tests/fixtures/b.txt': { content: 'ok, still\n' } });
    expect(v.affected).toMatchObject({ mode: 'selected', ran: 1 });
    const browser = await openBrowser();
    try {
      const { page } = browser;
      await page.goto(`${w.sluice.url}/builds/${v.session}`);
      await signIn(page, w.sluice.url, 'Ada', w.sluice.config.adminToken);
      await page.waitForURL(`${w.sluice.url}/builds/${v.session}`);
      await expect(page.locator('[data-selection]').textContent()).resolves.toMatch(/^Ran 1 of 4 test files, affected by tests\/fixtures\/b\.txt; the rest were not affected \(dependency map of [0-9a-f]{10}\)\.$/);
      await expect(page.locator('[data-counts]').textContent()).resolves.toBe('1 passed, 0 failed, 0 errors, 3 skipped');
      await expect(page.locator('tr[data-file="tests/b_test.sh"] [data-why]').textContent()).resolves.toBe('depends on tests/fixtures/b.txt');
      await expect(page.locator('tr[data-file="tests/c_test.sh"] [data-why]').textContent()).resolves.toBe('not affected');
      await browser.screenshots('build-affected');

      await page.getByRole('button', { name: 'Run all tests' }).click();
      await page.waitForURL((url) => /\/builds\/\d+$/.test(url.pathname) && !url.pathname.endsWith(`/${v.session}`));
      const rebuilt = Number(new URL(page.url()).pathname.split('/').pop());
      await w.eventsOf(rebuilt);
      expect((await view(rebuilt)).affected).toEqual({ mode: 'full', reason: 'the trigger asked for a full run (full: true)' });
      await page.reload();
      await expect(page.locator('[data-selection]').textContent()).resolves.toBe('Ran every test file: the trigger asked for a full run (full: true).');
      await expect(page.getByRole('button', { name: 'Run all tests' }).isVisible()).resolves.toBe(false);
    } finally {
      await browser.close();
    }
  });
});
