// `GET /api/v1/sessions`: the builds list across repositories, against a real PostgreSQL.
// Sessions are made as users make them, by triggers (the harness's enqueue stands in for
// Temporal); their outcome is then written as a finished build would leave it.
import { startApiHarness, seedRepo, type ApiHarness } from '../support/apiApp';

let h: ApiHarness;
beforeAll(async () => {
  h = await startApiHarness();
});
afterAll(async () => {
  await h.close();
});

async function trigger(webhookUrl: string, branch: string): Promise<number> {
  const res = await h.request({ method: 'POST', url: new URL(webhookUrl).pathname, payload: { branch, force: true } });
  expect(res.statusCode).toBe(200);
  return h.enqueued.at(-1)!.sessionId;
}

async function finish(session: number, status: string, timing: Record<string, number>): Promise<void> {
  await h.db.pool.query('UPDATE sessions SET status = $2, timing = $3, commit_id = $4 WHERE id = $1', [session, status, JSON.stringify(timing), 'a'.repeat(40)]);
}

type Listed = { session: number; status: string; branch: string; repository: { name: string; org_name: string }; duration_ms: number | null; url: string; counts: Record<string, number> };

const list = async (query = ''): Promise<Listed[]> => {
  const res = await h.admin('GET', `/api/v1/sessions${query}`);
  expect(res.statusCode).toBe(200);
  return res.json();
};

it('lists sessions across repositories, newest first, narrowed by organization, repository, branch and status, a page at a time', async () => {
  const a = await seedRepo(h, { org: 'acme', repo: 'web', branches: ['master', 'dev'] });
  const b = await seedRepo(h, { org: 'umbrella', repo: 'api', branches: ['master'] });
  const s1 = await trigger(a.repo.webhook_url, 'master');
  const s2 = await trigger(a.repo.webhook_url, 'dev');
  const s3 = await trigger(b.repo.webhook_url, 'master');
  await finish(s1, 'passed', { queue_first_allowed_at: 100, done: 102.5 });
  await finish(s2, 'failed', { queue_first_allowed_at: 200, done: 200.25 });

  const all = await list();
  expect(all.map((s) => s.session)).toEqual([s3, s2, s1]);
  expect(all[2]).toMatchObject({ status: 'passed', branch: 'master', repository: { name: 'web', org_name: 'acme' }, duration_ms: 2500 });
  expect(all[0]).toMatchObject({ status: 'queued', duration_ms: null, counts: expect.objectContaining({ passed: 0, failed: 0 }) });
  // The report link opens the page (it carries the session's token).
  const report = await h.request({ method: 'GET', url: new URL(all[0]!.url).pathname + new URL(all[0]!.url).search });
  expect(report.statusCode).toBe(200);

  expect((await list('?org=acme')).map((s) => s.session)).toEqual([s2, s1]);
  expect((await list(`?org=${b.orgId}`)).map((s) => s.session)).toEqual([s3]);
  expect((await list(`?repo=${encodeURIComponent('acme/web')}&branch=dev`)).map((s) => s.session)).toEqual([s2]);
  expect((await list('?status=failed')).map((s) => s.session)).toEqual([s2]);
  // Pages: `before` the last session of the one before.
  const first = await list('?limit=2');
  expect(first.map((s) => s.session)).toEqual([s3, s2]);
  expect((await list(`?limit=2&before=${first.at(-1)!.session}`)).map((s) => s.session)).toEqual([s1]);
});

it('answers 400 naming the field for a bad filter, and 404 for an unknown organization or repository', async () => {
  for (const [query, field] of [
    ['?status=green', 'status'],
    ['?limit=0', 'limit'],
    ['?limit=201', 'limit'],
    ['?before=x', 'before'],
  ] as const) {
    const res = await h.admin('GET', `/api/v1/sessions${query}`);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ field });
  }
  expect((await h.admin('GET', '/api/v1/sessions?org=nobody')).statusCode).toBe(404);
  expect((await h.admin('GET', `/api/v1/sessions?repo=${encodeURIComponent('acme/nothing')}`)).statusCode).toBe(404);
  // Like the rest of the management API: the admin token or nothing.
  expect((await h.request({ method: 'GET', url: '/api/v1/sessions' })).statusCode).toBe(401);
});

/**
 * Builds as a long history leaves them, made straight in SQL (triggers would take minutes):
 * `n` builds, the i-th on `suites[i % suites.length]`, every 7th failed, every 50th running.
 */
async function history(suites: { id: number; branch: string }[], repoId: number, n: number): Promise<void> {
  await h.db.pool.query(
    `WITH e AS (
       INSERT INTO ci_events (guid, repo_id, provider, decision, trigger)
       SELECT gen_random_uuid(), $1, 'generic', 'build', '{}' FROM generate_series(1, $3) RETURNING id
     ), numbered AS (SELECT id, row_number() OVER (ORDER BY id) - 1 AS i FROM e)
     INSERT INTO sessions (ci_event_id, suite_id, branch, head, status)
     SELECT n.id, su.id, su.branch, 'a', CASE WHEN n.i % 50 = 0 THEN 'running' WHEN n.i % 7 = 0 THEN 'failed' ELSE 'passed' END
       FROM numbered n JOIN unnest($2::bigint[], $4::text[]) WITH ORDINALITY AS su(id, branch, k) ON su.k - 1 = n.i % cardinality($2::bigint[])
      ORDER BY n.i`,
    [repoId, suites.map((s) => s.id), n, suites.map((s) => s.branch)],
  );
}

/** Every page of `query`, following `before`, until an empty one; each page's sessions. */
async function allPages(query: string): Promise<number[][]> {
  const pages: number[][] = [];
  for (let before = ''; pages.length < 100; ) {
    const page = (await list(`?limit=50${query}${before}`)).map((s) => s.session);
    if (page.length === 0) return pages;
    pages.push(page);
    before = `&before=${page.at(-1)!}`;
  }
  throw new Error('more than 100 pages');
}

it('pages through a long history by `before` under every filter: each build once, newest first, none left out', async () => {
  const a = await seedRepo(h, { org: 'deep', repo: 'mono', branches: ['master', 'feature', 'release'] });
  const b = await seedRepo(h, { org: 'shallow', repo: 'tool', branches: ['master'] });
  await history(a.suites, a.repo.id, 1_200);
  await history(b.suites, b.repo.id, 300);
  const expected = async (where: string, params: unknown[]) =>
    (await h.db.pool.query<{ id: string }>(
      `SELECT s.id FROM sessions s JOIN suites su ON su.id = s.suite_id JOIN repos r ON r.id = su.repo_id WHERE ${where} ORDER BY s.id DESC`,
      params,
    )).rows.map((r) => Number(r.id));

  for (const [query, where, params] of [
    [`&repo=${a.repo.id}`, 'r.id = $1', [a.repo.id]],
    [`&repo=${a.repo.id}&status=failed`, "r.id = $1 AND s.status = 'failed'", [a.repo.id]],
    [`&repo=${a.repo.id}&branch=feature`, "r.id = $1 AND s.branch = 'feature'", [a.repo.id]],
    ['&org=shallow', 'r.org_id = $1', [b.orgId]],
    ['&org=deep&status=running', "r.org_id = $1 AND s.status = 'running'", [a.orgId]],
    ['&status=running', "s.status = 'running' AND r.org_id IN ($1, $2)", [a.orgId, b.orgId]],
  ] as const) {
    const pages = await allPages(query);
    const want = await expected(where, [...params]);
    expect(want.length).toBeGreaterThan(0);
    // Full pages until the last; together, exactly the builds the filter names, newest first.
    expect(pages.slice(0, -1).every((p) => p.length === 50)).toBe(true);
    expect(pages.flat()).toEqual(want);
  }
  // Unfiltered: the whole history of both, 1,500 builds and the earlier tests' own.
  const everything = (await allPages('')).flat();
  expect(everything).toEqual([...everything].sort((x, y) => y - x));
  expect(new Set(everything).size).toBe(everything.length);
  expect(everything).toEqual(expect.arrayContaining(await expected('r.org_id IN ($1, $2)', [a.orgId, b.orgId])));
});
