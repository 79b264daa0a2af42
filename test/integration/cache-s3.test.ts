// The dependency cache over the S3 store, against a real S3-compatible server (gofakes3), as
// runners on two machines share it: one saves, the other downloads, then restores locally;
// eviction deletes the blob from the bucket.
import { existsSync, readFileSync, readlinkSync } from 'node:fs';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { restoreCache, saveCache, sweepLocalCache, type CacheDeps, type CacheSettings, type CacheTarget } from '../../src/steps/cache';
import { openStore, type BlobStore } from '../../src/store';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { startS3Server, type S3Server } from '../support/s3Server';
import { pgBuildRecords } from '../../src/db/buildRecords';

let db: TestDatabase;
let s3: S3Server;
let store: BlobStore;
let work: string;
let repoId: number;
let n = 0;

const settings: CacheSettings = { key_paths: ['package-lock.json'], save_paths: ['node_modules', '~/.npm'] };

beforeAll(async () => {
  s3 = await startS3Server();
  await s3.makeBucket('caches');
  store = openStore(s3.settings('caches', 'ci/'));
  db = await createTestDatabase('sluice_cache_s3');
  work = await mkdtemp(path.join(os.tmpdir(), 'sluice-cache-s3-'));
  const org = await db.pool.query<{ id: number }>(`INSERT INTO orgs (name, email) VALUES ('acme', 'ci@acme.test') RETURNING id`);
  const repo = await db.pool.query<{ id: number }>(
    `INSERT INTO repos (org_id, name, scm, pull_url, key_hash, key_sealed, ssh_public_key, ssh_private_key_sealed)
     VALUES ($1, 'app', 'git', 'git@x:a.git', '\\x01', 'k', 'pub', 'priv') RETURNING id`,
    [org.rows[0]!.id],
  );
  repoId = repo.rows[0]!.id;
});

afterAll(async () => {
  await db?.drop();
  await s3?.stop();
  await rm(work, { recursive: true, force: true });
});

const runner = (name: string, maxRepoBytes = 100 * 1024 * 1024): CacheDeps => ({
  records: pgBuildRecords(db.pool, Buffer.alloc(32)),
  store,
  local: { dir: path.join(work, `local-${name}`), maxBytes: 100 * 1024 * 1024 },
  limits: { maxEntryBytes: 10 * 1024 * 1024, maxRepoBytes },
});

async function build(lock: string): Promise<CacheTarget> {
  n += 1;
  const tree = path.join(work, `b${n}`, 'tree');
  const home = path.join(work, `b${n}`, 'home');
  await mkdir(tree, { recursive: true });
  await mkdir(home, { recursive: true });
  await writeFile(path.join(tree, 'package-lock.json'), lock);
  return { repoId, readScopes: ['main', 'master'], writeScope: 'main', tree, home };
}

async function install(t: CacheTarget, content: string): Promise<void> {
  await mkdir(path.join(t.tree, 'node_modules/pkg/.bin'), { recursive: true });
  await writeFile(path.join(t.tree, 'node_modules/pkg/index.js'), content);
  await symlink('../index.js', path.join(t.tree, 'node_modules/pkg/.bin/run'));
  await mkdir(path.join(t.home, '.npm'), { recursive: true });
  await writeFile(path.join(t.home, '.npm/cached'), content);
}

const blob = async (storeKey: string) => {
  const found = await store.open(storeKey);
  found?.stream.destroy();
  return found !== null;
};

it('saves to the bucket on one runner, and another runner downloads it once, then restores from its own copy', async () => {
  const cold = await build('lock-a');
  const miss = await restoreCache(runner('one'), settings, cold);
  expect(miss.hit).toBe('miss');
  await install(cold, 'content a');
  const saved = await saveCache(runner('one'), settings, cold, miss);
  expect(saved.saved).toBe(true);
  const { rows } = await db.pool.query<{ storeKey: string }>('SELECT store_key AS "storeKey" FROM cache_entries');
  expect(rows).toHaveLength(1);
  expect(await blob(rows[0]!.storeKey)).toBe(true);
  // Under the store's prefix in the bucket.
  const bucket = openStore(s3.settings('caches', ''));
  const object = await bucket.open(`ci/${rows[0]!.storeKey}`);
  object?.stream.destroy();
  expect(object?.size).toBe(saved.bytes);

  for (const source of ['store', 'local'] as const) {
    const warm = await build('lock-a');
    const restored = await restoreCache(runner('two'), settings, warm);
    expect(restored).toMatchObject({ hit: 'exact', scope: 'main', source, paths: ['node_modules', '~/.npm'], notes: [] });
    expect(readFileSync(path.join(warm.tree, 'node_modules/pkg/index.js'), 'utf8')).toBe('content a');
    expect(readlinkSync(path.join(warm.tree, 'node_modules/pkg/.bin/run'))).toBe('../index.js');
    expect(readFileSync(path.join(warm.home, '.npm/cached'), 'utf8')).toBe('content a');
  }
});

it('evicts past the repository limit, deleting the blob from the bucket', async () => {
  const { rows: before } = await db.pool.query<{ storeKey: string }>('SELECT store_key AS "storeKey" FROM cache_entries');
  const t = await build('lock-b');
  const restored = await restoreCache(runner('one', 1), settings, t);
  expect(restored.hit).toBe('fallback');
  await rm(path.join(t.tree, 'node_modules'), { recursive: true });
  await install(t, 'content b');
  const saved = await saveCache(runner('one', 1), settings, t, restored);
  expect(saved).toMatchObject({ saved: true });
  expect(saved.note).toMatch(/1 least recently used entry evicted/);
  expect(await blob(before[0]!.storeKey)).toBe(false);
  const { rows: after } = await db.pool.query<{ storeKey: string }>('SELECT store_key AS "storeKey" FROM cache_entries');
  expect(after).toHaveLength(1);
  expect(await blob(after[0]!.storeKey)).toBe(true);
  // The runner's copy of the evicted entry goes with its next sweep.
  const copy = path.join(work, 'local-one', 'entries', before[0]!.storeKey.replace(/\//g, '-'));
  expect(existsSync(copy)).toBe(true);
  expect(await sweepLocalCache(runner('one'))).toBe(1);
  expect(existsSync(copy)).toBe(false);
});
