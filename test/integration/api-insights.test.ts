/**
 * A suite's history at a glance (issue 37), through the API and the suite's page, on a real
 * PostgreSQL: five ended builds of one suite with their times, files and cases (as lanes record
 * them), and one of another suite that must not count. The chart has a bar a build linking to
 * it; the pass rate, slowest files, flakiest and most failing tests say how often and where.
 */
import { randomUUID } from 'node:crypto';
import { startApiHarness, type ApiHarness } from '../support/apiApp';
import { addPerson } from '../support/people';
import { insertPostSession, type PostSession } from '../support/postSession';

let h: ApiHarness;
let s: PostSession;
const builds: number[] = [];

/** An ended build of the suite: its status, test span (s) and what its files and cases were. */
async function build(suiteId: number, status: string, spanS: number, files: Record<string, number>, cases: [string, string, string, boolean][]): Promise<number> {
  const { rows } = await h.db.pool.query<{ id: number }>(
    `INSERT INTO sessions (ci_event_id, suite_id, branch, head, status, timing)
     SELECT ci_event_id, $1, 'master', 'HEAD', $2, $3 FROM sessions WHERE id = $4 RETURNING id::int AS id`,
    [suiteId, status, JSON.stringify({ received: 0, exec: 2, post_build: 2 + spanS, stop: 3 + spanS }), s.sessionId],
  );
  const id = rows[0]!.id;
  for (const [path, ms] of Object.entries(files)) {
    await h.db.pool.query(`INSERT INTO test_results (session_id, path, status, exit_code, duration_ms, output) VALUES ($1, $2, 'passed', 0, $3, '')`, [id, path, ms]);
  }
  for (const [file, name, st, flaky] of cases) {
    await h.db.pool.query(`INSERT INTO test_cases (session_id, file, run, test_file, classname, name, status, flaky) VALUES ($1, '', '1', $2, 'Cart', $3, $4, $5)`, [id, file, name, st, flaky]);
  }
  return id;
}

beforeAll(async () => {
  h = await startApiHarness();
  s = await insertPostSession(h.db.pool, h.config.secretKey);
  await h.db.pool.query(`UPDATE sessions SET status = 'queued' WHERE id = $1`, [s.sessionId]); // not ended: not counted
  const files = (slow: number) => ({ 'test/slow.js': slow, 'test/fast.js': 10, 'test/mid.js': 300 });
  builds.push(await build(s.suiteId, 'passed', 20, files(2000), [['test/a.js', 'adds up', 'passed', true]]));
  builds.push(await build(s.suiteId, 'failed', 25, files(2200), [['test/a.js', 'adds up', 'failed', false], ['test/b.js', 'totals', 'failed', false]]));
  builds.push(await build(s.suiteId, 'passed', 22, files(1900), [['test/a.js', 'adds up', 'passed', true]]));
  builds.push(await build(s.suiteId, 'error', 5, files(1800), [['test/a.js', 'adds up', 'error', false]]));
  builds.push(await build(s.suiteId, 'passed', 21, files(2100), [['test/a.js', 'adds up', 'passed', false]]));
  const other = await h.db.pool.query<{ id: number }>(`INSERT INTO suites (repo_id, branch, test_pattern) VALUES ($1, 'next', 'x') RETURNING id`, [s.repoId]);
  await build(other.rows[0]!.id, 'failed', 99, { 'test/slow.js': 99_999 }, [['test/a.js', 'adds up', 'failed', true]]);
});
afterAll(async () => {
  await h.close();
});

describe('GET /api/v1/repos/:repo/suites/:suite/insights', () => {
  it('gives the suite’s last builds, pass rate, slowest files, flakiest and most failing tests', async () => {
    const res = await h.admin('GET', `/api/v1/repos/${s.repoId}/suites/${s.suiteId}/insights`);
    expect(res.statusCode).toBe(200);
    const i = res.json();
    expect(i.suite).toEqual({ id: s.suiteId, branch: 'master' });
    expect(i.builds.map((b: { session: number }) => b.session)).toEqual([...builds].reverse());
    expect(i.builds[0]).toMatchObject({ status: 'passed', tests_ms: 21_000, whole_ms: 24_000 });
    expect(i.pass_rate).toBe(0.75); // 3 passed of the 4 that passed or failed; the error is neither
    expect(i.slowest_files.map((f: { path: string; median_ms: number; last_ms: number; runs: number }) => [f.path, f.median_ms, f.last_ms, f.runs])).toEqual([
      ['test/slow.js', 2000, 2100, 5],
      ['test/mid.js', 300, 300, 5],
      ['test/fast.js', 10, 10, 5],
    ]);
    expect(i.flaky_tests).toEqual([{ test_file: 'test/a.js', classname: 'Cart', name: 'adds up', count: 2, ran: 5, sessions: [builds[2], builds[0]] }]);
    expect(i.failing_tests).toEqual([
      { test_file: 'test/a.js', classname: 'Cart', name: 'adds up', count: 2, ran: 5, sessions: [builds[3], builds[1]] },
      { test_file: 'test/b.js', classname: 'Cart', name: 'totals', count: 1, ran: 1, sessions: [builds[1]] },
    ]);
  });

  it('looks at as many builds as asked, and refuses what is not a suite or a number', async () => {
    const two = (await h.admin('GET', `/api/v1/repos/${s.repoId}/suites/${s.suiteId}/insights?builds=2`)).json();
    expect(two.builds).toHaveLength(2);
    expect(two.slowest_files[0]).toMatchObject({ path: 'test/slow.js', runs: 2 });
    expect((await h.admin('GET', `/api/v1/repos/${s.repoId}/suites/${s.suiteId}/insights?builds=0`)).json()).toMatchObject({ error: 'invalid request', field: 'builds' });
    expect((await h.admin('GET', `/api/v1/repos/${s.repoId}/suites/999999/insights`)).statusCode).toBe(404);
    expect((await h.admin('GET', `/api/v1/repos/${s.repoId}/suites/abc/insights`)).statusCode).toBe(404);
  });
});

describe('one test’s history', () => {
  it('says in how many of the builds that ran it the test failed and flaked, newest first, in the API and on the page', async () => {
    const res = await h.admin('GET', `/api/v1/repos/${s.repoId}/suites/${s.suiteId}/history?classname=Cart&name=adds%20up`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      test: { classname: 'Cart', name: 'adds up' },
      runs: [
        { session: builds[4], status: 'passed', duration_ms: null, flaky: false, muted: false },
        { session: builds[3], status: 'error', duration_ms: null, flaky: false, muted: false },
        { session: builds[2], status: 'passed', duration_ms: null, flaky: true, muted: false },
        { session: builds[1], status: 'failed', duration_ms: null, flaky: false, muted: false },
        { session: builds[0], status: 'passed', duration_ms: null, flaky: true, muted: false },
      ],
      failed: 2,
      flaked: 2,
      builds: 5,
    });
    expect((await h.admin('GET', `/api/v1/repos/${s.repoId}/suites/${s.suiteId}/history?classname=Cart`)).json()).toMatchObject({ field: 'name' });
    const viewer = await addPerson(h.db.pool, h.config, { name: 'Vi', email: `vi-${randomUUID()}@example.test`, roles: { [s.orgId]: 'viewer' } });
    const page = await h.request({ method: 'GET', url: `/repos/${s.repoId}/suites/${s.suiteId}?classname=Cart&name=adds%20up`, headers: { cookie: viewer.cookie } });
    expect(page.body).toContain('<p data-history-summary>Failed in 2 of the last 5 builds that ran it, flaked in 2.</p>');
    expect(page.body).toContain(`href="/builds/${builds[1]}?q=adds%20up#cases" title="#${builds[1]}: failed">#${builds[1]} failed</a>`);
  });
});

describe('muted tests', () => {
  it('are muted by a maintainer, listed with who and when, in the insights and the audit trail, and unmuted', async () => {
    const maintainer = await addPerson(h.db.pool, h.config, { name: 'Mo', email: `mo-${randomUUID()}@example.test`, roles: { [s.orgId]: 'maintainer' } });
    const viewer = await addPerson(h.db.pool, h.config, { name: 'Vi', email: `vi-${randomUUID()}@example.test`, roles: { [s.orgId]: 'viewer' } });
    const url = `/api/v1/repos/${s.repoId}/suites/${s.suiteId}/muted`;
    const asViewer = await h.request({ method: 'PUT', url, headers: { authorization: viewer.bearer }, payload: { classname: 'Cart', name: 'adds up' } });
    expect(asViewer.statusCode).toBe(403);
    const put = await h.request({ method: 'PUT', url, headers: { authorization: maintainer.bearer }, payload: { classname: 'Cart', name: 'adds up' } });
    expect(put.statusCode).toBe(200);
    expect(put.json()).toMatchObject({ classname: 'Cart', name: 'adds up', muted_by: expect.stringMatching(/^Mo <mo-/) });
    const bad = await h.request({ method: 'PUT', url, headers: { authorization: maintainer.bearer }, payload: { classname: 'Cart' } });
    expect(bad.json()).toMatchObject({ error: 'invalid request', field: 'name' });
    const listed = await h.request({ method: 'GET', url, headers: { authorization: viewer.bearer } });
    expect(listed.json()).toEqual([expect.objectContaining({ classname: 'Cart', name: 'adds up', muted_by: put.json().muted_by })]);
    expect((await h.admin('GET', `/api/v1/repos/${s.repoId}/suites/${s.suiteId}/insights`)).json().muted).toEqual([expect.objectContaining({ name: 'adds up' })]);
    const audit = await h.admin('GET', `/api/v1/orgs/${s.orgId}/audit`);
    expect(JSON.stringify(audit.json())).toContain('test.mute');

    const del = await h.request({ method: 'DELETE', url: `${url}?classname=Cart&name=adds%20up`, headers: { authorization: maintainer.bearer } });
    expect(del.statusCode).toBe(204);
    expect((await h.request({ method: 'DELETE', url: `${url}?classname=Cart&name=adds%20up`, headers: { authorization: maintainer.bearer } })).statusCode).toBe(404);
    expect((await h.request({ method: 'GET', url, headers: { authorization: viewer.bearer } })).json()).toEqual([]);
  });
});

describe('the suite page', () => {
  it('draws a bar a build linking to it, and lists the files and tests with their history', async () => {
    const viewer = await addPerson(h.db.pool, h.config, { name: 'Vi', email: `vi-${randomUUID()}@example.test`, roles: { [s.orgId]: 'viewer' } });
    const res = await h.request({ method: 'GET', url: `/repos/${s.repoId}/suites/${s.suiteId}`, headers: { cookie: viewer.cookie } });
    expect(res.statusCode).toBe(200);
    const html = res.body;
    expect(html).toContain('<strong data-pass-rate>75%</strong> passed');
    for (const b of builds) expect(html).toContain(`<a href="/builds/${b}"><rect class="sc-bar`);
    expect(html).toContain(`<title>#${builds[4]} passed: tests 21 s, whole 24 s</title>`);
    expect(html).toMatch(/<code>test\/slow\.js<\/code><\/td><td data-label="Median">2000 ms/);
    expect(html).toContain('flaked in 2 of the last 5 builds that ran it:');
    expect(html).toContain(`<a href="/builds/${builds[1]}?q=totals#cases">#${builds[1]}</a>`);
    expect(html).not.toContain('99999');
    const missing = await h.request({ method: 'GET', url: `/repos/${s.repoId}/suites/999999`, headers: { cookie: viewer.cookie } });
    expect(missing.statusCode).toBe(404);
  });
});
