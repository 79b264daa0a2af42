/**
 * Triggers while PostgreSQL is away (issue 26): the API decides them from what it knows of the
 * repositories, hands them over (Temporal's part is the harness here: it holds what it is
 * handed, as Temporal would) and answers 200; their records are written once the database is
 * back. A PostgreSQL server of this file's own, stopped and started for real.
 */
import examples from '@octokit/webhooks-examples';
import { keyHash } from '../../src/crypto/sealed';
import { recordIntakes } from '../../src/db/intake';
import { seedRepo, startApiHarness, type ApiHarness } from '../support/apiApp';
import { startPrivatePostgres, type PrivatePostgres } from '../support/privatePostgres';
import { eventually } from '../support/wait';

let pg: PrivatePostgres;
let h: ApiHarness;

beforeAll(async () => {
  pg = await startPrivatePostgres();
  h = await startApiHarness({ databaseUrl: pg.url, records: 'held' });
}, 60_000);

afterAll(async () => {
  await h?.close().catch(() => undefined);
  await pg?.remove();
});

/** A real GitHub push (from @octokit/webhooks-examples) to `branch` whose head commit says `message`. */
function githubPush(branch: string, message: string): Record<string, unknown> {
  const push = (examples.find((d) => d.name === 'push')!.examples as unknown as Record<string, unknown>[]).find((e) => e.ref === 'refs/heads/master')!;
  const head = { ...(push.head_commit as Record<string, unknown>), message };
  return { ...structuredClone(push), ref: `refs/heads/${branch}`, created: false, deleted: false, head_commit: head, commits: [head] };
}

const trigger = (key: string, body: unknown) => h.request({ method: 'POST', url: `/1/builds/${key}`, payload: body });

it('accepts triggers while PostgreSQL is away, answers their status_uri, and records them once it is back', async () => {
  // Made through the admin API just before the outage and never triggered: the API learns of it by notification.
  const seeded = await seedRepo(h, { branches: ['master', 'dev'] });
  const key = seeded.repo.key;
  expect((await h.admin('PUT', `/api/v1/repos/${seeded.repo.id}/branches/off`, { enabled: false })).statusCode).toBe(200);
  await eventually('the API to remember the repository, its suites and the branch switched off', async () => {
    const known = h.knowledge.remembered(keyHash(key));
    return known?.target.suites.length === 2 && known.branches.get('off')?.enabled === false;
  });

  await pg.stop();
  try {
    const built = await trigger(key, { branch: 'master' });
    expect(built.statusCode).toBe(200);
    const { guid } = built.json();
    // A skip (a push whose head commit says [no ci]) is recorded too.
    const skipped = await h.request({ method: 'POST', url: `/1/github/${key}`, headers: { 'x-github-event': 'push' }, payload: githubPush('dev', '[no ci] docs') });
    expect(skipped.statusCode).toBe(200);
    // The rules still apply: no suite, a branch switched off, an unknown key.
    expect(await trigger(key, { branch: 'feature' })).toMatchObject({ statusCode: 422, body: 'DROPPED' });
    expect(await trigger(key, { branch: 'off' })).toMatchObject({ statusCode: 422, body: 'DROPPED' });
    expect((await trigger('no-such-key', { branch: 'master' })).statusCode).toBe(404);

    const status = await h.request({ method: 'GET', url: `/ci_events/${guid}/guid` });
    expect(status.statusCode).toBe(200);
    expect(status.json()).toMatchObject({ guid, decision: 'build', branch: 'master', recorded: false, sessions: [] });

    // What needs the database says so, with a time to try again: never a 500.
    const admin = await h.admin('GET', `/api/v1/repos/${seeded.repo.id}`);
    expect(admin.statusCode).toBe(503);
    expect(admin.headers['retry-after']).toBe('5');
    expect(admin.json()).toMatchObject({ error: 'unavailable' });
  } finally {
    await pg.start();
  }

  // As the workflows do once PostgreSQL is back: record what was handed over, in order.
  expect(h.handed).toHaveLength(3); // the build, the skip and the branch `feature` shown (a drop that records a branch)
  const ids = await recordIntakes(h.db.pool, h.handed);
  expect(ids.size).toBe(1);
  const { rows } = await h.db.pool.query<{ decision: string; branch: string; sessions: number }>(
    `SELECT e.decision, e.trigger->>'branch' AS branch, count(s.id)::int AS sessions
       FROM ci_events e LEFT JOIN sessions s ON s.ci_event_id = e.id WHERE e.repo_id = $1 GROUP BY e.id ORDER BY e.id`,
    [seeded.repo.id],
  );
  expect(rows).toEqual([
    { decision: 'build', branch: 'master', sessions: 1 },
    { decision: 'skip', branch: 'dev', sessions: 0 },
  ]);
  // Recorded twice (a workflow's activity retried after its commit): nothing more.
  await recordIntakes(h.db.pool, h.handed);
  expect((await h.db.pool.query('SELECT count(*)::int AS n FROM sessions')).rows[0].n).toBe(1);
});

it('an API that has never read its repositories answers 503 with Retry-After, not 500', async () => {
  const other = await startApiHarness({ databaseUrl: pg.url, records: 'held' });
  const seeded = await seedRepo(other);
  await other.close();
  await pg.stop();
  try {
    const fresh = await startApiHarness({ databaseUrl: pg.url, records: 'held', migrate: false });
    try {
      const res = await fresh.request({ method: 'POST', url: `/1/builds/${seeded.repo.key}`, payload: { branch: 'master' } });
      expect(res.statusCode).toBe(503);
      expect(res.headers['retry-after']).toBe('5');
    } finally {
      await fresh.close();
    }
  } finally {
    await pg.start();
  }
});

it('a repository deleted before its trigger is recorded: the record writes nothing and does not fail (a retried activity would never end)', async () => {
  const seeded = await seedRepo(h, { branches: ['master'] });
  h.handed.length = 0;
  expect((await trigger(seeded.repo.key, { branch: 'master' })).statusCode).toBe(200);
  const delivered = await trigger(seeded.repo.key, { branch: 'never-seen' }); // a drop that shows a new branch
  expect(delivered.statusCode).toBe(422);
  expect(h.handed).toHaveLength(2);
  expect((await h.admin('DELETE', `/api/v1/repos/${seeded.repo.id}?force=true`)).statusCode).toBe(204);
  expect(await recordIntakes(h.db.pool, h.handed)).toEqual(new Map());
  expect((await h.db.pool.query('SELECT 1 FROM ci_events WHERE repo_id = $1 UNION ALL SELECT 1 FROM branches WHERE repo_id = $1', [seeded.repo.id])).rowCount).toBe(0);
});
