/**
 * End to end, with a real Temporal, worker and API: Mercurial repositories served over SSH by
 * the real `hg serve --stdio` (pulled, and pushed to a CI server), build secrets that reach the tests without entering Temporal's
 * history and come out masked, and JUnit XML results on the report page.
 */
import path from 'node:path';
import { mkdir } from 'node:fs/promises';
import { createHgRepo, hg, hgCommit, hgNode } from '../support/hgRepo';
import { script, World, type Repo } from '../support/world';
import { reportPath } from '../support/reports';

let w: World;
let hgCount = 0;
const hgKeys: string[] = [];
let worldKeys: string[] = [];

beforeAll(async () => {
  w = await World.start();
  // World.makeRepo sets the authorized keys to its own git repositories' keys: keep ours too.
  const setKeys = w.ssh.setAuthorizedKeys.bind(w.ssh);
  w.ssh.setAuthorizedKeys = (keys) => {
    worldKeys = keys;
    setKeys([...keys, ...hgKeys]);
  };
});

afterAll(async () => {
  await w.stop();
});

const DEV = { name: 'Hg Dev', email: 'hgdev@acme.test' };

/** An hg repository served over SSH and registered in Sluice with scm hg, its key authorized. */
async function makeHgRepo(files: Parameters<typeof createHgRepo>[1], suite: Record<string, unknown>): Promise<Repo & { head: string }> {
  const name = `hgapp${++hgCount}`;
  const dir = path.join(w.tmp, name);
  const head = await createHgRepo(dir, files, 'first', { author: DEV });
  const repo = await w.sluice.admin<Omit<Repo, 'bare'>>('POST', `/api/v1/orgs/${w.org.id}/repos`, {
    name,
    scm: 'hg',
    pull_url: w.ssh.hgUrl(dir),
  });
  hgKeys.push(repo.ssh_public_key);
  w.ssh.setAuthorizedKeys(worldKeys);
  await w.sluice.admin('POST', `/api/v1/repos/${repo.id}/suites`, suite);
  return { ...repo, bare: dir, head };
}

describe('a Mercurial repository', () => {
  it('builds tip of its branch over SSH and reports like a git one', async () => {
    const repo = await makeHgRepo(
      { 'tests/a_test.sh': script('echo alpha from hg'), 'tests/b_test.sh': script('test -f README') },
      { branch: 'default', test_pattern: 'tests/*_test.sh' },
    );
    const second = await hgCommit(repo.bare, { README: { content: 'hello\n' } }, 'add README', { author: { name: 'Other', email: 'other@acme.test' } });

    // What a changegroup hook sends: the branch, no head (tip is the default for hg).
    const { session } = await w.build(repo, { source: 'sluice', op: 'push', force: false, branch: 'default' });
    const events = await w.eventsOf(session);
    expect(events.map((e) => e.event)).toEqual(['received', 'start', 'test', 'stop']);
    expect(events[3]).toMatchObject({
      status: 'passed',
      commit_id: second,
      committers: ['other@acme.test'],
      counts: expect.objectContaining({ passed: 2, failed: 0, error: 0 }),
      branch: 'default',
      repository: { name: repo.name, url: w.ssh.hgUrl(repo.bare) },
    });
    expect(w.ssh.commands).toContain(`hg -R ${repo.bare} serve --stdio`);
    const html = await (await fetch(`${w.sluice.url}${await reportPath(w.sluice.pool, session)}`)).text();
    expect(html).toContain('alpha from hg');

    // The same rules as git: nothing new is skipped unless forced ...
    const again = (await w.build(repo, { branch: 'default' })).session;
    expect((await w.eventsOf(again)).at(-1)).toMatchObject({ status: 'skipped' });
    // ... and a given head is built exactly, by full changeset id.
    const pinned = (await w.build(repo, { branch: 'default', head: repo.head, force: true })).session;
    expect((await w.eventsOf(pinned)).at(-1)).toMatchObject({ status: 'failed', commit_id: repo.head, committers: [DEV.email] });
  });

  it('pushes a passed build to its CI server, a repository of its own the same key reaches', async () => {
    const repo = await makeHgRepo({ 'tests/ok_test.sh': script('true') }, { branch: 'default', test_pattern: 'tests/*_test.sh' });
    const ci = path.join(w.tmp, `${repo.name}-ci`);
    await mkdir(ci);
    await hg(ci, ['init']);
    await w.sluice.admin('PATCH', `/api/v1/repos/${repo.id}`, { ci_push_url: w.ssh.hgUrl(ci) });

    const { session } = await w.build(repo, { branch: 'default' });
    expect((await w.eventsOf(session)).at(-1)).toMatchObject({ status: 'passed', commit_id: repo.head });
    expect(await hgNode(ci, 'default')).toBe(repo.head);
    expect((await w.session(session)).post_build_steps).toEqual([
      expect.objectContaining({ step: 'push', ok: true, detail: `branch default pushed ${repo.head} on ${w.ssh.hgUrl(ci)}` }),
    ]);
  });

  it('ends in error with a clear reason for a branch the repository does not have', async () => {
    const repo = await makeHgRepo({ 't.sh': script('true') }, { branch: 'stable', test_pattern: '*.sh' });
    const { session } = await w.build(repo, { branch: 'stable' });
    expect((await w.eventsOf(session)).at(-1)).toMatchObject({ status: 'error' });
    expect(String((await w.session(session)).reason)).toMatch(/branch 'stable' not found/);
  });
});

describe('build secrets', () => {
  const VALUE = 'sk_live_e2e_0f1e2d3c4b5a';

  it('reach the test as environment variables over the trigger env, masked in output, never in Temporal history', async () => {
    const repo = await w.makeRepo({
      'check_test.sh': script(
        [
          `[ "$API_TOKEN" = "${VALUE}" ] || { echo "wrong token: $API_TOKEN"; exit 1; }`,
          'echo "using $API_TOKEN for $TARGET"',
          // Nothing of the runner's: its database URL, its SLUICE_ settings (the worker's own number is the build's).
          'env | grep -E "^(DATABASE_URL|SLUICE_)" | grep -vE "^SLUICE_WORKER_(ID|COUNT)=" && exit 2',
          'exit 0',
        ].join('\n'),
      ),
    });
    await w.sluice.admin('PUT', `/api/v1/repos/${repo.id}/secrets/API_TOKEN`, { value: VALUE });
    await w.sluice.admin('POST', `/api/v1/repos/${repo.id}/suites`, { branch: 'master', test_pattern: '*_test.sh' });

    // The trigger names the same variable: the secret wins.
    const { session } = await w.build(repo, { branch: 'master', env: { API_TOKEN: 'from-the-trigger', TARGET: 'staging' } });
    const events = await w.eventsOf(session);
    expect(events.at(-1)).toMatchObject({ status: 'passed' });

    const report = (await (await fetch(`${w.sluice.url}${await reportPath(w.sluice.pool, session)}`, { headers: { accept: 'application/json' } })).json()) as {
      tests: { path: string; output: string }[];
    };
    expect(report.tests[0]!.output).toBe('using **** for staging\n');

    const history = await w.sluice.client.workflow.getHandle(w.sluice.ids.session(session)).fetchHistory();
    // Every payload in the history (base64 in its JSON form), decoded, plus the rest of it.
    const json = JSON.stringify(history);
    const decoded = [...json.matchAll(/"data":"([A-Za-z0-9+/=]*)"/g)].map((m) => Buffer.from(m[1]!, 'base64').toString('utf8'));
    const everything = [json, ...decoded].join('\n');
    // The trigger's env does travel through history (it is no secret); the secret does not.
    expect(everything.includes('from-the-trigger')).toBe(true);
    expect(everything.includes(VALUE)).toBe(false);
    expect(JSON.stringify(events)).not.toContain(VALUE);
  });
});

describe('JUnit results', () => {
  it("stores the cases of the reports a suite's tests leave, and the report page lists the failing ones", async () => {
    const report = [
      '<?xml version="1.0" encoding="UTF-8"?>',
      '<testsuites><testsuite name="calc">',
      '<testcase classname="calc.Adder" name="adds" time="0.01"/>',
      '<testcase classname="calc.Adder" name="overflows" time="0.02"><failure message="expected 0 but was $SECRET_SEED">stack</failure></testcase>',
      '<testcase classname="calc.Adder" name="later" time="0"><skipped/></testcase>',
      '</testsuite></testsuites>',
    ].join('\n');
    const repo = await w.makeRepo({
      'run_test.sh': script(`mkdir -p out\ncat > out/junit.xml <<EOF\n${report}\nEOF\nexit 1`),
    });
    await w.sluice.admin('PUT', `/api/v1/repos/${repo.id}/secrets/SECRET_SEED`, { value: 'seed-4242' });
    await w.sluice.admin('POST', `/api/v1/repos/${repo.id}/suites`, { branch: 'master', test_pattern: '*_test.sh', junit_pattern: 'out/*.xml' });

    const { session } = await w.build(repo);
    expect((await w.eventsOf(session)).at(-1)).toMatchObject({ status: 'failed' });

    const api = await w.session(session);
    expect(api.cases).toEqual({ total: 3, passed: 1, failed: 1, error: 0, skipped: 1 });
    expect(api.failing_cases).toEqual([
      { file: 'out/junit.xml', classname: 'calc.Adder', name: 'overflows', status: 'failed', time: 0.02, message: 'expected 0 but was ****' },
    ]);
    const html = await (await fetch(`${w.sluice.url}${await reportPath(w.sluice.pool, session)}`)).text();
    expect(html).toContain('<h2>Test cases</h2>');
    expect(html).toContain('overflows');
    expect(html).toContain('calc.Adder');
    expect(html).toContain('expected 0 but was ****');
    expect(html).not.toContain('seed-4242');
  });
});
