/**
 * SQL of the runners that are up (migration 023): each one's row, written at its start and
 * every 30 s, says how it isolates builds, so the web UI can warn while one does not.
 */
import type { Db } from './transaction';

export interface RunnerRecord {
  name: string;
  version: string;
  sandboxed: boolean;
  buildUser: string | null;
  gaps: string[];
}

/** A runner as the web UI's warning shows it. */
export interface UnisolatedRunner {
  name: string;
  gaps: string[];
  last_seen_at: Date;
}

/** How long a runner that stopped writing its row still counts as up. */
export const RUNNER_SEEN_WITHIN_MS = 2 * 60_000;

/** Writes the runner's row at its start; rows of runners not seen for a day go. */
export async function recordRunner(db: Db, r: RunnerRecord): Promise<void> {
  await db.query(
    `INSERT INTO runners (name, version, sandboxed, build_user, gaps) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (name) DO UPDATE SET version = $2, sandboxed = $3, build_user = $4, gaps = $5, started_at = now(), last_seen_at = now()`,
    [r.name, r.version, r.sandboxed, r.buildUser, r.gaps],
  );
  await db.query(`DELETE FROM runners WHERE last_seen_at < now() - interval '1 day'`);
}

/** Says the runner is still up. */
export async function touchRunner(db: Db, name: string): Promise<void> {
  await db.query(`UPDATE runners SET last_seen_at = now() WHERE name = $1`, [name]);
}

/** A runner that stops takes its row away. */
export async function removeRunner(db: Db, name: string): Promise<void> {
  await db.query(`DELETE FROM runners WHERE name = $1`, [name]);
}

/** Runners seen lately that run builds without isolation. */
export async function unisolatedRunners(db: Db, withinMs = RUNNER_SEEN_WITHIN_MS): Promise<UnisolatedRunner[]> {
  const { rows } = await db.query<UnisolatedRunner>(
    `SELECT name, gaps, last_seen_at FROM runners
      WHERE cardinality(gaps) > 0 AND last_seen_at > now() - $1 * interval '1 millisecond'
      ORDER BY name`,
    [withinMs],
  );
  return rows;
}

/** A runner as the runners list shows it. */
export interface RunnerListRow {
  name: string;
  version: string;
  sandboxed: boolean;
  build_user: string | null;
  gaps: string[];
  started_at: Date;
  last_seen_at: Date;
  /** Lanes of builds running test files on it now (by their claims in the shared lists). */
  busy_lanes: number;
}

/** The runners seen lately, busiest first, then by name. */
export async function listRunners(db: Db, withinMs = RUNNER_SEEN_WITHIN_MS): Promise<RunnerListRow[]> {
  const { rows } = await db.query<RunnerListRow>(
    `SELECT r.name, r.version, r.sandboxed, r.build_user, r.gaps, r.started_at, r.last_seen_at,
            -- A lane's claim token ends with its runner: 'lane <n> attempt <a> on <runner>' (steps/tests/lane.ts).
            (SELECT count(DISTINCT q.claimed_by)::int FROM test_queue q
              WHERE q.state = 'claimed' AND q.lease_until > now() AND q.claimed_by LIKE '% on ' || r.name) AS busy_lanes
       FROM runners r
      WHERE r.last_seen_at > now() - $1 * interval '1 millisecond'
      ORDER BY busy_lanes DESC, r.name`,
    [withinMs],
  );
  return rows;
}
