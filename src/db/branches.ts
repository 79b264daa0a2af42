/**
 * SQL for branch rows (spec §1 "Branch toggles", "Branch hiding"; §4 the Branches page). A
 * branch has a row once a trigger named it or someone set its toggles; without a row it is
 * enabled, shown and not locked.
 */
import type { BranchState } from '../core/selection';
import type { Db } from './transaction';

export interface BranchRow {
  name: string;
  enabled: boolean;
  hidden: boolean;
  locked_visible: boolean;
}

export interface BranchListRow extends BranchRow {
  has_suite: boolean;
}

export async function findBranch(db: Db, repoId: number, name: string): Promise<BranchState | null> {
  const { rows } = await db.query<BranchRow>('SELECT name, enabled, hidden, locked_visible FROM branches WHERE repo_id = $1 AND name = $2', [
    repoId,
    name,
  ]);
  const row = rows[0];
  return row ? { enabled: row.enabled, hidden: row.hidden, lockedVisible: row.locked_visible } : null;
}

/**
 * Makes the branch visible (a push arrived) or hides it (a branch-delete arrived), creating
 * the row when there is none. Hiding leaves a branch locked visible alone, whatever the caller
 * read before: the guard is in the statement, so a concurrent lock always wins.
 */
export async function setBranchHidden(db: Db, repoId: number, name: string, hidden: boolean): Promise<void> {
  await db.query(
    `INSERT INTO branches (repo_id, name, hidden) VALUES ($1, $2, $3)
     ON CONFLICT (repo_id, name) DO UPDATE SET hidden = EXCLUDED.hidden, updated_at = now()
      WHERE branches.hidden <> EXCLUDED.hidden AND NOT (EXCLUDED.hidden AND branches.locked_visible)`,
    [repoId, name, hidden],
  );
}

/** Every branch with a row or a suite, by name. */
export async function listBranches(db: Db, repoId: number): Promise<BranchListRow[]> {
  const { rows } = await db.query<BranchListRow>(
    `SELECT n.name,
            coalesce(b.enabled, true) AS enabled,
            coalesce(b.hidden, false) AS hidden,
            coalesce(b.locked_visible, false) AS locked_visible,
            (s.id IS NOT NULL) AS has_suite
       FROM (SELECT name FROM branches WHERE repo_id = $1 UNION SELECT branch FROM suites WHERE repo_id = $1) n
       LEFT JOIN branches b ON b.repo_id = $1 AND b.name = n.name
       LEFT JOIN suites s ON s.repo_id = $1 AND s.branch = n.name
      ORDER BY n.name COLLATE "C"`,
    [repoId],
  );
  return rows;
}

export async function findBranchView(db: Db, repoId: number, name: string): Promise<BranchListRow> {
  const { rows } = await db.query<BranchListRow>(
    `SELECT $2::text AS name,
            coalesce(b.enabled, true) AS enabled,
            coalesce(b.hidden, false) AS hidden,
            coalesce(b.locked_visible, false) AS locked_visible,
            EXISTS (SELECT 1 FROM suites s WHERE s.repo_id = $1 AND s.branch = $2) AS has_suite
       FROM (SELECT 1) one
       LEFT JOIN branches b ON b.repo_id = $1 AND b.name = $2`,
    [repoId, name],
  );
  return rows[0]!;
}

/**
 * Sets the toggles given (undefined: unchanged), creating the row when there is none. Locking
 * a branch visible also shows it: "locked to the visible state" (spec §1).
 */
export async function updateBranch(db: Db, repoId: number, name: string, patch: { enabled?: boolean; locked_visible?: boolean }): Promise<void> {
  await db.query(
    `INSERT INTO branches (repo_id, name, enabled, locked_visible) VALUES ($1, $2, coalesce($3, true), coalesce($4, false))
     ON CONFLICT (repo_id, name) DO UPDATE SET
       enabled = coalesce($3, branches.enabled),
       locked_visible = coalesce($4, branches.locked_visible),
       hidden = CASE WHEN $4 THEN false ELSE branches.hidden END,
       updated_at = now()`,
    [repoId, name, patch.enabled ?? null, patch.locked_visible ?? null],
  );
}
