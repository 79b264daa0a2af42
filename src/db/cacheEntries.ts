/** Dependency cache entries (cache_entries): which blob of the store holds which repository's entry, for which branch and key. */
import { repoCachePrefix } from '../core/storeKeys';
import type { Db } from './transaction';

export interface CacheEntryRow {
  id: number;
  scope: string;
  key: string;
  size: number;
  storeKey: string;
}

const COLUMNS = 'id, scope, key, size, store_key AS "storeKey"';

/** The entry with `key` in the first of `scopes` that has one. */
export async function findExactEntry(db: Db, repoId: number, scopes: readonly string[], key: string): Promise<CacheEntryRow | null> {
  const { rows } = await db.query<CacheEntryRow>(
    `SELECT ${COLUMNS} FROM cache_entries WHERE repo_id = $1 AND scope = ANY($2::text[]) AND key = $3
     ORDER BY array_position($2::text[], scope) LIMIT 1`,
    [repoId, scopes, key],
  );
  return rows[0] ?? null;
}

/** The newest entry of `family` in the first of `scopes` that has one. */
export async function findNewestEntry(db: Db, repoId: number, scopes: readonly string[], family: string): Promise<CacheEntryRow | null> {
  const { rows } = await db.query<CacheEntryRow>(
    `SELECT ${COLUMNS} FROM cache_entries WHERE repo_id = $1 AND scope = ANY($2::text[]) AND family = $3
     ORDER BY array_position($2::text[], scope), created_at DESC, id DESC LIMIT 1`,
    [repoId, scopes, family],
  );
  return rows[0] ?? null;
}

/** A build restored the entry: it is the last to be evicted now. */
export async function touchEntry(db: Db, id: number): Promise<void> {
  await db.query('UPDATE cache_entries SET last_used_at = now() WHERE id = $1', [id]);
}

/** Records an entry whose blob is stored; null when the scope has one with that key already (another build saved it meanwhile). */
export async function insertEntry(
  db: Db,
  entry: { repoId: number; scope: string; key: string; family: string; size: number; storeKey: string },
): Promise<number | null> {
  const { rows } = await db.query<{ id: number }>(
    `INSERT INTO cache_entries (repo_id, scope, key, family, size, store_key)
     SELECT $1::bigint, $2, $3, $4, $5, $6 WHERE EXISTS (SELECT 1 FROM repos WHERE id = $1::bigint)
     ON CONFLICT (repo_id, scope, key) DO NOTHING RETURNING id`,
    [entry.repoId, entry.scope, entry.key, entry.family, entry.size, entry.storeKey],
  );
  return rows[0]?.id ?? null;
}

/**
 * Deletes the repository's least recently used entries, all but `keepId`, until its entries
 * hold at most `maxBytes`; returns their store keys, for the caller to delete the blobs.
 */
export async function evictEntries(db: Db, repoId: number, maxBytes: number, keepId: number): Promise<string[]> {
  // Newest first, kept while the running total fits; the entry just saved counts first.
  const { rows } = await db.query<{ storeKey: string }>(
    `DELETE FROM cache_entries WHERE id IN (
       SELECT id FROM (
         SELECT id, sum(size) OVER (ORDER BY id = $3 DESC, last_used_at DESC, id DESC) AS running
         FROM cache_entries WHERE repo_id = $1
       ) ranked WHERE running > $2 AND id <> $3
     ) RETURNING store_key AS "storeKey"`,
    [repoId, maxBytes, keepId],
  );
  return rows.map((r) => r.storeKey);
}

/** Deletes one entry (its blob vanished, or it was refused as hostile); its store key, or null if it was gone already. */
export async function deleteEntry(db: Db, id: number): Promise<string | null> {
  const { rows } = await db.query<{ storeKey: string }>('DELETE FROM cache_entries WHERE id = $1 RETURNING store_key AS "storeKey"', [id]);
  return rows[0]?.storeKey ?? null;
}

/** Which of `storeKeys` some entry still names (a runner's local copies of the others can go). */
export async function liveStoreKeys(db: Db, storeKeys: readonly string[]): Promise<Set<string>> {
  if (storeKeys.length === 0) return new Set();
  const { rows } = await db.query<{ storeKey: string }>('SELECT store_key AS "storeKey" FROM cache_entries WHERE store_key = ANY($1::text[])', [storeKeys]);
  return new Set(rows.map((r) => r.storeKey));
}

export { repoCachePrefix };

/**
 * Deletes the blobs of deleted repositories' cache entries (migration 019 queues them), a
 * repository at a time; one whose blobs could not all go stays queued. How many repositories.
 */
export async function drainCacheDeletions(db: Db, deletePrefix: (prefix: string) => Promise<number>, batch = 100): Promise<{ repos: number; error: string | null }> {
  let repos = 0;
  for (;;) {
    const { rows } = await db.query<{ repo_id: string }>('SELECT repo_id FROM cache_deletions ORDER BY queued_at LIMIT $1', [batch]);
    for (const { repo_id } of rows) {
      const id = Number(repo_id);
      try {
        await deletePrefix(repoCachePrefix(id));
      } catch (err) {
        return { repos, error: `repository ${id}: ${(err as Error).message}` };
      }
      await db.query('DELETE FROM cache_deletions WHERE repo_id = $1', [id]);
      repos += 1;
    }
    if (rows.length < batch) return { repos, error: null };
  }
}
