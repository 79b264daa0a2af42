/** SQL for this installation's id (migration 014), which scopes every workflow id of Sluice. */
import type { Db } from './transaction';

export async function loadInstallation(db: Db): Promise<string> {
  const { rows } = await db.query<{ id: string }>('SELECT id FROM installation');
  if (!rows[0]) throw new Error('the database has no installation id: run the migrations first');
  return rows[0].id;
}

/** Suites with a build queued or running (not a plan's part), by id: what Temporal should be running. */
export async function suitesInProgress(db: Db): Promise<number[]> {
  const { rows } = await db.query<{ suite_id: number }>(
    `SELECT DISTINCT suite_id FROM sessions WHERE status IN ('queued', 'running') AND parent_id IS NULL ORDER BY suite_id`,
  );
  return rows.map((r) => Number(r.suite_id));
}
