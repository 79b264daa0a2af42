/**
 * SQL of deleting an organization, a repository or a suite (app/remove.ts says when): the
 * sessions of it that have not ended, and the delete itself, which the foreign keys of 001
 * cascade to everything below (repositories, suites, branches, secrets, webhooks, triggers,
 * sessions with their results, cases, outputs and post-build steps). Delivery attempts of its
 * sessions stay in their webhook's log (session_id set to NULL) until the retention cleanup.
 */
import type { Pool } from 'pg';
import { withTransaction, type Db } from './transaction';

/** What is deleted: an organization, a repository or a suite, by id. */
export type Doomed = { org: number } | { repo: number } | { suite: number };

/** A session of it that has not ended: queued or running. */
export interface ActiveSession {
  id: number;
  suite_id: number;
  parent_id: number | null;
  status: 'queued' | 'running';
}

/** Which suites a Doomed covers, as a WHERE clause on `su` with $1 its id. */
function suitesOf(doomed: Doomed): string {
  if ('suite' in doomed) return 'su.id = $1';
  if ('repo' in doomed) return 'su.repo_id = $1';
  return 'su.repo_id IN (SELECT id FROM repos WHERE org_id = $1)';
}

const idOf = (doomed: Doomed): number => ('suite' in doomed ? doomed.suite : 'repo' in doomed ? doomed.repo : doomed.org);

/** Its sessions that are queued or running, plan parts included, oldest first. */
export async function activeSessionsOf(db: Db, doomed: Doomed): Promise<ActiveSession[]> {
  const { rows } = await db.query<ActiveSession>(
    `SELECT s.id, s.suite_id, s.parent_id, s.status FROM sessions s JOIN suites su ON su.id = s.suite_id
      WHERE ${suitesOf(doomed)} AND s.status IN ('queued', 'running') ORDER BY s.id`,
    [idOf(doomed)],
  );
  return rows;
}

export type DeleteOutcome = { deleted: true } | { deleted: false; gone: true } | { deleted: false; gone: false; active: ActiveSession[] };

/**
 * Deletes it, in one transaction, if none of its sessions but those in `ignore` is queued or
 * running; otherwise answers those. Its rows are locked first, so no trigger, rebuild or new
 * suite can add a session between the check and the delete (a trigger under way is waited
 * for, and its session then counts). `gone` when it no longer exists.
 */
export async function deleteIfIdle(pool: Pool, doomed: Doomed, ignore: ReadonlySet<number>): Promise<DeleteOutcome> {
  return withTransaction(pool, async (client) => {
    const id = idOf(doomed);
    // Top down, as the foreign keys go: what a new session or suite would reference is locked.
    const table = 'suite' in doomed ? 'suites' : 'repo' in doomed ? 'repos' : 'orgs';
    const { rowCount } = await client.query(`SELECT 1 FROM ${table} WHERE id = $1 FOR UPDATE`, [id]);
    if (!rowCount) return { deleted: false, gone: true };
    if ('org' in doomed) await client.query('SELECT 1 FROM repos WHERE org_id = $1 ORDER BY id FOR UPDATE', [id]);
    if (!('suite' in doomed)) await client.query(`SELECT 1 FROM suites su WHERE ${suitesOf(doomed)} ORDER BY su.id FOR UPDATE`, [id]);
    const active = (await activeSessionsOf(client, doomed)).filter((s) => !ignore.has(s.id));
    if (active.length > 0) return { deleted: false, gone: false, active };
    await client.query(`DELETE FROM ${table} WHERE id = $1`, [id]);
    return { deleted: true };
  });
}

/** A suite of a repository, by id; undefined when the repository has no such suite. */
export async function findSuiteOfRepo(db: Db, repoId: number, suiteId: number): Promise<{ id: number; branch: string } | undefined> {
  const { rows } = await db.query<{ id: number; branch: string }>('SELECT id, branch FROM suites WHERE repo_id = $1 AND id = $2', [repoId, suiteId]);
  return rows[0];
}
