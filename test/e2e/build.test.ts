/**
 * The walking skeleton, end to end on real parts: a bare git repository behind a real SSH
 * server, the real API over HTTP, a real Temporal dev server and worker, real PostgreSQL, and a
 * real HTTP receiver for the outgoing webhooks.
 */
import { git, pushCommit } from '../support/gitRepo';
import { script, World } from '../support/world';
import { reportPath } from '../support/reports';

let w: World;
beforeAll(async () => {
  // A build here may have at most 3 test files (SLUICE_MAX_TEST_FILES; 5,000 by default).
  w = await World.start({ webhook: { username: 'hook', password: 's3cret-hook-pass' }, maxTestFiles: 3 });
});
afterAll(() => w?.stop());

describe('a passing build', () => {
  it('clones over SSH, runs every matching file and reports received, start, test, stop in order', async () => {
    const repo = await w.makeRepo({
      'tests/a_test.sh': script('echo alpha ok'),
      'tests/b_test.sh': script('echo beta ok'),
      'tests/helper.txt': { content: 'not a test' },
      'README.md': { content: 'hello' },
    });
    const head = await pushCommit(repo.bare, { 'tests/a_test.sh': script('echo alpha still ok') }, 'second commit', 'master', {
      author: { name: 'Dev One', email: 'dev1@acme.test' },
    });
    await w.sluice.admin('POST', `/api/v1/repos/${repo.id}/suites`, { branch: 'master', test_pattern: 'tests/*_test.sh' });

    const { guid, status_uri, session } = await w.build(repo);
    expect(status_uri).toBe(`${w.sluice.url}/ci_events/${guid}/guid`);
    const events = await w.eventsOf(session);

    expect(events.map((e) => e.event)).toEqual(['received', 'start', 'test', 'stop']);
    const stop = events[3]!;
    expect(stop).toMatchObject({
      event: 'stop',
      session,
      guid,
      url: `${w.sluice.url}${await reportPath(w.sluice.pool, session)}`,
      profile_name: 'default',
      commit_id: head,
      committers: ['dev1@acme.test'],
      status: 'passed',
      counts: { notstarted: 0, started: 0, passed: 2, failed: 0, pending: 0, skipped: 0, error: 0 },
      workers: 1,
      branch: 'master',
      repository: { name: repo.name, url: w.ssh.url(repo.bare), org_name: w.org.name },
    });
    expect(new Date(String(stop.timestamp)).toISOString()).toBe(stop.timestamp);
    // Timing: the base keys, in lifecycle order, as seconds since the epoch.
    const t = stop.timing as Record<string, number>;
    const order = ['ci_received_at', 'queue_first_seen_at', 'queue_first_allowed_at', 'workers_assigned_at', 'setup', 'exec', 'post_build', 'done'];
    for (const k of order) expect(t[k]).toBeGreaterThan(1.7e9);
    for (let i = 1; i < order.length; i++) expect(t[order[i]!]).toBeGreaterThanOrEqual(t[order[i - 1]!]!);
    // Every event of the session carries its own xid; a receiver dedupes on it.
    expect(new Set(events.map((e) => e.xid)).size).toBe(4);
    // `received` tells what arrived, `start` the commit a runner checked out (the trigger named
    // none), `test` that tests are about to run.
    expect(events[0]).toMatchObject({ status: 'queued', commit_id: null });
    expect(events[1]).toMatchObject({ status: 'running', commit_id: head, committers: ['dev1@acme.test'] });
    expect(events[2]).toMatchObject({ status: 'running', counts: expect.objectContaining({ notstarted: 2 }) });
    // Basic auth as configured.
    const req = w.receiver.requests.find((r) => (r.json as { xid?: string })?.xid === stop.xid)!;
    expect(req.headers.authorization).toBe(`Basic ${Buffer.from('hook:s3cret-hook-pass').toString('base64')}`);
    expect(req.headers['content-type']).toMatch(/^application\/json/);

    // What the user sees through status_uri and the report page.
    const status = (await (await fetch(status_uri)).json()) as { sessions: Array<Record<string, unknown>> };
    expect(status.sessions).toEqual([expect.objectContaining({ session, status: 'passed' })]);
    // The payload's url opens the report; the session number alone does not.
    const html = await (await fetch(String(stop.url))).text();
    expect((await fetch(`${w.sluice.url}/1/reports/${session}`)).status).toBe(404);
    expect(html).toContain('tests/a_test.sh');
    expect(html).toContain('alpha still ok');
    expect(html).toContain('passed');
    const api = await w.session(session);
    expect(api.tests.map((x) => [x.path, x.status])).toEqual([
      ['tests/a_test.sh', 'passed'],
      ['tests/b_test.sh', 'passed'],
    ]);
  });
});

describe('a failing build', () => {
  it('sends first-fail once, and stop with status failed and the right counts, spread over as many runners as it has files', async () => {
    const repo = await w.makeRepo({
      'spec/1.sh': { content: 'echo one; exit 0' },
      'spec/2.sh': { content: 'echo two >&2; exit 3' },
      'spec/3.sh': { content: 'exit 1' },
    });
    await w.sluice.admin('POST', `/api/v1/repos/${repo.id}/suites`, { branch: 'master', test_pattern: 'spec/*.sh', test_command: 'sh', workers: 8 });
    const { session } = await w.build(repo, { branch: 'master' });
    const events = await w.eventsOf(session);

    expect(events.map((e) => e.event)).toEqual(['received', 'start', 'test', 'first-fail', 'stop']);
    // `workers` asks for 8 runners; three files use three, from `test` on.
    expect(events.map((e) => e.workers)).toEqual([8, 8, 3, 3, 3]);
    expect(events[4]).toMatchObject({ status: 'failed', counts: expect.objectContaining({ passed: 1, failed: 2, error: 0, notstarted: 0, started: 0 }) });
    const api = await w.session(session);
    expect(api.tests.find((x) => x.path === 'spec/2.sh')).toMatchObject({ status: 'failed', exit_code: 3 });
  });
});

describe("a trigger's private ref", () => {
  it('is fetched and built at its tip when no head is named, on every runner the build uses', async () => {
    const repo = await w.makeRepo({ 'a_test.sh': script('echo on master; exit 1'), 'b_test.sh': script('exit 1') });
    await w.sluice.admin('POST', `/api/v1/repos/${repo.id}/suites`, { branch: 'master', test_pattern: '*_test.sh', workers: 2 });
    // A commit only a review ref holds: no branch or tag leads to it.
    const review = await pushCommit(repo.bare, { 'a_test.sh': script('echo under review'), 'b_test.sh': script('true') }, 'under review', 'tmp-review');
    await git(repo.bare, ['update-ref', 'refs/review/42', review]);
    await git(repo.bare, ['update-ref', '-d', 'refs/heads/tmp-review']);

    const { session } = await w.build(repo, { branch: 'master', ref: 'refs/review/42' });
    const events = await w.eventsOf(session);
    expect(events.at(-1)).toMatchObject({ status: 'passed', commit_id: review, ref: 'refs/review/42', workers: 2 });
    expect(events.find((e) => e.event === 'start')).toMatchObject({ commit_id: review });
    const tests = (await w.session(session)).tests;
    expect(tests.map((t) => [t.path, t.status])).toEqual([['a_test.sh', 'passed'], ['b_test.sh', 'passed']]);

    // A ref the server does not have ends the build in error, saying which.
    const missing = await w.build(repo, { branch: 'master', ref: 'refs/review/404', force: true });
    expect((await w.eventsOf(missing.session)).at(-1)).toMatchObject({ status: 'error' });
    expect((await w.session(missing.session)).reason).toContain('refs/review/404');
  });
});

describe('a wrong SSH key', () => {
  it('ends the build in error with a clear reason and no secret in it', async () => {
    const repo = await w.makeRepo({ 't.sh': script('true') }, { authorize: false });
    await w.sluice.admin('POST', `/api/v1/repos/${repo.id}/suites`, { branch: 'master', test_pattern: '*.sh' });
    const { session } = await w.build(repo);
    const events = await w.eventsOf(session);
    // No runner got the tree, so no `start`: the build never started work.
    expect(events.map((e) => e.event)).toEqual(['received', 'stop']);
    expect(events[1]).toMatchObject({ status: 'error', commit_id: null });

    const api = await w.session(session);
    expect(api.status).toBe('error');
    expect(String(api.reason)).toMatch(/permission denied|publickey/i);
    const { rows } = await w.sluice.pool.query('SELECT ssh_private_key_sealed FROM repos WHERE id = $1', [repo.id]);
    const everything = JSON.stringify([api, events]);
    expect(everything).not.toMatch(/PRIVATE KEY/);
    expect(everything).not.toContain(rows[0].ssh_private_key_sealed.slice(3, 40));
  });
});

describe('more test files than a build may run', () => {
  it('ends the build in error, saying how many and what the limit is', async () => {
    const repo = await w.makeRepo(Object.fromEntries(['a', 'b', 'c', 'd'].map((n) => [`t/${n}_test.sh`, script('true')])));
    await w.sluice.admin('POST', `/api/v1/repos/${repo.id}/suites`, { branch: 'master', test_pattern: 't/*_test.sh' });
    const { session } = await w.build(repo);
    const events = await w.eventsOf(session);
    expect(events.map((e) => e.event)).toEqual(['received', 'start', 'stop']);
    expect(events[2]).toMatchObject({ status: 'error' });
    expect((await w.session(session)).reason).toBe('4 files match the test pattern "t/*_test.sh"; a build runs at most 3 (SLUICE_MAX_TEST_FILES)');
  });
});

describe('a branch with no suite', () => {
  it('answers 422 DROPPED and starts nothing', async () => {
    const repo = await w.makeRepo({ 't.sh': script('true') });
    await w.sluice.admin('POST', `/api/v1/repos/${repo.id}/suites`, { branch: 'release', test_pattern: '*.sh' });
    const res = await w.trigger(repo); // empty body: master, which has no suite
    expect(res).toEqual({ status: 422, text: 'DROPPED' });
    const { rows } = await w.sluice.pool.query('SELECT count(*)::int AS n FROM ci_events WHERE repo_id = $1', [repo.id]);
    expect(rows[0].n).toBe(0);
  });

  it('answers 404 for an unknown key', async () => {
    const res = await fetch(`${w.sluice.url}/1/builds/not-a-real-key-at-all`, { method: 'POST' });
    expect(res.status).toBe(404);
  });
});

describe('already built', () => {
  it('skips a session whose head was built already, unless forced', async () => {
    const repo = await w.makeRepo({ 't.sh': script('true') });
    await w.sluice.admin('POST', `/api/v1/repos/${repo.id}/suites`, { branch: 'master', test_pattern: '*.sh' });
    const first = (await w.build(repo)).session;
    expect((await w.eventsOf(first)).at(-1)).toMatchObject({ status: 'passed' });
    const second = (await w.build(repo)).session;
    const stop = (await w.eventsOf(second)).at(-1)!;
    expect(stop).toMatchObject({ status: 'skipped' });
    expect(String((await w.session(second)).reason)).toMatch(/no new commits/);
    const third = (await w.build(repo, { force: true })).session;
    expect((await w.eventsOf(third)).at(-1)).toMatchObject({ status: 'passed' });
  });
});
