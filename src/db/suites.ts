/** SQL for suites (one repository + one branch). */
import type { CacheSettings, HookSettings, ServiceName } from '../core/buildSetup';
import type { Profile } from '../core/profiles';
import type { Db } from './transaction';

export interface SuiteRow extends SuiteSettings {
  id: number;
  repo_id: number;
  branch: string;
  last_built_commit: string | null;
  created_at: Date;
}

const COLUMNS =
  'id, repo_id, branch, test_pattern, test_command, workers, junit_pattern, retry_failed, profiles, plan, deadline_minutes, hooks, cache, services, artifacts, image, own_runners, last_built_commit, created_at';

export async function insertSuite(
  db: Db,
  suite: Pick<SuiteRow, 'repo_id' | 'branch'> &
    Pick<SuiteSettings, 'test_pattern' | 'test_command' | 'workers'> &
    Partial<Pick<SuiteSettings, 'junit_pattern' | 'retry_failed' | 'profiles' | 'plan' | 'deadline_minutes' | 'hooks' | 'cache' | 'services' | 'artifacts' | 'image' | 'own_runners'>>,
): Promise<SuiteRow> {
  const { rows } = await db.query<SuiteRow>(
    `INSERT INTO suites (repo_id, branch, test_pattern, test_command, workers, junit_pattern, profiles, plan, deadline_minutes, hooks, cache, services, artifacts, retry_failed, own_runners, image)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) RETURNING ${COLUMNS}`,
    [suite.repo_id, suite.branch, suite.test_pattern, suite.test_command, suite.workers, suite.junit_pattern ?? null,
      JSON.stringify(suite.profiles ?? []), suite.plan ?? null, suite.deadline_minutes ?? null,
      jsonOrNull(suite.hooks), jsonOrNull(suite.cache), suite.services ?? null, suite.artifacts ?? null, suite.retry_failed ?? 0, suite.own_runners ?? false, suite.image ?? null],
  );
  return rows[0]!;
}

/** What an admin may change of a suite. */
export interface SuiteSettings {
  test_pattern: string;
  test_command: string | null;
  workers: number;
  /** Glob of the JUnit XML files the tests leave; null: none are collected. */
  junit_pattern: string | null;
  /** How many times a failing file runs again (migration 020). */
  retry_failed: number;
  /** Named profiles besides the suite's own (`default`), and the plan; see core/profiles.ts. */
  profiles: Profile[];
  plan: string[] | null;
  /** How long one build may take, from its turn to the end of its tests (migration 013); null: no deadline. */
  deadline_minutes: number | null;
  /** What builds set up around their tests (migration 016, core/buildSetup.ts); null: not set (sluice.yml or the defaults decide). */
  hooks: HookSettings | null;
  /** `false`: no cache. */
  cache: CacheSettings | false | null;
  services: ServiceName[] | null;
  artifacts: string[] | null;
  /** The OCI image its builds run in (migration 029); null: none. */
  image: string | null;
  /** Builds run only on the organization's own runners (migration 025, core/queues.ts). */
  own_runners: boolean;
}

const SETTINGS: readonly (keyof SuiteSettings)[] = [
  'test_pattern', 'test_command', 'workers', 'junit_pattern', 'retry_failed', 'profiles', 'plan', 'deadline_minutes', 'hooks', 'cache', 'services', 'artifacts', 'image', 'own_runners',
];
/** jsonb columns take JSON text; null stays SQL NULL ("not set"), not a JSON null. */
const JSON_COLUMNS = new Set<keyof SuiteSettings>(['profiles', 'hooks', 'cache']);
const jsonOrNull = (v: unknown) => (v === null || v === undefined ? null : JSON.stringify(v));

/** Sets the given settings of a repository's suite; undefined when there is no such suite. */
export async function updateSuiteSettings(db: Db, repoId: number, id: number, patch: Partial<SuiteSettings>): Promise<SuiteRow | undefined> {
  // Column names come from the fixed list above, never from input.
  const columns = SETTINGS.filter((c) => patch[c] !== undefined);
  const sets = columns.map((c, i) => `${c} = $${i + 3}`);
  const { rows } = await db.query<SuiteRow>(
    sets.length === 0
      ? `SELECT ${COLUMNS} FROM suites WHERE repo_id = $1 AND id = $2`
      : `UPDATE suites SET ${sets.join(', ')} WHERE repo_id = $1 AND id = $2 RETURNING ${COLUMNS}`,
    // jsonb wants JSON text; pg would send a JavaScript array as a PostgreSQL array.
    [repoId, id, ...columns.map((c) => (JSON_COLUMNS.has(c) ? jsonOrNull(patch[c]) : patch[c]))],
  );
  return rows[0];
}

export async function listSuites(db: Db, repoId: number): Promise<SuiteRow[]> {
  return (await db.query<SuiteRow>(`SELECT ${COLUMNS} FROM suites WHERE repo_id = $1 ORDER BY id`, [repoId])).rows;
}

export async function findSuiteForBranch(db: Db, repoId: number, branch: string): Promise<SuiteRow | undefined> {
  return (await db.query<SuiteRow>(`SELECT ${COLUMNS} FROM suites WHERE repo_id = $1 AND branch = $2`, [repoId, branch])).rows[0];
}
