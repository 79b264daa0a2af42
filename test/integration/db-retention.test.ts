// The retention cleanup's SQL and activity against a real PostgreSQL: what is old goes, in
// batches, with everything recorded of it; what is new, queued or running stays, however old.
import type { Config } from '../../src/config';
import { createCleanupActivity } from '../../src/activities/cleanup';
import { deleteOldSessions, SESSION_RETENTION_BATCH } from '../../src/db/retention';
import { createTestDatabase, type TestDatabase } from '../support/db';

let db: TestDatabase;
let suiteId: number;
let repoId: number;
let webhookId: number;

beforeAll(async () => {
  db = await createTestDatabase('sluice_retention');
  const org = await db.pool.query<{ id: number }>(`INSERT INTO orgs (name, email) VALUES ('acme', 'ci@acme.test') RETURNING id`);
  const repo = await db.pool.query<{ id: number }>(
    `INSERT INTO repos (org_id, name, scm, pull_url, key_hash, key_sealed, ssh_public_key, ssh_private_key_sealed)
     VALUES ($1, 'app', 'git', 'git@x:a.git', '\\x01', 'k', 'pub', 'priv') RETURNING id`,
    [org.rows[0]!.id],
  );
  repoId = repo.rows[0]!.id;
  const suite = await db.pool.query<{ id: number }>(`INSERT INTO suites (repo_id, branch, test_pattern) VALUES ($1, 'master', '*.sh') RETURNING id`, [repoId]);
  suiteId = suite.rows[0]!.id;
  const hook = await db.pool.query<{ id: number }>(`INSERT INTO webhooks (org_id, url) VALUES ($1, 'https://h.test') RETURNING id`, [org.rows[0]!.id]);
  webhookId = hook.rows[0]!.id;
});

afterAll(async () => {
  await db.drop();
});

const config = (retentionDays?: number, deliveryRetentionDays?: number) => ({ retentionDays, deliveryRetentionDays }) as Config;

/** A trigger received `ageDays` ago; with `status`, a session of it that ended (or not) then. */
async function session(ageDays: number, status: string, parentId: number | null = null, ciEventId?: number): Promise<{ session: number; event: number }> {
  const event =
    ciEventId ??
    (
      await db.pool.query<{ id: number }>(
        `INSERT INTO ci_events (guid, repo_id, provider, decision, trigger, received_at)
         VALUES (gen_random_uuid(), $1, 'builds', 'build', '{}', now() - make_interval(days => $2)) RETURNING id`,
        [repoId, ageDays],
      )
    ).rows[0]!.id;
  const { rows } = await db.pool.query<{ id: number }>(
    `INSERT INTO sessions (ci_event_id, suite_id, parent_id, status, branch, head, created_at, updated_at)
     VALUES ($1, $2, $3, $4, 'master', 'HEAD', now() - make_interval(days => $5), now() - make_interval(days => $5)) RETURNING id`,
    [event, suiteId, parentId, status, ageDays],
  );
  const id = rows[0]!.id;
  await db.pool.query(`INSERT INTO test_results (session_id, path, status, duration_ms, output) VALUES ($1, 't.sh', 'passed', 1, 'output')`, [id]);
  await db.pool.query(`INSERT INTO test_cases (session_id, file, name, status) VALUES ($1, 'r.xml', 'c', 'passed')`, [id]);
  await db.pool.query(`INSERT INTO post_build_steps (session_id, step, ok, detail) VALUES ($1, 'chat', true, 'ok')`, [id]);
  return { session: id, event };
}

async function delivery(ageDays: number, sessionId: number | null): Promise<number> {
  const { rows } = await db.pool.query<{ id: number }>(
    `INSERT INTO deliveries (webhook_id, session_id, event, xid, attempt, outcome, duration_ms, created_at)
     VALUES ($1, $2, 'stop', gen_random_uuid()::text, 1, 'delivered', 1, now() - make_interval(days => $3)) RETURNING id`,
    [webhookId, sessionId, ageDays],
  );
  return rows[0]!.id;
}

async function skippedTrigger(ageDays: number): Promise<number> {
  const { rows } = await db.pool.query<{ id: number }>(
    `INSERT INTO ci_events (guid, repo_id, provider, decision, reason, trigger, received_at)
     VALUES (gen_random_uuid(), $1, 'github', 'skip', 'pull requests only', '{}', now() - make_interval(days => $2)) RETURNING id`,
    [repoId, ageDays],
  );
  return rows[0]!.id;
}

const exists = async (table: string, id: number) => (await db.pool.query(`SELECT 1 FROM ${table} WHERE id = $1`, [id])).rowCount === 1;
const rowsOf = async (table: string, sessionId: number) => (await db.pool.query(`SELECT 1 FROM ${table} WHERE session_id = $1`, [sessionId])).rowCount;

it('deletes ended sessions older than the limit with their results, outputs, cases and steps, and their triggers; keeps the new, the queued and the running', async () => {
  const old = await session(100, 'passed');
  const oldFailed = await session(95, 'failed');
  const recent = await session(10, 'failed');
  const oldRunning = await session(200, 'running');
  const oldQueued = await session(200, 'queued');
  // A plan: the parent ended long ago, its parts go with it.
  const parent = await session(120, 'passed');
  const part = await session(120, 'passed', parent.session, parent.event);
  // A plan whose part is somehow still under way: kept whole.
  const busyParent = await session(120, 'error');
  const busyPart = await session(120, 'running', busyParent.session, busyParent.event);
  // A trigger with two sessions: one old and ended, one still running: the trigger stays.
  const shared = await session(150, 'passed');
  const sharedRunning = await session(150, 'running', null, shared.event);
  const oldSkip = await skippedTrigger(100);
  const newSkip = await skippedTrigger(1);
  const oldAttempt = await delivery(40, old.session);
  const newAttempt = await delivery(5, recent.session);
  // Signed-in browsers: one past its end, one not.
  const user = (await db.pool.query<{ id: string }>(`INSERT INTO users (name, email) VALUES ('Dev', 'dev@example.com') RETURNING id`)).rows[0]!.id;
  await db.pool.query(
    `INSERT INTO web_sessions (id_hash, user_id, name, expires_at) VALUES ('\\x01', $1, 'Dev', now() - interval '1 minute'), ('\\x02', $1, 'Dev', now() + interval '1 hour')`,
    [user],
  );

  const result = await createCleanupActivity({ pool: db.pool, config: config(90, 30) })();
  expect(result).toEqual({ sessionRetentionDays: 90, deliveryRetentionDays: 30, sessions: 4, ciEvents: 4, deliveries: 1, artifactSessions: 0, artifactBlobs: 0, cacheRepos: 0, webSessions: 1 });
  expect((await db.pool.query(`SELECT encode(id_hash, 'hex') AS id FROM web_sessions`)).rows).toEqual([{ id: '02' }]);

  for (const gone of [old, oldFailed, parent, shared]) {
    expect(await exists('sessions', gone.session)).toBe(false);
    for (const table of ['test_results', 'test_cases', 'post_build_steps']) expect(await rowsOf(table, gone.session)).toBe(0);
  }
  expect(await exists('sessions', part.session)).toBe(false);
  for (const gone of [old.event, oldFailed.event, parent.event, oldSkip]) expect(await exists('ci_events', gone)).toBe(false);
  for (const kept of [recent, oldRunning, oldQueued, busyParent, busyPart, sharedRunning]) {
    expect(await exists('sessions', kept.session)).toBe(true);
    expect(await rowsOf('test_results', kept.session)).toBe(1);
  }
  for (const kept of [recent.event, oldRunning.event, oldQueued.event, busyParent.event, shared.event, newSkip]) expect(await exists('ci_events', kept)).toBe(true);
  expect(await exists('deliveries', oldAttempt)).toBe(false);
  expect(await exists('deliveries', newAttempt)).toBe(true);

  // A second run finds nothing more.
  expect(await createCleanupActivity({ pool: db.pool, config: config(90, 30) })()).toMatchObject({ sessions: 0, ciEvents: 0, deliveries: 0 });
});

it('0 days keeps them for good; the defaults are 90 and 30 days', async () => {
  const old = await session(3000, 'passed');
  const attempt = await delivery(3000, old.session);
  expect(await createCleanupActivity({ pool: db.pool, config: config(0, 0) })()).toEqual({
    sessionRetentionDays: 0,
    deliveryRetentionDays: 0,
    sessions: 0,
    ciEvents: 0,
    deliveries: 0,
    artifactSessions: 0,
    artifactBlobs: 0,
    cacheRepos: 0,
    webSessions: 0,
  });
  expect(await exists('sessions', old.session)).toBe(true);
  expect(await exists('deliveries', attempt)).toBe(true);

  const result = await createCleanupActivity({ pool: db.pool, config: config() })();
  expect(result).toMatchObject({ sessionRetentionDays: 90, deliveryRetentionDays: 30, sessions: 1, deliveries: 1 });
  expect(await exists('sessions', old.session)).toBe(false);
});

it('deletes in batches: one statement deletes at most its limit, oldest first; the activity goes on until done', async () => {
  const made = [];
  for (let i = 0; i < 5; i++) made.push(await session(100 + i, 'skipped'));
  expect(await deleteOldSessions(db.pool, 90, 2)).toBe(2);
  // The two that ended first (104 and 103 days ago) went.
  expect(await exists('sessions', made[4]!.session)).toBe(false);
  expect(await exists('sessions', made[3]!.session)).toBe(false);
  expect(await exists('sessions', made[0]!.session)).toBe(true);
  expect(await createCleanupActivity({ pool: db.pool, config: config(90, 30) })()).toMatchObject({ sessions: 3 });
});

it('deletes old delivery attempts before old sessions, so no deleted session has attempts left to unlink; sessions go a bounded batch at a time', async () => {
  // Kept as long as their sessions: both expire in the same run.
  const old = await session(200, 'passed');
  const attempt = await delivery(200, old.session);
  const recent = await session(1, 'passed');
  const recentAttempt = await delivery(1, recent.session);
  const many = [];
  for (let i = 0; i < SESSION_RETENTION_BATCH + 5; i++) many.push(await session(150, 'skipped'));
  // Every row of deliveries that retention rewrote (ON DELETE SET NULL is an UPDATE) counted.
  await db.pool.query(`CREATE TABLE delivery_updates (id bigint);
    CREATE FUNCTION count_delivery_update() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO delivery_updates VALUES (OLD.id); RETURN NEW; END $$;
    CREATE TRIGGER delivery_updates AFTER UPDATE ON deliveries FOR EACH ROW EXECUTE FUNCTION count_delivery_update();`);
  try {
    const result = await createCleanupActivity({ pool: db.pool, config: config(100, 100) })();
    expect(result).toMatchObject({ deliveries: 1, sessions: SESSION_RETENTION_BATCH + 6 });
    expect((await db.pool.query('SELECT id FROM delivery_updates')).rows).toEqual([]);
  } finally {
    await db.pool.query('DROP TRIGGER delivery_updates ON deliveries; DROP FUNCTION count_delivery_update(); DROP TABLE delivery_updates');
  }
  expect(await exists('deliveries', attempt)).toBe(false);
  expect(await exists('sessions', old.session)).toBe(false);
  expect(await exists('deliveries', recentAttempt)).toBe(true);
  expect(await exists('sessions', recent.session)).toBe(true);
  // One statement takes at most a batch of sessions.
  expect(await deleteOldSessions(db.pool, 90)).toBe(0);
  for (let i = 0; i < SESSION_RETENTION_BATCH + 1; i++) await session(150, 'skipped');
  expect(await deleteOldSessions(db.pool, 90)).toBe(SESSION_RETENTION_BATCH);
});
