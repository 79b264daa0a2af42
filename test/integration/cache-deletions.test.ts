// A deleted repository's cache entries go with it, and so do their blobs: the delete queues the
// repository (migration 019), the daily cleanup deletes everything under its prefix in the
// store and forgets it; another repository's entries stay; a failing store keeps it queued.
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Config } from '../../src/config';
import { createCleanupActivity } from '../../src/activities/cleanup';
import { repoCachePrefix } from '../../src/core/storeKeys';
import { openStore } from '../../src/store';
import { createTestDatabase, type TestDatabase } from '../support/db';

let db: TestDatabase;
let work: string;

beforeAll(async () => {
  db = await createTestDatabase('sluice_cache_deletions');
  work = await mkdtemp(path.join(os.tmpdir(), 'sluice-cache-deletions-'));
});

afterAll(async () => {
  await db?.drop();
  await rm(work, { recursive: true, force: true });
});

let repos = 0;
/** A repository with one cache entry whose blob is in the directory store `dir`. */
async function repoWithEntry(dir: string): Promise<number> {
  const org = await db.pool.query<{ id: number }>(`INSERT INTO orgs (name, email) VALUES ($1, 'ci@acme.test') RETURNING id`, [`acme-${++repos}`]);
  const { rows } = await db.pool.query<{ id: number }>(
    `INSERT INTO repos (org_id, name, scm, pull_url, key_hash, key_sealed, ssh_public_key, ssh_private_key_sealed)
     VALUES ($1, 'app', 'git', 'git@x:a.git', $2, 'k', 'pub', 'priv') RETURNING id`,
    [org.rows[0]!.id, Buffer.from([repos])],
  );
  const repoId = rows[0]!.id;
  const key = `${repoCachePrefix(repoId)}/entry.tgz`;
  const file = path.join(work, `blob-${repoId}`);
  await writeFile(file, 'packed node_modules');
  await openStore({ kind: 'dir', dir }).putFile(key, file);
  await db.pool.query(
    `INSERT INTO cache_entries (repo_id, scope, key, family, size, store_key) VALUES ($1, 'master', 'k1', 'f', 19, $2)`,
    [repoId, key],
  );
  return repoId;
}

const cleanup = (dir: string) => createCleanupActivity({ pool: db.pool, config: { retentionDays: 0, deliveryRetentionDays: 0, store: { kind: 'dir', dir } } as Config })();
const queued = async () => (await db.pool.query<{ repo_id: string }>('SELECT repo_id FROM cache_deletions')).rows.map((r) => Number(r.repo_id));

it('deletes the blobs of a deleted repository’s entries, and only those', async () => {
  const dir = path.join(work, 'store');
  const gone = await repoWithEntry(dir);
  const kept = await repoWithEntry(dir);
  await db.pool.query('DELETE FROM repos WHERE id = $1', [gone]);
  expect(await queued()).toEqual([gone]);

  const result = await cleanup(dir);
  expect(result.cacheRepos).toBe(1);
  expect(await queued()).toEqual([]);
  expect(await readdir(path.join(dir, 'caches'))).toEqual([String(kept)]);
});

it('a store that fails keeps the repository queued for the next cleanup', async () => {
  const dir = path.join(work, 'store-2');
  const gone = await repoWithEntry(dir);
  await db.pool.query('DELETE FROM repos WHERE id = $1', [gone]);
  // The store is now a file where its directory should be: deleting under it fails.
  await rm(dir, { recursive: true, force: true });
  await writeFile(dir, 'not a directory');
  const result = await cleanup(dir);
  expect(result.cacheError).toMatch(new RegExp(`repository ${gone}`));
  expect(await queued()).toContain(gone);
  await rm(dir);
  expect((await cleanup(path.join(work, 'store-2'))).cacheRepos).toBeGreaterThanOrEqual(1);
  expect(await queued()).toEqual([]);
});

it('a repository without cache entries queues nothing', async () => {
  const org = await db.pool.query<{ id: number }>(`INSERT INTO orgs (name, email) VALUES ('plain', 'ci@acme.test') RETURNING id`);
  const { rows } = await db.pool.query<{ id: number }>(
    `INSERT INTO repos (org_id, name, scm, pull_url, key_hash, key_sealed, ssh_public_key, ssh_private_key_sealed)
     VALUES ($1, 'app', 'git', 'git@x:a.git', '\\x99', 'k', 'pub', 'priv') RETURNING id`,
    [org.rows[0]!.id],
  );
  await db.pool.query('DELETE FROM repos WHERE id = $1', [rows[0]!.id]);
  expect(await queued()).toEqual([]);
});
