/**
 * SQL for what arrived and what ran: ci_events, sessions and their test results, read back as
 * the views the status, report and admin endpoints show.
 */
import type { AffectedSummary } from '../core/affected';
import type { CacheSettings, HookSettings, ServiceName } from '../core/buildSetup';
import type { Pool } from 'pg';
import type { Profile } from '../core/profiles';
import type { Scm, Timing, TriggerEvent } from '../core/types';
import { withTransaction } from './transaction';
import type { Db } from './transaction';
import { jsonbText, storableText } from './text';

export async function insertCiEvent(
  db: Db,
  e: { guid: string; repoId: number; provider: string; decision: 'build' | 'skip' | 'drop'; reason: string | null; trigger: TriggerEvent },
): Promise<number> {
  const { rows } = await db.query<{ id: number }>(
    'INSERT INTO ci_events (guid, repo_id, provider, decision, reason, trigger) VALUES ($1, $2, $3, $4, $5, $6) RETURNING id',
    [e.guid, e.repoId, e.provider, e.decision, e.reason, jsonbText(e.trigger)],
  );
  return rows[0]!.id;
}

export async function insertSession(
  db: Db,
  s: { ciEventId: number; suiteId: number; branch: string; ref: string | null; head: string; force: boolean; profileName: string; workers: number },
): Promise<number> {
  const { rows } = await db.query<{ id: number }>(
    `INSERT INTO sessions (ci_event_id, suite_id, status, profile_name, branch, ref, head, force, workers)
     VALUES ($1, $2, 'queued', $3, $4, $5, $6, $7, $8) RETURNING id`,
    [s.ciEventId, s.suiteId, s.profileName, s.branch, s.ref, s.head, s.force, s.workers],
  );
  return rows[0]!.id;
}

export interface CiEventRow {
  id: number;
  guid: string;
  provider: string;
  decision: string;
  reason: string | null;
  branch: string | null;
  received_at: Date;
}

export async function findCiEvent(db: Db, guid: string): Promise<CiEventRow | undefined> {
  const { rows } = await db.query<CiEventRow>(
    `SELECT id, guid, provider, decision, reason, trigger->>'branch' AS branch, received_at FROM ci_events WHERE guid = $1`,
    [guid],
  );
  return rows[0];
}

export interface EventSessionRow {
  id: number;
  status: string;
  commit_id: string | null;
  counts: Record<string, number>;
  report_token: string;
}

export async function listEventSessions(db: Db, ciEventId: number): Promise<EventSessionRow[]> {
  const { rows } = await db.query<EventSessionRow>(
    'SELECT id, status, commit_id, counts, report_token FROM sessions WHERE ci_event_id = $1 ORDER BY id',
    [ciEventId],
  );
  return rows;
}

/**
 * A session with its event, suite, repository and organization: the one join the status and
 * report views, the session workflow and the post-build steps all read.
 */
export interface SessionWithRepo {
  id: number;
  guid: string;
  parent_id: number | null;
  suite_id: number;
  status: string;
  reason: string | null;
  profile_name: string;
  branch: string;
  ref: string | null;
  head: string;
  force: boolean;
  commit_id: string | null;
  committers: string[];
  counts: Record<string, number>;
  workers: number;
  timing: Record<string, number>;
  stopped_by: string | null;
  /** The secret part of the report's URL (migration 008). */
  report_token: string;
  created_at: Date;
  updated_at: Date;
  received_at: Date;
  trigger: TriggerEvent;
  changeset: TriggerEvent['changeset'] | null;
  test_pattern: string;
  test_command: string | null;
  junit_pattern: string | null;
  suite_profiles: Profile[];
  suite_plan: string[] | null;
  /** The suite's deadline for one build, in minutes (migration 013); null: none. */
  suite_deadline_minutes: number | null;
  /** The suite's own retry_failed (its default profile's, migration 020). */
  suite_retry_failed: number;
  /** The suite's own hooks, cache, services and artifacts (migration 016); null where unset. */
  suite_hooks: HookSettings | null;
  suite_cache: CacheSettings | false | null;
  suite_services: ServiceName[] | null;
  suite_artifacts: string[] | null;
  /** The suite's own image (migration 029); null: none. */
  suite_image: string | null;
  /** The image this session ran in, as read and as resolved (migration 029); null: none (yet). */
  image: string | null;
  image_digest: string | null;
  /** What the build did about selecting affected test files (migration 035); null: nothing. */
  affected: AffectedSummary | null;
  /** Its builds run only on its organization's own runners (migration 025). */
  suite_own_runners: boolean;
  repo_id: number;
  default_branch: string;
  repo_name: string;
  pull_url: string;
  scm: Scm;
  chat_url: string | null;
  /** The repository posts commit statuses: a status provider, repository path and token (migration 012). */
  commit_status: boolean;
  ci_squash: boolean;
  trust_same_repo_pull_requests: boolean;
  org_id: number;
  org_name: string;
  org_email: string;
}

const SESSION_WITH_REPO = `
    SELECT s.id, e.guid, s.parent_id, s.suite_id, s.status, s.reason, s.profile_name, s.branch, s.ref, s.head, s.force,
           s.commit_id, s.committers, s.counts, s.workers, s.timing, s.stopped_by, s.report_token, s.created_at, s.updated_at,
           s.image, s.image_digest, s.affected, e.received_at, e.trigger, e.trigger->'changeset' AS changeset,
           su.test_pattern, su.test_command, su.junit_pattern, su.profiles AS suite_profiles, su.plan AS suite_plan, su.deadline_minutes AS suite_deadline_minutes,
           su.retry_failed AS suite_retry_failed, su.hooks AS suite_hooks, su.cache AS suite_cache, su.services AS suite_services, su.artifacts AS suite_artifacts,
           su.image AS suite_image, su.own_runners AS suite_own_runners,
           r.id AS repo_id, r.default_branch, r.name AS repo_name, r.pull_url, r.scm, r.chat_url, r.ci_squash, r.trust_same_repo_pull_requests,
           ((r.status_provider IS NOT NULL AND r.status_repo IS NOT NULL AND r.status_token_sealed IS NOT NULL)
            -- a repository that builds through a GitHub App reports through check runs
            OR EXISTS (SELECT 1 FROM repo_app_links l WHERE l.repo_id = r.id)) AS commit_status,
           o.id AS org_id, o.name AS org_name, o.email AS org_email
      FROM sessions s
      JOIN ci_events e ON e.id = s.ci_event_id
      JOIN suites su ON su.id = s.suite_id
      JOIN repos r ON r.id = su.repo_id
      JOIN orgs o ON o.id = r.org_id`;

export async function findSessionWithRepo(db: Db, id: number): Promise<SessionWithRepo | undefined> {
  const { rows } = await db.query<SessionWithRepo>(`${SESSION_WITH_REPO} WHERE s.id = $1`, [id]);
  return rows[0];
}

/** Several sessions as findSessionWithRepo reads one, by id (those that exist). */
export async function findSessionsWithRepo(db: Db, ids: readonly number[]): Promise<SessionWithRepo[]> {
  const { rows } = await db.query<SessionWithRepo>(`${SESSION_WITH_REPO} WHERE s.id = ANY($1::bigint[]) ORDER BY s.id`, [ids]);
  return rows;
}

/**
 * Ends queued sessions as CI squash does (status `skipped`, the reason, `done` now), in one
 * statement; sessions no longer queued are left alone. Their timing says they were in the
 * queue from the moment their trigger was received.
 */
export async function recordSquashed(db: Db, ids: readonly number[], reason: string): Promise<void> {
  await db.query(
    `UPDATE sessions s
        SET status = 'skipped', reason = $2, updated_at = now(),
            timing = s.timing || jsonb_build_object(
              'ci_received_at', extract(epoch FROM e.received_at),
              'queue_first_seen_at', extract(epoch FROM e.received_at),
              'done', extract(epoch FROM now()))
       FROM ci_events e
      WHERE e.id = s.ci_event_id AND s.id = ANY($1::bigint[]) AND s.status = 'queued'`,
    [ids, reason],
  );
}

/** Marks a session running; answers its suite's last built commit. */
export async function markSessionRunning(db: Db, sessionId: number, timing: Timing): Promise<{ lastBuiltCommit: string | null }> {
  const { rows } = await db.query<{ last_built_commit: string | null }>(
    `WITH s AS (
       UPDATE sessions SET status = 'running', timing = $2, updated_at = now() WHERE id = $1 RETURNING suite_id
     )
     SELECT su.last_built_commit FROM suites su JOIN s ON s.suite_id = su.id`,
    [sessionId, JSON.stringify(timing)],
  );
  return { lastBuiltCommit: rows[0]?.last_built_commit ?? null };
}

/**
 * The child sessions of a plan, one per profile, by profile name. Idempotent: a retry finds
 * the parts the first attempt made.
 */
export async function ensurePlanSessions(
  db: Db,
  parentId: number,
  commitId: string,
  profiles: readonly { name: string; workers: number }[],
): Promise<Map<string, number>> {
  let { rows } = await db.query<{ id: number; profile_name: string }>(
    'SELECT id, profile_name FROM sessions WHERE parent_id = $1',
    [parentId],
  );
  if (rows.length === 0) {
    ({ rows } = await db.query<{ id: number; profile_name: string }>(
      `INSERT INTO sessions (ci_event_id, suite_id, parent_id, status, profile_name, branch, ref, head, force, workers)
       SELECT p.ci_event_id, p.suite_id, p.id, 'queued', prof.name, p.branch, p.ref, $2, true, prof.workers
         FROM sessions p, unnest($3::text[], $4::int[]) AS prof(name, workers)
        WHERE p.id = $1
       RETURNING id, profile_name`,
      [parentId, commitId, profiles.map((p) => p.name), profiles.map((p) => p.workers)],
    ));
  }
  return new Map(rows.map((r) => [r.profile_name, r.id]));
}

/** Whether the repository of a suite squashes its CI commits. */
export async function suiteCiSquash(db: Db, suiteId: number): Promise<boolean> {
  const { rows } = await db.query<{ ci_squash: boolean }>(
    'SELECT r.ci_squash FROM suites su JOIN repos r ON r.id = su.repo_id WHERE su.id = $1',
    [suiteId],
  );
  return rows[0]?.ci_squash ?? false;
}

export interface SessionOutcome {
  sessionId: number;
  status: string;
  reason: string | null;
  commitId: string | null;
  committers: unknown;
  counts: unknown;
  timing: unknown;
  stoppedBy: string | null;
  profileName: string;
  workers: number;
  /** Set when the session built a commit its suite should remember. */
  builtCommit?: string | null;
}

/**
 * Stores how a session ended and, if it built one, its suite's last built commit, together;
 * returns the suite's id (undefined when the session is gone).
 */
export async function recordSessionOutcome(pool: Pool, f: SessionOutcome): Promise<number | undefined> {
  return withTransaction(pool, async (client) => {
    const { rows } = await client.query<{ suite_id: number }>(
      `UPDATE sessions
          SET status = $2, reason = $3, commit_id = $4, committers = $5, counts = $6, timing = $7,
              stopped_by = $8, profile_name = $9, workers = $10, updated_at = now()
        WHERE id = $1 RETURNING suite_id`,
      [f.sessionId, f.status, f.reason, f.commitId, JSON.stringify(f.committers), JSON.stringify(f.counts),
        JSON.stringify(f.timing), f.stoppedBy, f.profileName, f.workers],
    );
    if (f.builtCommit && rows[0]) {
      await client.query('UPDATE suites SET last_built_commit = $2 WHERE id = $1', [rows[0].suite_id, f.builtCommit]);
    }
    return rows[0] === undefined ? undefined : Number(rows[0].suite_id);
  });
}

export interface TestRow {
  path: string;
  status: string;
  exit_code: number | null;
  duration_ms: number;
  /** The runner (host-pid) that ran it. */
  runner: string | null;
  /** 1..N: the worker (lane) that ran it; null when not known (a result from before the shared list). */
  worker: number | null;
  /** The batch it ran in (test_batches), or null: a process of its own. */
  batch: number | null;
  /** How many runs its verdict took (retry_failed): 1, or more. */
  attempts: number;
  /** It passed only on a retry. */
  flaky: boolean;
  /** Why it ran before the usual order, as the likeliest to fail ("changed", "failed in 2 of the last 10 builds"); null: it did not. */
  ran_first: string | null;
  /** When its (last) run began; null for a result recorded before migration 020. */
  started_at: Date | null;
  finished_at: Date;
  output?: string;
}

/** A test row's columns (test_results as tr, its place in the list as q). */
const TEST_COLUMNS = `tr.path, tr.status, tr.exit_code, tr.duration_ms, tr.runner, (q.lane + 1) AS worker, tr.batch_id::int AS batch,
       tr.attempts, tr.flaky, q.first_reason AS ran_first, tr.started_at, tr.finished_at`;
const TEST_FROM = 'test_results tr LEFT JOIN test_queue q ON q.session_id = tr.session_id AND q.path = tr.path';

/** Every test file of a session, by path, without output (up to 64 KiB each): the admin API's view. */
export async function listTests(db: Db, sessionId: number): Promise<TestRow[]> {
  const { rows } = await db.query<TestRow>(
    `SELECT ${TEST_COLUMNS} FROM ${TEST_FROM} WHERE tr.session_id = $1 ORDER BY tr.path`,
    [sessionId],
  );
  return rows;
}

/**
 * One page of a session's test files, with their output: the report page. By path, as the
 * whole list is (a path is unique within a session, so pages neither overlap nor skip); only
 * the page's outputs are read. A page past the last is empty.
 */
export async function listTestsPage(db: Db, sessionId: number, page: { limit: number; offset: number }): Promise<TestRow[]> {
  const { rows } = await db.query<TestRow>(
    `SELECT ${TEST_COLUMNS}, tr.output FROM ${TEST_FROM} WHERE tr.session_id = $1
      ORDER BY tr.path LIMIT $2 OFFSET $3`,
    [sessionId, page.limit, page.offset],
  );
  return rows;
}

/**
 * The files of a session that failed or erred, by path, at most `limit`, each with the last
 * `tailChars` characters of its output (where a failure usually says why): the build page.
 */
export async function listFailedOutputs(db: Db, sessionId: number, limit: number, tailChars: number): Promise<{ path: string; status: string; output: string }[]> {
  const { rows } = await db.query<{ path: string; status: string; output: string }>(
    `SELECT path, status, right(output, $3) AS output FROM test_results
      WHERE session_id = $1 AND status IN ('failed', 'error') ORDER BY path LIMIT $2`,
    [sessionId, limit, tailChars],
  );
  return rows;
}

/** A plan's parts, one per profile, in the plan's order (they were made in it). */
export async function listPlanParts(db: Db, parentId: number): Promise<{ id: number; profile_name: string; status: string }[]> {
  const { rows } = await db.query<{ id: string; profile_name: string; status: string }>(
    'SELECT id, profile_name, status FROM sessions WHERE parent_id = $1 ORDER BY id',
    [parentId],
  );
  return rows.map((r) => ({ ...r, id: Number(r.id) }));
}

/** How many test files a session has stored results for. */
export async function countTests(db: Db, sessionId: number): Promise<number> {
  const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM test_results WHERE session_id = $1', [sessionId]);
  return rows[0]?.n ?? 0;
}

/** The session's test files that failed or errored, by path. */
export async function listFailingTests(db: Db, sessionId: number, limit = 500): Promise<{ path: string; status: string }[]> {
  const { rows } = await db.query<{ path: string; status: string }>(
    `SELECT path, status FROM test_results WHERE session_id = $1 AND status IN ('failed', 'error') ORDER BY path LIMIT $2`,
    [sessionId, limit],
  );
  return rows;
}

/** Stores one test file's result; a retried activity overwrites its earlier row. */
export async function upsertTestResult(
  db: Db,
  r: { sessionId: number; path: string; status: string; exitCode: number | null; durationMs: number; output: string },
): Promise<void> {
  await db.query(
    `INSERT INTO test_results (session_id, path, status, exit_code, duration_ms, output)
     VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (session_id, path) DO UPDATE
       SET status = EXCLUDED.status, exit_code = EXCLUDED.exit_code, duration_ms = EXCLUDED.duration_ms,
           output = EXCLUDED.output, finished_at = now()`,
    // Test output sometimes holds NUL, which PostgreSQL text cannot.
    [r.sessionId, r.path, r.status, r.exitCode, Math.round(r.durationMs), storableText(r.output)],
  );
}

/** Where a session's chat message and e-mail go: its repository's chat_url, its organization's email. */
export async function loadSessionTargets(db: Db, sessionId: number): Promise<{ chatUrl: string | null; orgEmail: string } | undefined> {
  const row = await findSessionWithRepo(db, sessionId);
  return row ? { chatUrl: row.chat_url, orgEmail: row.org_email } : undefined;
}

/** The repository a session builds, or null. */
export async function repoIdOfSession(db: Db, sessionId: number): Promise<number | null> {
  const { rows } = await db.query<{ repo_id: string }>(
    'SELECT su.repo_id FROM sessions s JOIN suites su ON su.id = s.suite_id WHERE s.id = $1',
    [sessionId],
  );
  return rows[0] ? Number(rows[0].repo_id) : null;
}

/** The JUnit pattern of a session's suite, or null. */
export async function suiteJUnitPatternOfSession(db: Db, sessionId: number): Promise<string | null> {
  const { rows } = await db.query<{ junit_pattern: string | null }>(
    'SELECT su.junit_pattern FROM sessions s JOIN suites su ON su.id = s.suite_id WHERE s.id = $1',
    [sessionId],
  );
  return rows[0]?.junit_pattern ?? null;
}

/** Of `ids`, the sessions that have ended or no longer exist (their checkouts may go). */
export async function endedSessions(db: Db, ids: readonly number[]): Promise<number[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT i.id FROM unnest($1::bigint[]) AS i(id) LEFT JOIN sessions s ON s.id = i.id
      WHERE s.id IS NULL OR s.status NOT IN ('queued', 'running')`,
    [ids],
  );
  return rows.map((r) => Number(r.id));
}

/** The token that opens a session's report page, or undefined when there is no such session. */
export async function reportTokenOf(db: Db, sessionId: number): Promise<string | undefined> {
  const { rows } = await db.query<{ report_token: string }>('SELECT report_token FROM sessions WHERE id = $1', [sessionId]);
  return rows[0]?.report_token;
}

/** What the list of sessions may be narrowed to; absent fields do not narrow it. */
export interface SessionFilter {
  orgId?: number;
  /** Only these organizations' (what the asker may see); absent or null: all. */
  orgIds?: number[] | null;
  repoId?: number;
  branch?: string;
  status?: string;
  /** Only sessions older than this one (keyset paging: the last id of the previous page). */
  before?: number;
  limit: number;
}

export interface SessionListRow {
  id: number;
  parent_id: number | null;
  org_name: string;
  repo_id: number;
  repo_name: string;
  branch: string;
  commit_id: string | null;
  status: string;
  reason: string | null;
  profile_name: string;
  counts: Record<string, number>;
  committers: string[];
  stopped_by: string | null;
  timing: Record<string, number>;
  report_token: string;
  received_at: Date;
}

/**
 * Sessions across repositories, newest first (the builds list), a page at a time (keyset: `before`).
 * Only the filters given are in the SQL, so that PostgreSQL picks an index for them: unfiltered,
 * or by status, branch or `before` alone, it walks sessions by id (or by status, id:
 * sessions_status_idx); narrowed to organizations or a repository, it takes each of their
 * suites' newest matching builds (sessions_suite_idx, sessions_suite_status_idx) and keeps the
 * newest of those. Either way a page reads about a page of rows per suite at most, however long
 * the history (issue 39).
 */
export async function listSessions(db: Db, f: SessionFilter): Promise<SessionListRow[]> {
  const params: unknown[] = [];
  const param = (v: unknown) => `$${params.push(v)}`;
  const ofSession: string[] = [];
  if (f.branch !== undefined) ofSession.push(`s.branch = ${param(f.branch)}`);
  if (f.status !== undefined) ofSession.push(`s.status = ${param(f.status)}`);
  if (f.before !== undefined) ofSession.push(`s.id < ${param(f.before)}`);
  const ofRepo: string[] = [];
  if (f.orgId !== undefined) ofRepo.push(`r.org_id = ${param(f.orgId)}`);
  if (f.repoId !== undefined) ofRepo.push(`r.id = ${param(f.repoId)}`);
  if (f.orgIds != null) ofRepo.push(`r.org_id = ANY(${param(f.orgIds)}::bigint[])`);
  const limit = param(f.limit);
  const where = (conditions: string[]) => (conditions.length === 0 ? 'true' : conditions.join(' AND '));
  const page =
    ofRepo.length === 0
      ? `SELECT s.id FROM sessions s WHERE ${where(ofSession)} ORDER BY s.id DESC LIMIT ${limit}`
      : `SELECT s.id FROM suites su JOIN repos r ON r.id = su.repo_id
           CROSS JOIN LATERAL (SELECT s.id FROM sessions s WHERE ${where([...ofSession, 's.suite_id = su.id'])} ORDER BY s.id DESC LIMIT ${limit}) s
          WHERE ${where(ofRepo)} ORDER BY s.id DESC LIMIT ${limit}`;
  const { rows } = await db.query<SessionListRow>(
    `SELECT s.id, s.parent_id, o.name AS org_name, r.id AS repo_id, r.name AS repo_name, s.branch, s.commit_id, s.status,
            s.reason, s.profile_name, s.counts, s.committers, s.stopped_by, s.timing, s.report_token, e.received_at
       FROM (${page}) p
       JOIN sessions s ON s.id = p.id
       JOIN ci_events e ON e.id = s.ci_event_id
       JOIN suites su ON su.id = s.suite_id
       JOIN repos r ON r.id = su.repo_id
       JOIN orgs o ON o.id = r.org_id
      ORDER BY s.id DESC`,
    params,
  );
  return rows;
}

export interface BranchLastBuild {
  branch: string;
  id: number;
  status: string;
  received_at: Date;
}

/**
 * Each suite's newest build (a plan's parts left out: their parent is the build), by branch:
 * the Branches page's "last build". One index probe per suite (sessions_suite_idx).
 */
export async function lastBuildsOfRepo(db: Db, repoId: number): Promise<BranchLastBuild[]> {
  const { rows } = await db.query<BranchLastBuild>(
    `SELECT su.branch, s.id, s.status, e.received_at
       FROM suites su
       CROSS JOIN LATERAL (SELECT id, status, ci_event_id FROM sessions
                            WHERE suite_id = su.id AND parent_id IS NULL ORDER BY id DESC LIMIT 1) s
       JOIN ci_events e ON e.id = s.ci_event_id
      WHERE su.repo_id = $1`,
    [repoId],
  );
  return rows;
}

/**
 * Ends a session whose workflow is gone without having recorded an end (workflows/suite.ts's
 * liveness check): `error`, saying why. A session that ended properly is left as it is.
 */
export async function endAbandonedSession(db: Db, sessionId: number, reason: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE sessions SET status = 'error', reason = $2, updated_at = now() WHERE id = $1 AND status IN ('queued', 'running')`,
    [sessionId, reason],
  );
  return (rowCount ?? 0) > 0;
}

/** The image a session runs in, as read and as resolved when its build started (migration 029). */
export async function recordSessionImage(db: Db, sessionId: number, image: string, digest: string): Promise<void> {
  await db.query('UPDATE sessions SET image = $2, image_digest = $3, updated_at = now() WHERE id = $1', [sessionId, image, digest]);
}

/**
 * The digests a build and its plan's parts resolved their images to, by reference: what a
 * rebuild of it runs again (core/rebuild.ts).
 */
export async function imageDigestsOfBuild(db: Db, sessionId: number): Promise<Record<string, string>> {
  const { rows } = await db.query<{ image: string; image_digest: string }>(
    `SELECT image, image_digest FROM sessions
      WHERE (id = $1 OR parent_id = $1) AND image IS NOT NULL AND image_digest IS NOT NULL
      ORDER BY id`,
    [sessionId],
  );
  return Object.fromEntries(rows.map((r) => [r.image, r.image_digest]));
}

/** The suite a session is of; undefined when there is no such session. */
export async function suiteOfSession(db: Db, sessionId: number): Promise<number | undefined> {
  return (await suiteAndRepoOfSession(db, sessionId))?.suiteId;
}

/** The suite a session is of, and its repository. */
export async function suiteAndRepoOfSession(db: Db, sessionId: number): Promise<{ suiteId: number; repoId: number } | undefined> {
  const { rows } = await db.query<{ suite_id: string; repo_id: string }>('SELECT s.suite_id, su.repo_id FROM sessions s JOIN suites su ON su.id = s.suite_id WHERE s.id = $1', [sessionId]);
  return rows[0] ? { suiteId: Number(rows[0].suite_id), repoId: Number(rows[0].repo_id) } : undefined;
}
