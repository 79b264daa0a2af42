/** SQL for suites (one repository + one branch). */
import type { Db } from './db';

export interface SuiteRow {
  id: number;
  repo_id: number;
  branch: string;
  test_pattern: string;
  test_command: string | null;
  workers: number;
  last_built_commit: string | null;
  created_at: Date;
}

const COLUMNS = 'id, repo_id, branch, test_pattern, test_command, workers, last_built_commit, created_at';

export async function insertSuite(
  db: Db,
  suite: { repo_id: number; branch: string; test_pattern: string; test_command: string | null; workers: number },
): Promise<SuiteRow> {
  const { rows } = await db.query<SuiteRow>(
    `INSERT INTO suites (repo_id, branch, test_pattern, test_command, workers) VALUES ($1, $2, $3, $4, $5) RETURNING ${COLUMNS}`,
    [suite.repo_id, suite.branch, suite.test_pattern, suite.test_command, suite.workers],
  );
  return rows[0]!;
}

export async function listSuites(db: Db, repoId: number): Promise<SuiteRow[]> {
  return (await db.query<SuiteRow>(`SELECT ${COLUMNS} FROM suites WHERE repo_id = $1 ORDER BY id`, [repoId])).rows;
}

export async function findSuiteForBranch(db: Db, repoId: number, branch: string): Promise<SuiteRow | undefined> {
  return (await db.query<SuiteRow>(`SELECT ${COLUMNS} FROM suites WHERE repo_id = $1 AND branch = $2`, [repoId, branch])).rows[0];
}
