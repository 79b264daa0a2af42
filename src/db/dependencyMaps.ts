/**
 * SQL of dependency maps (issue 40, migration 035): what each test file's run touched, recorded by
 * a mapping run of the default branch and read by the builds of other branches and pull requests
 * to run only the files a change can affect (core/affected.ts).
 *
 * Only a pushed build of the repository's default branch may record a map (the workflow decides
 * it from the trigger, core/trust.ts; startMap checks the branch again here), so a pull request,
 * a fork's above all, never reads a map its own code wrote.
 */
import type { AffectedSummary, TestFileDeps } from '../core/affected';
import type { Db } from './transaction';

/** Maps kept per repository and profile: the newest; older ones go when a new one starts. A build looks among all of them. */
export const MAPS_KEPT = 10;

/**
 * Whether this build records a map, deciding it once (a retried activity gets the same answer):
 * yes when it is a build of its repository's default branch and the profile has no map yet, or
 * `mapEvery` pushed builds of its suite and profile have passed since the last one (this one
 * included; pull requests into the branch build in its suite too, and do not count: core/selection
 * triggerKind), or `staleMap`: the newest map cannot judge a change from this commit (a manifest
 * or a lock file changed since it, or it is no ancestor), so until a new one every build would
 * run in full.
 */
export async function startMap(db: Db, sessionId: number, commitId: string, profileName: string, mapEvery: number, staleMap = false): Promise<boolean> {
  const { rows } = await db.query<{ mapping: boolean }>(
    `WITH s AS (
       SELECT s.id, s.suite_id, su.repo_id FROM sessions s JOIN suites su ON su.id = s.suite_id JOIN repos r ON r.id = su.repo_id
        WHERE s.id = $1 AND su.branch = r.default_branch
     ), last AS (
       SELECT max(m.session_id) AS id FROM dependency_maps m, s WHERE m.repo_id = s.repo_id AND m.profile_name = $3 AND m.session_id < s.id
     ), due AS (
       SELECT s.* FROM s, last
        WHERE last.id IS NULL OR $5::boolean
           OR (SELECT count(*) FROM sessions b JOIN ci_events e ON e.id = b.ci_event_id
                WHERE b.suite_id = s.suite_id AND b.profile_name = $3 AND b.id > last.id AND b.id <= s.id
                  AND coalesce(e.trigger->>'kind', CASE WHEN e.trigger ? 'changeset' THEN 'pull-request' ELSE 'push' END) IN ('push', 'branch-create')) >= $4
     ), made AS (
       INSERT INTO dependency_maps (session_id, repo_id, profile_name, commit_id)
       SELECT id, repo_id, $3, $2 FROM due
       ON CONFLICT (session_id) DO NOTHING RETURNING session_id
     )
     SELECT EXISTS (SELECT 1 FROM made) OR EXISTS (SELECT 1 FROM dependency_maps WHERE session_id = $1) AS mapping`,
    [sessionId, commitId, profileName, mapEvery, staleMap === true],
  );
  const mapping = rows[0]!.mapping;
  if (mapping) {
    await db.query(
      `DELETE FROM dependency_maps WHERE session_id IN (
         SELECT m.session_id FROM dependency_maps m JOIN dependency_maps me ON me.session_id = $1
          WHERE m.repo_id = me.repo_id AND m.profile_name = me.profile_name
          ORDER BY m.session_id DESC OFFSET $2)`,
      [sessionId, MAPS_KEPT],
    );
  }
  return mapping;
}

/** One test file's dependencies, for a build recording a map (none is kept for any other build). */
export async function recordFileDeps(db: Db, sessionId: number, path: string, deps: TestFileDeps): Promise<void> {
  await db.query(
    `INSERT INTO dependency_map_files (session_id, path, reads, lists, probes)
     SELECT $1, $2, $3, $4, $5 WHERE EXISTS (SELECT 1 FROM dependency_maps WHERE session_id = $1)
     ON CONFLICT (session_id, path) DO UPDATE SET reads = EXCLUDED.reads, lists = EXCLUDED.lists, probes = EXCLUDED.probes`,
    [sessionId, path, deps.reads, deps.lists, deps.probes],
  );
}

/** A map a build may use: which build recorded it, at which commit. */
export interface MapCandidate {
  mapSession: number;
  commit: string;
}

/** The newest maps of the build's repository and profile, newest first (the build picks the newest of an ancestor commit). */
export async function mapCandidates(db: Db, sessionId: number, profileName: string): Promise<MapCandidate[]> {
  const { rows } = await db.query<MapCandidate>(
    `SELECT m.session_id::int AS "mapSession", m.commit_id AS commit
       FROM dependency_maps m JOIN suites su ON su.repo_id = m.repo_id JOIN sessions s ON s.suite_id = su.id
      WHERE s.id = $1 AND m.profile_name = $2 AND m.session_id <> $1
      ORDER BY m.session_id DESC LIMIT $3`,
    [sessionId, profileName, MAPS_KEPT],
  );
  return rows;
}

/**
 * A map the build chose, by its recording build: the files it mapped so far (a file it did not
 * map, because it was still running or ended without a trace, is then "no map yet" and runs).
 * Only a map of the build's own repository.
 */
/** A stored map as plain rows (it crosses the runner API as JSON). */
export interface StoredMap {
  commit: string;
  files: Array<TestFileDeps & { path: string }>;
}

export async function loadMap(db: Db, sessionId: number, mapSession: number): Promise<StoredMap | null> {
  const { rows: maps } = await db.query<{ commit_id: string }>(
    `SELECT m.commit_id FROM dependency_maps m JOIN suites su ON su.repo_id = m.repo_id JOIN sessions s ON s.suite_id = su.id
      WHERE s.id = $1 AND m.session_id = $2`,
    [sessionId, mapSession],
  );
  if (maps.length === 0) return null;
  const { rows } = await db.query<{ path: string; reads: string[]; lists: string[]; probes: string[] }>(
    'SELECT path, reads, lists, probes FROM dependency_map_files WHERE session_id = $1',
    [mapSession],
  );
  return { commit: maps[0]!.commit_id, files: rows };
}

/** What the build did about selection, for its page and the API. */
export async function recordAffected(db: Db, sessionId: number, summary: AffectedSummary): Promise<void> {
  await db.query('UPDATE sessions SET affected = $2 WHERE id = $1', [sessionId, JSON.stringify(summary)]);
}

/**
 * What a mapping run cost, for its page: the test time of its files under strace beside what the
 * same files took in the builds before (the estimates it listed them with); null while none ran.
 */
export async function mapRunCost(db: Db, sessionId: number): Promise<MapRunCost | null> {
  const { rows } = await db.query<MapRunCost>(
    `SELECT count(*)::int AS files, coalesce(sum(tr.duration_ms), 0)::bigint::float8 AS traced_ms, coalesce(sum(q.estimate_ms), 0)::bigint::float8 AS usual_ms
       FROM test_queue q JOIN test_results tr ON tr.session_id = q.session_id AND tr.path = q.path
      WHERE q.session_id = $1 AND q.estimate_ms IS NOT NULL AND tr.status <> 'skipped'`,
    [sessionId],
  );
  return rows[0]!.files > 0 ? rows[0]! : null;
}

export interface MapRunCost {
  /** Files that ran and had an estimate from earlier builds. */
  files: number;
  traced_ms: number;
  usual_ms: number;
}
