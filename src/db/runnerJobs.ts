/**
 * SQL of runner jobs (migration 024): one build activity handed to a runner that holds no keys.
 * The worker role's gateway inserts a job and waits for it (worker/gateway.ts); the API gives it
 * to a runner whose token may take it and takes its heartbeats and its end (api/runnerApi).
 * Two notification channels wake the waiting sides: a job was queued, a job ended.
 */
import type { Pool, PoolClient } from 'pg';
import type { Db } from './transaction';

export const JOB_QUEUED_CHANNEL = 'sluice_runner_jobs';
export const JOB_ENDED_CHANNEL = 'sluice_runner_jobs_ended';

export type JobKind = 'checkout' | 'queueTests' | 'resolveImage' | 'runLane' | 'postBuildHook';

export interface NewJob {
  queue: string;
  kind: JobKind;
  activityId: string;
  runId: string;
  attempt: number;
  workflowId: string;
  sessionId: number;
  input: unknown;
}

/** What a job's end carries: the activity's result, or its error. */
export type JobOutput = { result: unknown } | { error: { message: string; type?: string; retryable: boolean } };

export interface RunnerJob {
  id: number;
  kind: JobKind;
  attempt: number;
  workflowId: string;
  sessionId: number;
  repoId: number;
  orgId: number;
  input: unknown;
}

export interface JobState {
  state: 'queued' | 'running' | 'done' | 'failed';
  output: JobOutput | null;
  /** Milliseconds since its runner's last heartbeat (null: not taken yet). */
  silentMs: number | null;
}

/**
 * Queues an activity as a job: the session's repository and organization decide which tokens
 * may take it. An activity tried again after the worker waiting on it went away (a restart, a
 * deploy) takes its job up again: done (its result is there), or queued, or running while its
 * runner is still heard from. One whose runner fell silent for `lostMs` is failed, and a new
 * job queued; so is one that failed (the attempt before this one failed with it).
 */
export async function insertJob(db: Db, job: NewJob, lostMs: number): Promise<number> {
  const { rows: earlier } = await db.query<{ id: number; live: boolean }>(
    `SELECT id::int AS id, (state IN ('done', 'queued') OR (state = 'running' AND heartbeat_at > now() - $3 * interval '1 millisecond')) AS live
       FROM runner_jobs WHERE run_id = $1 AND activity_id = $2 AND state <> 'failed' AND NOT cancel_requested
      ORDER BY id DESC LIMIT 1`,
    [job.runId, job.activityId, lostMs],
  );
  if (earlier[0]?.live) return earlier[0].id;
  await db.query(
    `UPDATE runner_jobs SET state = 'failed', finished_at = now(),
            output = jsonb_build_object('error', jsonb_build_object('message', 'its runner was not heard from; tried again as a new job', 'retryable', true))
      WHERE run_id = $1 AND activity_id = $2 AND state IN ('queued', 'running')`,
    [job.runId, job.activityId],
  );
  const { rows } = await db.query<{ id: number }>(
    `INSERT INTO runner_jobs (queue, kind, activity_id, run_id, attempt, workflow_id, session_id, repo_id, org_id, own_runners, input)
     SELECT $1, $2, $3, $8, $4, $5, s.id, su.repo_id, r.org_id, su.own_runners, $7
       FROM sessions s JOIN suites su ON su.id = s.suite_id JOIN repos r ON r.id = su.repo_id
      WHERE s.id = $6
     RETURNING id::int AS id`,
    [job.queue, job.kind, job.activityId, job.attempt, job.workflowId, job.sessionId, JSON.stringify(job.input), job.runId],
  );
  if (!rows[0]) throw new Error(`session ${job.sessionId} no longer exists`);
  await db.query('SELECT pg_notify($1, $2)', [JOB_QUEUED_CHANNEL, job.queue]);
  return rows[0].id;
}

/**
 * Gives the oldest queued job of `queues` this token may take to its runner: an organization's
 * token takes its organization's jobs, the installation's token (no organization) the jobs of
 * builds that do not ask for their organization's own runners.
 */
export async function takeJob(db: Db, token: { id: number; orgId: number | null }, runner: string, queues: readonly string[]): Promise<RunnerJob | undefined> {
  const { rows } = await db.query<{ id: number; kind: JobKind; attempt: number; workflow_id: string; session_id: number; repo_id: number; org_id: number; input: unknown }>(
    `UPDATE runner_jobs SET state = 'running', token_id = $1, runner = $3, taken_at = now(), heartbeat_at = now()
      WHERE id = (SELECT id FROM runner_jobs
                   WHERE state = 'queued' AND queue = ANY($4::text[])
                     AND (CASE WHEN $2::bigint IS NULL THEN NOT own_runners ELSE org_id = $2 END)
                   ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
        -- A token revoked while its runner's poll waited takes nothing.
        AND EXISTS (SELECT 1 FROM runner_tokens WHERE id = $1 AND revoked_at IS NULL)
      RETURNING id::int AS id, kind, attempt, workflow_id, session_id::int AS session_id, repo_id::int AS repo_id, org_id::int AS org_id, input`,
    [token.id, token.orgId, runner, queues],
  );
  const r = rows[0];
  return r && { id: r.id, kind: r.kind, attempt: r.attempt, workflowId: r.workflow_id, sessionId: r.session_id, repoId: r.repo_id, orgId: r.org_id, input: r.input };
}

/** The job this token's runner is running, or undefined (not its job, or not running any more). */
export async function runningJob(db: Db, id: number, tokenId: number): Promise<(RunnerJob & { suiteId: number }) | undefined> {
  const { rows } = await db.query<{ kind: JobKind; attempt: number; workflow_id: string; session_id: number; repo_id: number; org_id: number; suite_id: number; input: unknown }>(
    `SELECT j.kind, j.attempt, j.workflow_id, j.session_id::int AS session_id, j.repo_id::int AS repo_id, j.org_id::int AS org_id, s.suite_id::int AS suite_id, j.input
       FROM runner_jobs j JOIN sessions s ON s.id = j.session_id WHERE j.id = $1 AND j.token_id = $2 AND j.state = 'running'`,
    [id, tokenId],
  );
  const r = rows[0];
  return r && { id, kind: r.kind, attempt: r.attempt, workflowId: r.workflow_id, sessionId: r.session_id, repoId: r.repo_id, orgId: r.org_id, suiteId: r.suite_id, input: r.input };
}

/** Rows a job's records call may name by id, and what ties each to a build. */
const OWNED = {
  session_hooks: 'session_id',
  test_batches: 'session_id',
  artifacts: 'session_id',
  cache_entries: 'repo_id',
} as const;

/** Whether row `id` of `table` belongs to the job's session (or, for cache entries, its repository). */
export async function rowOfJob(db: Db, table: keyof typeof OWNED, id: number, job: { sessionId: number; repoId: number }): Promise<boolean> {
  const column = OWNED[table];
  const { rowCount } = await db.query(`SELECT 1 FROM ${table} WHERE id = $1 AND ${column} = $2`, [id, column === 'repo_id' ? job.repoId : job.sessionId]);
  return (rowCount ?? 0) > 0;
}

/**
 * The runner says it is still at it; whether it should stop (undefined: not its running job).
 * A runner busy in every slot polls for nothing: its heartbeats say it is seen.
 */
export async function heartbeatJob(db: Db, id: number, tokenId: number): Promise<{ cancel: boolean } | undefined> {
  const { rows } = await db.query<{ cancel_requested: boolean }>(
    `UPDATE runner_jobs SET heartbeat_at = now() WHERE id = $1 AND token_id = $2 AND state = 'running' RETURNING cancel_requested`,
    [id, tokenId],
  );
  if (rows[0]) await db.query('UPDATE runner_tokens SET last_seen_at = now() WHERE id = $1', [tokenId]);
  return rows[0] && { cancel: rows[0].cancel_requested };
}

/** A job taken for a poll whose runner went away before the answer: queued again at once. */
export async function releaseJob(db: Db, id: number): Promise<void> {
  await db.query(`UPDATE runner_jobs SET state = 'queued', token_id = NULL, runner = NULL, taken_at = NULL, heartbeat_at = NULL WHERE id = $1 AND state = 'running'`, [id]);
  await db.query('SELECT pg_notify($1, $2)', [JOB_QUEUED_CHANNEL, '']);
}

/** The runner's end of its job; false when it is not (any more) its running job. */
export async function finishJob(db: Db, id: number, tokenId: number, output: JobOutput): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE runner_jobs SET state = $3, output = $4, finished_at = now() WHERE id = $1 AND token_id = $2 AND state = 'running'`,
    [id, tokenId, 'result' in output ? 'done' : 'failed', JSON.stringify(output)],
  );
  if (rowCount === 0) return false;
  await db.query('SELECT pg_notify($1, $2)', [JOB_ENDED_CHANNEL, String(id)]);
  return true;
}

/** Where the job is, for the gateway waiting on it. */
export async function jobState(db: Db, id: number): Promise<JobState | undefined> {
  const { rows } = await db.query<{ state: JobState['state']; output: JobOutput | null; silent_ms: number | null }>(
    `SELECT state, output, (extract(epoch FROM now() - heartbeat_at) * 1000)::float8 AS silent_ms FROM runner_jobs WHERE id = $1`,
    [id],
  );
  const r = rows[0];
  return r && { state: r.state, output: r.output, silentMs: r.silent_ms };
}

/**
 * The activity was cancelled (the build stopped) or gave up on the job (its runner fell silent):
 * a queued job is withdrawn, a running one told to stop at its runner's next heartbeat and
 * failed with `why` if it was lost.
 */
export async function cancelJob(db: Db, id: number, lost?: string): Promise<void> {
  await db.query(
    `UPDATE runner_jobs SET cancel_requested = true,
            state = CASE WHEN state = 'queued' OR $2::text IS NOT NULL THEN 'failed' ELSE state END,
            output = CASE WHEN state = 'queued' OR $2::text IS NOT NULL
                          THEN jsonb_build_object('error', jsonb_strip_nulls(jsonb_build_object('message', coalesce($2, 'cancelled'), 'type', CASE WHEN $2::text IS NULL THEN 'cancelled' END, 'retryable', true)))
                          ELSE output END,
            finished_at = CASE WHEN state = 'queued' OR $2::text IS NOT NULL THEN now() ELSE finished_at END
      WHERE id = $1 AND state IN ('queued', 'running')`,
    [id, lost ?? null],
  );
}

/** Of `ids`, the sessions this token's runner ran a job of (what it may ask about). */
export async function sessionsOfToken(db: Db, tokenId: number, ids: readonly number[]): Promise<number[]> {
  const { rows } = await db.query<{ session_id: number }>(
    'SELECT DISTINCT session_id::int AS session_id FROM runner_jobs WHERE token_id = $1 AND session_id = ANY($2::bigint[])',
    [tokenId, ids],
  );
  return rows.map((r) => r.session_id);
}

/** Jobs that ended more than a day ago go. */
export async function pruneJobs(db: Db): Promise<void> {
  await db.query(`DELETE FROM runner_jobs WHERE finished_at < now() - interval '1 day'`);
}

/**
 * Calls `onNotice(payload)` as jobs are queued (the queue's name) or end (the job's id), from a
 * connection of its own that LISTENs; best effort (the waiting side polls too). Returns what
 * closes it.
 */
export async function listenForJobs(pool: Pool, channel: typeof JOB_QUEUED_CHANNEL | typeof JOB_ENDED_CHANNEL, onNotice: (payload: string) => void): Promise<() => void> {
  let client: PoolClient | undefined;
  try {
    client = await pool.connect();
    client.on('notification', (n) => onNotice(n.payload ?? ''));
    client.on('error', () => undefined);
    await client.query(`LISTEN ${channel}`);
    const held = client;
    return () => held.release(true);
  } catch {
    client?.release(true);
    return () => undefined;
  }
}
