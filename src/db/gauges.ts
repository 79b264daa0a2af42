/**
 * What the metrics endpoint reads at scrape time (metrics/registry.ts collects it on the API):
 * sessions not ended per suite and status, and runners heard from lately. Small queries: the
 * rows not ended are few, and each runner or token is one row.
 */
import type { Db } from './transaction';
import { RUNNER_SEEN_WITHIN_MS } from './runners';

/** A token runner is connected while it polls: the gateway takes its queues for a minute after its last call. */
const TOKEN_SEEN_WITHIN_MS = 60_000;

export interface InstallationGauges {
  activeRuns: { suiteId: number; status: 'queued' | 'running'; count: number }[];
  runners: { keyed: number; token: number };
}

export async function installationGauges(db: Db): Promise<InstallationGauges> {
  const [runs, runners] = await Promise.all([
    db.query<{ suite_id: number; status: 'queued' | 'running'; count: number }>(
      `SELECT suite_id::int AS suite_id, status, count(*)::int AS count FROM sessions
        WHERE status IN ('queued', 'running') AND parent_id IS NULL GROUP BY suite_id, status`,
    ),
    db.query<{ keyed: number; token: number }>(
      `SELECT (SELECT count(*)::int FROM runners WHERE last_seen_at > now() - $1 * interval '1 millisecond') AS keyed,
              (SELECT count(*)::int FROM runner_tokens
                WHERE revoked_at IS NULL AND last_seen_at > now() - $2 * interval '1 millisecond') AS token`,
      [RUNNER_SEEN_WITHIN_MS, TOKEN_SEEN_WITHIN_MS],
    ),
  ]);
  return {
    activeRuns: runs.rows.map((r) => ({ suiteId: r.suite_id, status: r.status, count: r.count })),
    runners: runners.rows[0] ?? { keyed: 0, token: 0 },
  };
}
