// The keyed trigger endpoint, build status, report pages and health, against a real PostgreSQL.
// Temporal is not part of the integration project: `enqueue` is the harness's recording
// stand-in (test/support/apiApp.ts); the e2e project drives the real one.
import { countRows, seedRepo, startApiHarness, type ApiHarness, type RequestOptions } from '../support/apiApp';
import { eventually } from '../support/wait';
import { reportPath } from '../support/reports';

let h: ApiHarness;
let key: string;
let repoId: number;
let suites: { id: number; branch: string }[];
const KEYS: string[] = [];

beforeAll(async () => {
  h = await startApiHarness();
  const seeded = await seedRepo(h, { org: 'acme', repo: 'widgets', branches: ['master', 'dev'] });
  key = seeded.repo.key;
  repoId = seeded.repo.id;
  suites = seeded.suites;
  KEYS.push(key);
});

afterAll(async () => {
  await h.close();
});

beforeEach(() => {
  h.enqueued.length = 0;
  h.failEnqueue(null);
});

const trigger = (opts: Partial<RequestOptions> & { path?: string } = {}) =>
  h.request({ method: 'POST', url: opts.path ?? `/1/builds/${key}`, ...opts });

const suiteId = (branch: string) => suites.find((s) => s.branch === branch)!.id;

async function sessionRow(id: number) {
  const { rows } = await h.db.pool.query('SELECT * FROM sessions WHERE id = $1', [id]);
  return rows[0];
}

function expectAccepted(res: { statusCode: number; json(): { status: number; guid: string; status_uri: string } }) {
  expect(res.statusCode).toBe(200);
  const body = res.json();
  expect(body).toEqual({ status: 0, guid: expect.stringMatching(/^[0-9a-f-]{36}$/), status_uri: `https://ci.example.test/ci_events/${body.guid}/guid` });
  return body;
}

describe('accepted triggers', () => {
  it('an empty body builds master', async () => {
    const body = expectAccepted(await trigger());
    expect(h.enqueued).toEqual([
      { suiteId: suiteId('master'), sessionId: expect.any(Number), queuePosition: 'tail', repoLabel: 'acme/widgets', branch: 'master' },
    ]);
    const session = await sessionRow(h.enqueued[0]!.sessionId);
    expect(session).toMatchObject({ status: 'queued', branch: 'master', head: 'HEAD', ref: null, force: false, profile_name: 'default', workers: 2 });
    const { rows } = await h.db.pool.query('SELECT * FROM ci_events WHERE guid = $1', [body.guid]);
    expect(rows[0]).toMatchObject({
      repo_id: repoId,
      provider: 'builds',
      decision: 'build',
      reason: null,
      trigger: { provider: 'builds', op: 'push', branch: 'master', head: 'HEAD', scm: 'git', force: false, queuePosition: 'tail', env: {} },
    });
    expect(session.ci_event_id).toBe(rows[0].id);
  });

  it('an empty body with a JSON content type builds master', async () => {
    expectAccepted(await trigger({ headers: { 'content-type': 'application/json' }, payload: '' }));
    expect(h.enqueued[0]).toMatchObject({ branch: 'master' });
  });

  it('the webhook_url the API returned works as is', async () => {
    const repo = (await h.admin('GET', `/api/v1/repos/${repoId}`)).json();
    expectAccepted(await trigger({ path: new URL(repo.webhook_url).pathname }));
  });

  it('a generic JSON body', async () => {
    expectAccepted(
      await trigger({
        payload: { source: 'sluice', op: 'push', branch: 'dev', head: 'abc123', force: true, queue_position: 'head', profile_name: 'nightly', ref: 'refs/pull/1/head', env: { A: 'b' } },
      }),
    );
    expect(h.enqueued).toEqual([{ suiteId: suiteId('dev'), sessionId: expect.any(Number), queuePosition: 'head', repoLabel: 'acme/widgets', branch: 'dev' }]);
    expect(await sessionRow(h.enqueued[0]!.sessionId)).toMatchObject({
      branch: 'dev',
      head: 'abc123',
      force: true,
      profile_name: 'nightly',
      ref: 'refs/pull/1/head',
    });
  });

  it('a form-encoded body', async () => {
    expectAccepted(await trigger({ headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'branch=dev&head=def456&force=true' }));
    expect(await sessionRow(h.enqueued[0]!.sessionId)).toMatchObject({ branch: 'dev', head: 'def456', force: true });
  });

  it('a form-encoded payload with a ref', async () => {
    const payload = `payload=${encodeURIComponent(JSON.stringify({ ref: 'refs/heads/dev' }))}`;
    expectAccepted(await trigger({ headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload }));
    expect(h.enqueued[0]).toMatchObject({ branch: 'dev' });
  });

  it('?branch= picks the branch when the body has none', async () => {
    expectAccepted(await trigger({ path: `/1/builds/${key}?branch=dev` }));
    expect(h.enqueued[0]).toMatchObject({ branch: 'dev' });
  });

  it('a Mercurial repository builds tip of its branch', async () => {
    const hg = await seedRepo(h, { org: 'hgorg', repo: 'hgrepo', scm: 'hg', branches: ['default'] });
    KEYS.push(hg.repo.key);
    expectAccepted(await trigger({ path: `/1/builds/${hg.repo.key}`, payload: { source: 'sluice', op: 'push', force: false, branch: 'default', ref: 'default' } }));
    expect(await sessionRow(h.enqueued[0]!.sessionId)).toMatchObject({ branch: 'default', head: 'tip', ref: 'default' });
  });
});

describe('refused triggers', () => {
  async function expectNothingStored(fn: () => Promise<void>) {
    const before = [await countRows(h, 'ci_events'), await countRows(h, 'sessions')];
    await fn();
    expect([await countRows(h, 'ci_events'), await countRows(h, 'sessions')]).toEqual(before);
    expect(h.enqueued).toEqual([]);
  }

  it('404 for an unknown key', async () => {
    await expectNothingStored(async () => {
      const res = await trigger({ path: '/1/builds/not-a-real-key-at-all-0000000000' });
      expect(res.statusCode).toBe(404);
      expect(res.json()).toEqual({ error: 'not found', message: 'unknown key' });
    });
  });

  it('404 for an unknown provider, even with a good key', async () => {
    const res = await trigger({ path: `/1/nosuchhub/${key}` });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ error: 'unknown provider', message: 'no such provider' });
  });

  it('404 for wrong paths and methods', async () => {
    for (const [method, url] of [
      ['GET', `/1/builds/${key}`],
      ['POST', `/2/builds/${key}`],
      ['POST', `/1/builds/${key}/extra`],
      ['POST', '/1/builds/'],
    ]) {
      const res = await h.request({ method: method!, url: url! });
      expect(res.statusCode).toBe(404);
      expect(res.json()).toMatchObject({ error: 'not found' });
    }
  });

  it('422 DROPPED for a branch without a suite, storing nothing', async () => {
    await expectNothingStored(async () => {
      const res = await trigger({ payload: { branch: 'no-suite-here' } });
      expect(res.statusCode).toBe(422);
      expect(res.headers['content-type']).toMatch(/^text\/plain/);
      expect(res.body).toBe('DROPPED');
    });
  });

  it.each<[string, Partial<RequestOptions>, { field: string; message: string | RegExp }]>([
    ['a wrong type', { payload: { force: 'yes' } }, { field: 'force', message: 'expected boolean' }],
    ['bad JSON', { headers: { 'content-type': 'application/json' }, payload: '{"branch":' }, { field: 'body', message: /^invalid JSON/ }],
    ['a JSON array', { headers: { 'content-type': 'application/json' }, payload: '[]' }, { field: 'body', message: 'expected a JSON object' }],
    ['a body of another type', { headers: { 'content-type': 'text/plain' }, payload: 'hello' }, { field: 'content-type', message: /unsupported content type/ }],
    ['a body without a type', { payload: Buffer.from('{"branch":"dev"}') }, { field: 'content-type', message: /unsupported content type/ }],
    ['a bad branch', { payload: { branch: '-rf' } }, { field: 'branch', message: 'must not start with "-"' }],
    ['a bad form force', { headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'force=maybe' }, { field: 'force', message: 'expected "true" or "false"' }],
  ])('400 naming the field for %s', async (_name, opts, expected) => {
    await expectNothingStored(async () => {
      const res = await trigger(opts);
      expect(res.statusCode).toBe(400);
      const body = res.json();
      expect(body.error).toBe('invalid trigger');
      expect(body.field).toBe(expected.field);
      if (typeof expected.message === 'string') expect(body.message).toBe(expected.message);
      else expect(body.message).toMatch(expected.message);
    });
  });

  it('413 for a body over 1 MiB', async () => {
    await expectNothingStored(async () => {
      const res = await trigger({ payload: { branch: 'dev', junk: 'x'.repeat(1024 * 1024) } });
      expect(res.statusCode).toBe(413);
      expect(res.json()).toMatchObject({ error: 'payload too large' });
    });
  });

  it('503 and nothing kept when the build cannot be queued', async () => {
    h.failEnqueue(new Error('temporal is down'));
    try {
      await expectNothingStored(async () => {
        const res = await trigger({ payload: { branch: 'dev' } });
        expect(res.statusCode).toBe(503);
        expect(res.json()).toEqual({ error: 'unavailable', message: 'could not queue the build; nothing was accepted, try again' });
      });
    } finally {
      h.failEnqueue(null);
    }
  });
});

describe('status and reports', () => {
  let guid: string;
  let session: number;

  beforeAll(async () => {
    h.enqueued.length = 0;
    const res = await trigger({
      payload: { branch: 'dev', changeset: { kind: 'github', id: '42', url: 'https://scm.example.test/pr/42?a=1&b="2"' } },
    });
    guid = res.json().guid;
    session = h.enqueued[0]!.sessionId;
    await h.db.pool.query(
      `UPDATE sessions SET status = 'failed', commit_id = 'c0ffee', counts = '{"passed":1,"failed":1}', committers = '["Ann <ann@example.com>"]',
              timing = '{"setup": 1700000000.5}' WHERE id = $1`,
      [session],
    );
    await h.db.pool.query(
      `INSERT INTO test_results (session_id, path, status, exit_code, duration_ms, output) VALUES
         ($1, 'tests/ok.sh', 'passed', 0, 1200, 'all good & fine'),
         ($1, 'tests/<b>bad</b>.sh', 'failed', 1, 30, '<script>alert("x")</script>')`,
      [session],
    );
  });

  it('GET status_uri tells what became of the trigger', async () => {
    const res = await h.request({ method: 'GET', url: `/ci_events/${guid}/guid` });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      guid,
      received_at: expect.any(String),
      provider: 'builds',
      decision: 'build',
      reason: null,
      branch: 'dev',
      recorded: true,
      sessions: [
        {
          session,
          status: 'failed',
          url: `https://ci.example.test${await reportPath(h.db.pool, session)}`,
          commit_id: 'c0ffee',
          counts: { notstarted: 0, started: 0, passed: 1, failed: 1, pending: 0, skipped: 0, error: 0 },
        },
      ],
    });
  });

  it('404 for an unknown or malformed guid', async () => {
    for (const g of ['00000000-0000-0000-0000-000000000000', 'nope', `${guid}x`]) {
      const res = await h.request({ method: 'GET', url: `/ci_events/${g}/guid` });
      expect(res.statusCode).toBe(404);
      expect(res.json()).toMatchObject({ error: 'not found' });
    }
  });

  it('the report page is HTML with everything escaped', async () => {
    const res = await h.request({ method: 'GET', url: await reportPath(h.db.pool, session), headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' } });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.headers['content-security-policy']).toContain("default-src 'none'");
    const html = res.body;
    expect(html).not.toContain('<script');
    expect(html).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;');
    expect(html).toContain('tests/&lt;b&gt;bad&lt;/b&gt;.sh');
    expect(html).not.toContain('<b>bad');
    expect(html).toContain('all good &amp; fine');
    expect(html).toContain('acme/widgets');
    expect(html).toContain('c0ffee');
    expect(html).toContain('Ann &lt;ann@example.com&gt;');
    expect(html).toContain('href="https://scm.example.test/pr/42?a=1&amp;b=%222%22"');
    expect(html).toContain('1.20 s');
  });

  it('the report as JSON with Accept: application/json', async () => {
    const res = await h.request({ method: 'GET', url: await reportPath(h.db.pool, session), headers: { accept: 'application/json' } });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.json()).toMatchObject({
      session,
      guid,
      url: `https://ci.example.test${await reportPath(h.db.pool, session)}`,
      status: 'failed',
      branch: 'dev',
      commit_id: 'c0ffee',
      committers: ['Ann <ann@example.com>'],
      counts: { passed: 1, failed: 1, error: 0 },
      workers: 2,
      profile_name: 'default',
      timing: { ci_received_at: expect.any(Number), setup: 1700000000.5 },
      repository: { name: 'widgets', url: 'git@scm.example.test:acme/widgets.git', org_name: 'acme' },
      changeset: { kind: 'github', id: '42' },
      tests: [
        { path: 'tests/<b>bad</b>.sh', status: 'failed', exit_code: 1, duration_ms: 30, output: '<script>alert("x")</script>' },
        { path: 'tests/ok.sh', status: 'passed', exit_code: 0, duration_ms: 1200, output: 'all good & fine' },
      ],
    });
  });

  it('opens only with its token or the admin token: a session number alone is 404, so reports cannot be walked', async () => {
    const path = await reportPath(h.db.pool, session);
    expect((await h.request({ method: 'GET', url: `/1/reports/${session}` })).statusCode).toBe(404);
    expect((await h.request({ method: 'GET', url: `/1/reports/${session}?token=${'0'.repeat(32)}` })).statusCode).toBe(404);
    // Another session's token opens only that session.
    const { rows } = await h.db.pool.query('SELECT report_token FROM sessions WHERE id <> $1 LIMIT 1', [session]);
    const other = rows[0].report_token as string;
    expect((await h.request({ method: 'GET', url: `/1/reports/${session}?token=${other}` })).statusCode).toBe(404);
    expect((await h.request({ method: 'GET', url: path })).statusCode).toBe(200);
    const admin = await h.request({ method: 'GET', url: `/1/reports/${session}`, headers: { authorization: `Bearer ${h.config.adminToken}` } });
    expect(admin.statusCode).toBe(200);
    expect(path).toMatch(/\?token=[0-9a-f]{32}$/);
  });

  it('404 for an unknown report', async () => {
    expect((await h.request({ method: 'GET', url: '/1/reports/999999' })).statusCode).toBe(404);
    expect((await h.request({ method: 'GET', url: '/1/reports/abc' })).statusCode).toBe(404);
  });

  it('the admin API shows the session with its tests, without output', async () => {
    const res = await h.admin('GET', `/api/v1/sessions/${session}`);
    expect(res.statusCode).toBe(200);
    const view = res.json();
    expect(view).toMatchObject({ session, guid, status: 'failed', commit_id: 'c0ffee', workers: 2 });
    // Written without the shared list or a batch: issue 22's fields at their defaults; no output.
    const plain = { runner: null, worker: null, batch: null, attempts: 1, flaky: false, ran_first: null, started_at: null, finished_at: expect.any(String) };
    expect(view.tests).toEqual([
      { path: 'tests/<b>bad</b>.sh', status: 'failed', exit_code: 1, duration_ms: 30, ...plain },
      { path: 'tests/ok.sh', status: 'passed', exit_code: 0, duration_ms: 1200, ...plain },
    ]);
  });
});

describe('health', () => {
  it('200 when everything answers', async () => {
    const res = await h.request({ method: 'GET', url: '/healthz' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ ok: true });
  });

  it('503 naming what is missing', async () => {
    h.setHealth({ ok: false, missing: ['temporal'] });
    const res = await h.request({ method: 'GET', url: '/healthz' });
    h.setHealth(null);
    expect(res.statusCode).toBe(503);
    expect(res.json()).toEqual({ ok: false, missing: ['temporal'] });
  });
});

describe('logs', () => {
  it('never contain a repository key or the admin token, but do log requests', async () => {
    // A mistyped path still carries the real key.
    await trigger({ path: `/1/build/${key}` });
    await trigger({ path: `/1/builds/${key}?branch=dev` });
    const logs = h.logs.join('');
    expect(logs).toContain('"url":"/1/builds/[redacted]?branch=dev"');
    expect(logs).toContain('"url":"/1/build/[redacted]"');
    expect(logs).toContain(`"url":"/1/reports/`);
    // Report pages were opened by their tokens above; none is in the log.
    expect(logs).toContain('?token=[redacted]');
    expect(logs).not.toMatch(/token=[0-9a-f]{32}/);
    for (const k of KEYS) expect(logs).not.toContain(k);
    expect(logs).not.toContain(h.config.adminToken);
    expect(logs).toContain('trigger refused: it could not be handed to Temporal');
  });

  it('one line per request, once it has answered, with its status and time', async () => {
    const before = h.logs.length;
    await trigger({ path: `/1/builds/${key}?branch=one-line` });
    const ours = () =>
      h.logs
        .slice(before)
        .join('')
        .split('\n')
        .filter((l) => l.includes('branch=one-line'))
        .map((l) => JSON.parse(l) as { msg: string; res?: { statusCode: number }; responseTime?: number });
    // Written once the answer has gone out, which may be a moment after the client has it.
    await eventually('the request to be logged', async () => ours().length > 0);
    // A request that has answered, and another after it: still the one line.
    await trigger({ path: `/1/builds/${key}?branch=after` });
    await eventually('the next request to be logged', async () => h.logs.slice(before).join('').includes('branch=after'));
    const lines = ours();
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ msg: 'request completed', res: { statusCode: expect.any(Number) }, responseTime: expect.any(Number) });
  });
});
