/**
 * The report page shows what became of push, chat and e-mail (a failed one did not change the
 * build's status), in HTML and in its JSON twin; escaped like everything else on the page. It
 * shows a session's test files a page at a time (`?page=`), its totals always whole.
 */
import { createPostActivities } from '../../src/activities/post/activities';
import { closeDefaultAgent } from '../../src/delivery/send';
import { emptyCounts } from '../../src/core/counts';
import { startApiHarness, type ApiHarness } from '../support/apiApp';
import { insertPostSession } from '../support/postSession';
import { reportPath } from '../support/reports';
import { REPORT_FILES_PER_PAGE } from '../../src/app/builds';

let h: ApiHarness;

beforeAll(async () => {
  h = await startApiHarness();
});

afterAll(async () => {
  await closeDefaultAgent();
  await h.close();
});

describe('report page: after the tests', () => {
  it('lists each post-build step with its outcome, in order', async () => {
    const s = await insertPostSession(h.db.pool, h.config.secretKey, { chatUrl: 'ftp://chat.example.test/<b>hook</b>' });
    await h.db.pool.query(`UPDATE sessions SET status = 'passed' WHERE id = $1`, [s.sessionId]);
    await h.db.pool.query(`INSERT INTO post_build_steps (session_id, step, ok, detail) VALUES ($1, 'push', true, 'refs/heads/master pushed <abc>')`, [
      s.sessionId,
    ]);
    // A real failing step, recorded by the activity itself.
    const chat = await createPostActivities({ config: h.config, pool: h.db.pool }).postChat({
      sessionId: s.sessionId,
      summary: {
        session: s.sessionId,
        repo: { orgName: 'acme', name: 'app' },
        branch: 'master',
        commitId: null,
        status: 'passed',
        reason: null,
        counts: emptyCounts(),
        url: `${h.config.baseUrl}/1/reports/${s.sessionId}`,
      },
    });
    expect(chat.posted).toBe(false);

    const json = await h.request({ method: 'GET', url: await reportPath(h.db.pool, s.sessionId), headers: { accept: 'application/json' } });
    expect(json.statusCode).toBe(200);
    const view = json.json();
    expect(view.status).toBe('passed');
    expect(view.post_build_steps).toEqual([
      { step: 'push', ok: true, detail: 'refs/heads/master pushed <abc>', created_at: expect.any(String) },
      { step: 'chat', ok: false, detail: 'the chat URL is not an http(s) URL', created_at: expect.any(String) },
    ]);

    const html = await h.request({ method: 'GET', url: await reportPath(h.db.pool, s.sessionId) });
    expect(html.statusCode).toBe(200);
    expect(html.body).toContain('<h2>After the tests</h2>');
    expect(html.body).toContain('<tr><th>push</th><td class="ok">ok</td><td>refs/heads/master pushed &lt;abc&gt;</td></tr>');
    expect(html.body).toContain('<tr><th>chat</th><td class="failed">failed</td><td>the chat URL is not an http(s) URL</td></tr>');
    expect(html.body).not.toContain('<abc>');
  });

  it('a session without post-build steps has no such section', async () => {
    const s = await insertPostSession(h.db.pool, h.config.secretKey);
    const json = await h.request({ method: 'GET', url: await reportPath(h.db.pool, s.sessionId), headers: { accept: 'application/json' } });
    expect(json.json()).not.toHaveProperty('post_build_steps');
    const html = await h.request({ method: 'GET', url: await reportPath(h.db.pool, s.sessionId) });
    expect(html.body).not.toContain('After the tests');
  });
});

describe('report page: what builds printed', () => {
  it('shows output without the terminal’s colours in HTML; the JSON twin keeps it as printed (issue 37)', async () => {
    const s = await insertPostSession(h.db.pool, h.config.secretKey);
    const printed = 'FAIL \u001b[31m\u001b[1mtest/a.test.js\u001b[22m\u001b[39m\n\u001b[90m 12 |\u001b[39m expect(1).toBe(2)';
    await h.db.pool.query(`INSERT INTO test_results (session_id, path, status, exit_code, duration_ms, output) VALUES ($1, 'test/a.test.js', 'failed', 1, 5, $2)`, [s.sessionId, printed]);
    await h.db.pool.query(`UPDATE sessions SET status = 'failed', counts = '{"failed": 1}' WHERE id = $1`, [s.sessionId]);
    const html = await h.request({ method: 'GET', url: await reportPath(h.db.pool, s.sessionId) });
    expect(html.body).toContain('FAIL test/a.test.js\n 12 | expect(1).toBe(2)');
    expect(html.body).not.toContain('\u001b');
    const json = await h.request({ method: 'GET', url: await reportPath(h.db.pool, s.sessionId), headers: { accept: 'application/json' } });
    expect(json.json().tests[0].output).toBe(printed);
  });
});

describe('report page: test files a page at a time', () => {
  const perPage = REPORT_FILES_PER_PAGE;
  const total = perPage + 30;
  /** `tests/f000.sh`, `tests/f001.sh`, ...: the order the page lists them in (by path). */
  const file = (i: number): string => `tests/f${String(i).padStart(3, '0')}.sh`;
  const output = (i: number): string => `output of f${String(i).padStart(3, '0')}`;
  let session: number;
  let path: string;
  let token: string;

  const json = async (query = '') => h.request({ method: 'GET', url: `${path}${query}`, headers: { accept: 'application/json' } });
  const html = async (query = '') => h.request({ method: 'GET', url: `${path}${query}` });

  beforeAll(async () => {
    session = (await insertPostSession(h.db.pool, h.config.secretKey)).sessionId;
    // Every tenth file failed; the session's counts say so for all of them.
    await h.db.pool.query(
      `INSERT INTO test_results (session_id, path, status, exit_code, duration_ms, output)
       SELECT $1, format('tests/f%s.sh', lpad(i::text, 3, '0')),
              CASE WHEN i % 10 = 0 THEN 'failed' ELSE 'passed' END, CASE WHEN i % 10 = 0 THEN 1 ELSE 0 END, 5,
              format('output of f%s', lpad(i::text, 3, '0'))
         FROM generate_series(0, $2 - 1) AS i`,
      [session, total],
    );
    await h.db.pool.query(`UPDATE sessions SET status = 'failed', counts = $2 WHERE id = $1`, [
      session,
      JSON.stringify({ passed: total - total / 10, failed: total / 10 }),
    ]);
    path = await reportPath(h.db.pool, session);
    token = new URL(path, 'http://x').searchParams.get('token')!;
  });

  it('the first page lists only the first files, with their output; the totals cover the whole session', async () => {
    for (const res of [await json(), await json('&page=1')]) {
      expect(res.statusCode).toBe(200);
      const view = res.json();
      expect(view.tests.map((t: { path: string }) => t.path)).toEqual(Array.from({ length: perPage }, (_, i) => file(i)));
      expect(view.tests[0]).toEqual({
        path: file(0),
        status: 'failed',
        exit_code: 1,
        duration_ms: 5,
        runner: null,
        // Written without the shared list or a batch (issue 22's fields at their defaults).
        worker: null,
        batch: null,
        attempts: 1,
        flaky: false,
        ran_first: null,
        started_at: null,
        finished_at: expect.any(String),
        output: output(0),
      });
      expect(view).toMatchObject({ page: 1, pages: 2, per_page: perPage, total_files: total });
      // Every field the unpaged report had is still there, for the whole session.
      expect(view).toMatchObject({ session, status: 'failed', url: `https://ci.example.test${path}`, counts: { passed: total - total / 10, failed: total / 10 } });
    }
  });

  it('page 2 lists the rest, and the totals stay whole', async () => {
    const res = await json('&page=2');
    expect(res.statusCode).toBe(200);
    const view = res.json();
    expect(view.tests.map((t: { path: string }) => t.path)).toEqual(Array.from({ length: total - perPage }, (_, i) => file(perPage + i)));
    expect(view.tests.at(-1).output).toBe(output(total - 1));
    expect(view).toMatchObject({ page: 2, pages: 2, per_page: perPage, total_files: total });
    expect(view.counts).toMatchObject({ passed: total - total / 10, failed: total / 10 });
  });

  it('a page past the last has no files, and says how many pages there are', async () => {
    const res = await json('&page=3');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ tests: [], page: 3, pages: 2, total_files: total });
    const page = await html('&page=3');
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain(`No files on page 3: the session has ${total} files on 2 pages.`);
    expect(page.body).toContain(`<a rel="prev" href="/1/reports/${session}?token=${token}&amp;page=2">previous page</a>`);
  });

  it('in HTML, each page shows its own files and links to the others, keeping the token', async () => {
    const first = await html();
    expect(first.statusCode).toBe(200);
    expect(first.body).toContain(`Files 1–${perPage} of ${total}, page 1 of 2.`);
    expect(first.body).toContain(`<pre>${output(0)}</pre>`);
    expect(first.body).toContain(`<pre>${output(perPage - 1)}</pre>`);
    expect(first.body).not.toContain(file(perPage));
    expect(first.body).toContain(`passed ${total - total / 10}, failed ${total / 10}`);
    expect(first.body).toContain(`<a rel="next" href="/1/reports/${session}?token=${token}&amp;page=2">next page</a>`);
    expect(first.body).not.toContain('rel="prev"');

    const second = await html('&page=2');
    expect(second.statusCode).toBe(200);
    expect(second.body).toContain(`Files ${perPage + 1}–${total} of ${total}, page 2 of 2.`);
    expect(second.body).toContain(`<pre>${output(perPage)}</pre>`);
    expect(second.body).not.toContain(file(perPage - 1));
    expect(second.body).toContain(`passed ${total - total / 10}, failed ${total / 10}`);
    expect(second.body).toContain(`<a rel="prev" href="/1/reports/${session}?token=${token}&amp;page=1">previous page</a>`);
    expect(second.body).not.toContain('rel="next"');

    // The links work as they are, and the token they carry is never logged.
    const next = /<a rel="next" href="([^"]+)"/.exec(first.body)![1]!.replace(/&amp;/g, '&');
    expect((await h.request({ method: 'GET', url: next })).body).toContain(`Files ${perPage + 1}–${total}`);
    expect(h.logs.join('')).toContain(`"url":"/1/reports/${session}?token=[redacted]&page=2"`);
    expect(h.logs.join('')).not.toContain(token);
  });

  it.each([
    ['0', 'must be at least 1'],
    ['-1', 'must be at least 1'],
    ['', 'must be at least 1'],
    ['1.5', 'expected int'],
    ['two', 'expected number'],
    ['100001', 'must be at most 100000'],
  ])('page=%j is a 400 naming page (%s), as JSON whatever was asked for', async (page, message) => {
    for (const res of [await json(`&page=${page}`), await html(`&page=${page}`)]) {
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({ error: 'invalid request', field: 'page', message });
    }
  });

  it('a session whose files fit on one page has no page links', async () => {
    const s = await insertPostSession(h.db.pool, h.config.secretKey);
    await h.db.pool.query(`INSERT INTO test_results (session_id, path, status, duration_ms, output) VALUES ($1, 'tests/one.sh', 'passed', 1, 'one')`, [
      s.sessionId,
    ]);
    const url = await reportPath(h.db.pool, s.sessionId);
    const view = (await h.request({ method: 'GET', url, headers: { accept: 'application/json' } })).json();
    expect(view).toMatchObject({ page: 1, pages: 1, per_page: perPage, total_files: 1, tests: [{ path: 'tests/one.sh', output: 'one' }] });
    const page = (await h.request({ method: 'GET', url })).body;
    expect(page).toContain('<pre>one</pre>');
    expect(page).not.toContain('<nav>');
    expect(page).not.toContain('page 1 of');
  });
});
