/**
 * SQL of runner tokens (migration 024): what a runner that holds no keys authenticates with.
 * Only a token's sha256 is kept; the token is shown once, when it is made.
 */
import { JOB_ENDED_CHANNEL } from './runnerJobs';
import type { Db } from './transaction';

export interface RunnerTokenRow {
  id: number;
  name: string;
  org_id: number | null;
  org_name: string | null;
  created_at: Date;
  revoked_at: Date | null;
  last_seen_at: Date | null;
  version: string | null;
  runner: string | null;
  queues: string[];
  /** Jobs its runner is running now. */
  busy: number;
}

const COLUMNS = `t.id::int AS id, t.name, t.org_id::int AS org_id, o.name AS org_name, t.created_at, t.revoked_at, t.last_seen_at, t.version, t.runner, t.queues,
  (SELECT count(*)::int FROM runner_jobs j WHERE j.token_id = t.id AND j.state = 'running') AS busy`;

export async function insertRunnerToken(db: Db, t: { name: string; orgId: number | null; hash: Buffer }): Promise<RunnerTokenRow> {
  const { rows } = await db.query<{ id: number }>('INSERT INTO runner_tokens (name, org_id, token_hash) VALUES ($1, $2, $3) RETURNING id::int AS id', [
    t.name,
    t.orgId,
    t.hash,
  ]);
  return (await findRunnerToken(db, rows[0]!.id))!;
}

export async function findRunnerToken(db: Db, id: number): Promise<RunnerTokenRow | undefined> {
  const { rows } = await db.query<RunnerTokenRow>(`SELECT ${COLUMNS} FROM runner_tokens t LEFT JOIN orgs o ON o.id = t.org_id WHERE t.id = $1`, [id]);
  return rows[0];
}

/** Every token, live ones first, newest first. */
export async function listRunnerTokens(db: Db): Promise<RunnerTokenRow[]> {
  const { rows } = await db.query<RunnerTokenRow>(
    `SELECT ${COLUMNS} FROM runner_tokens t LEFT JOIN orgs o ON o.id = t.org_id ORDER BY t.revoked_at IS NOT NULL, t.id DESC`,
  );
  return rows;
}

/**
 * Revokes a token; its runner's running jobs are failed at once (their activities are tried
 * again elsewhere). False when there is no such token; revoking twice is no error.
 */
export async function revokeRunnerToken(db: Db, id: number): Promise<boolean> {
  const { rowCount } = await db.query('UPDATE runner_tokens SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1', [id]);
  if (rowCount === 0) return false;
  const { rows } = await db.query<{ id: string }>(
    `UPDATE runner_jobs SET state = 'failed', finished_at = now(),
            output = jsonb_build_object('error', jsonb_build_object('message', 'its runner''s token was revoked', 'retryable', true))
      WHERE token_id = $1 AND state = 'running' RETURNING id`,
    [id],
  );
  // The workers waiting on those jobs hear of it now, not at their next poll.
  for (const job of rows) await db.query('SELECT pg_notify($1, $2)', [JOB_ENDED_CHANNEL, job.id]);
  return true;
}

/** The live token with this hash, or undefined (none, or revoked). */
export async function tokenByHash(db: Db, hash: Buffer): Promise<{ id: number; orgId: number | null } | undefined> {
  const { rows } = await db.query<{ id: number; org_id: number | null }>(
    'SELECT id::int AS id, org_id::int AS org_id FROM runner_tokens WHERE token_hash = $1 AND revoked_at IS NULL',
    [hash],
  );
  return rows[0] ? { id: rows[0].id, orgId: rows[0].org_id } : undefined;
}

/** What the runner said of itself at a poll. */
export async function touchRunnerToken(db: Db, id: number, seen: { runner: string; version: string; queues: string[] }): Promise<void> {
  await db.query('UPDATE runner_tokens SET last_seen_at = now(), runner = $2, version = $3, queues = $4 WHERE id = $1', [id, seen.runner, seen.version, seen.queues]);
}

/** The build queues runners with a live token seen in the last `withinMs` serve. */
export async function queuesOfTokenRunners(db: Db, withinMs: number): Promise<string[]> {
  const { rows } = await db.query<{ queue: string }>(
    `SELECT DISTINCT unnest(queues) AS queue FROM runner_tokens
      WHERE revoked_at IS NULL AND last_seen_at > now() - $1 * interval '1 millisecond' ORDER BY 1`,
    [withinMs],
  );
  return rows.map((r) => r.queue);
}
