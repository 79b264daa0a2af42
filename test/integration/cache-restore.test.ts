// The dependency cache end to end on the directory store and real PostgreSQL: a cold build
// saves, a warm runner restores from its local copy, another runner downloads; the scopes
// (a build reads its own branch's entries and the default branch's, never another's; a pull
// request writes none); fallback; limits and eviction; hostile entries refused; links in the
// way of a restore; and the build user owning what is restored.
import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import { chmod, chown, mkdir, mkdtemp, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { Header } from 'tar';
import { restoreCache, saveCache, sweepLocalCache, type CacheDeps, type CacheSettings, type CacheTarget, type Restored } from '../../src/steps/cache';
import { checkoutKey } from '../../src/steps/cache/key';
import { sparesSettled } from '../../src/steps/cache/link';
import { markUsed, removeTree } from '../../src/steps/checkout/tree';
import { openStore, type BlobStore } from '../../src/store';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { pgBuildRecords } from '../../src/db/buildRecords';

let db: TestDatabase;
let work: string;
let store: BlobStore;
let storeDir: string;
let repoId: number;
let otherRepoId: number;
let builds = 0;

const settings: CacheSettings = { key_paths: ['package-lock.json'], save_paths: ['node_modules', '~/.npm'] };
const MiB = 1024 * 1024;

beforeAll(async () => {
  db = await createTestDatabase('sluice_cache');
  work = await mkdtemp(path.join(os.tmpdir(), 'sluice-cache-'));
  storeDir = path.join(work, 'store');
  store = openStore({ kind: 'dir', dir: storeDir });
  const org = await db.pool.query<{ id: number }>(`INSERT INTO orgs (name, email) VALUES ('acme', 'ci@acme.test') RETURNING id`);
  const repo = (name: string) =>
    db.pool.query<{ id: number }>(
      `INSERT INTO repos (org_id, name, scm, pull_url, key_hash, key_sealed, ssh_public_key, ssh_private_key_sealed)
       VALUES ($1, $2, 'git', 'git@x:a.git', $3, 'k', 'pub', 'priv') RETURNING id`,
      [org.rows[0]!.id, name, Buffer.from(name)],
    );
  repoId = (await repo('app')).rows[0]!.id;
  otherRepoId = (await repo('other')).rows[0]!.id;
});

afterAll(async () => {
  await db?.drop();
  await rm(work, { recursive: true, force: true });
});

/** A repository of its own, for a test whose entries must not meet another test's. */
async function newRepo(): Promise<number> {
  const { rows } = await db.pool.query<{ id: number }>(
    `INSERT INTO repos (org_id, name, scm, pull_url, key_hash, key_sealed, ssh_public_key, ssh_private_key_sealed)
     SELECT org_id, 'r' || (random() * 1e9)::bigint, 'git', 'x', decode(md5(random()::text), 'hex'), 'k', 'p', 'q' FROM repos WHERE id = $1 RETURNING id`,
    [repoId],
  );
  return rows[0]!.id;
}

/** A runner: its own local directory, the shared store and database. */
function runner(name: string, overrides: Partial<Pick<CacheDeps, 'limits' | 'local'>> = {}): CacheDeps {
  return {
    records: pgBuildRecords(db.pool, Buffer.alloc(32)),
    store,
    local: { dir: path.join(work, `local-${name}`), maxBytes: 100 * MiB },
    limits: { maxEntryBytes: 50 * MiB, maxRepoBytes: 200 * MiB },
    ...overrides,
  };
}

/** A checkout and home with a lock file; `install` puts what package setup would. */
async function checkout(lock = 'lock-1'): Promise<{ tree: string; home: string }> {
  builds += 1;
  const tree = path.join(work, `build-${builds}`, 'tree');
  const home = path.join(work, `build-${builds}`, 'home');
  await mkdir(tree, { recursive: true });
  await mkdir(home, { recursive: true });
  await writeFile(path.join(tree, 'package-lock.json'), lock);
  return { tree, home };
}

async function install(dirs: { tree: string; home: string }, version = 'v1'): Promise<void> {
  await rm(path.join(dirs.tree, 'node_modules'), { recursive: true, force: true });
  await mkdir(path.join(dirs.tree, 'node_modules/left-pad/bin'), { recursive: true });
  await mkdir(path.join(dirs.tree, 'node_modules/.bin'), { recursive: true });
  await writeFile(path.join(dirs.tree, 'node_modules/left-pad/index.js'), `module.exports = '${version}';\n`);
  await writeFile(path.join(dirs.tree, 'node_modules/left-pad/bin/pad'), '#!/bin/sh\necho pad\n', { mode: 0o755 });
  await symlink('../left-pad/bin/pad', path.join(dirs.tree, 'node_modules/.bin/pad'));
  await mkdir(path.join(dirs.home, '.npm/_cacache'), { recursive: true });
  await writeFile(path.join(dirs.home, '.npm/_cacache/index'), `cache ${version}`);
}

const target = (dirs: { tree: string; home: string }, branch: string, writeScope: string | null = branch, repo = repoId): CacheTarget => ({
  repoId: repo,
  readScopes: [...new Set([branch, 'master'])],
  writeScope,
  ...dirs,
});

async function entries(repo = repoId): Promise<{ scope: string; key: string; size: number; storeKey: string }[]> {
  const { rows } = await db.pool.query('SELECT scope, key, size, store_key AS "storeKey" FROM cache_entries WHERE repo_id = $1 ORDER BY id', [repo]);
  return rows;
}

/** A cold build on `branch`: restore (a miss, or what is there), install, save. */
async function coldBuild(deps: CacheDeps, branch: string, lock = 'lock-1', version = 'v1', writeScope: string | null = branch, repo = repoId): Promise<{ restored: Restored; saved: Awaited<ReturnType<typeof saveCache>> }> {
  const dirs = await checkout(lock);
  const t = target(dirs, branch, writeScope, repo);
  const restored = await restoreCache(deps, settings, t);
  await install(dirs, version);
  return { restored, saved: await saveCache(deps, settings, t, restored) };
}

describe('a cold build, then warm ones', () => {
  const a = () => runner('a');
  const b = () => runner('b');

  it('misses and saves on a push, restores from the runner\'s local copy, and another runner downloads it', async () => {
    const cold = await coldBuild(a(), 'master');
    expect(cold.restored).toMatchObject({ hit: 'miss', scope: null, source: null, paths: [], notes: [] });
    expect(cold.restored.key).toMatch(/^[0-9a-f]{64}$/);
    expect(cold.saved).toMatchObject({ saved: true });
    expect(cold.saved.note).toMatch(/^cache saved in master: node_modules, ~\/\.npm, /);
    const [entry] = await entries();
    expect(entry).toMatchObject({ scope: 'master', key: cold.restored.key, size: cold.saved.bytes });
    expect(existsSync(path.join(storeDir, entry!.storeKey))).toBe(true);

    for (const [deps, source] of [[a(), 'local'], [b(), 'store'], [b(), 'local']] as const) {
      const dirs = await checkout();
      const restored = await restoreCache(deps, settings, target(dirs, 'master'));
      expect(restored).toMatchObject({ key: cold.restored.key, hit: 'exact', scope: 'master', source, paths: ['node_modules', '~/.npm'], notes: [] });
      expect(restored.bytes).toBeGreaterThan(0);
      expect(readFileSync(path.join(dirs.tree, 'node_modules/left-pad/index.js'), 'utf8')).toBe("module.exports = 'v1';\n");
      expect(readlinkSync(path.join(dirs.tree, 'node_modules/.bin/pad'))).toBe('../left-pad/bin/pad');
      expect(statSync(path.join(dirs.tree, 'node_modules/left-pad/bin/pad')).mode & 0o777).toBe(0o755);
      expect(readFileSync(path.join(dirs.home, '.npm/_cacache/index'), 'utf8')).toBe('cache v1');
      // An exact hit saves nothing.
      expect(await saveCache(deps, settings, target(dirs, 'master'), restored)).toEqual({ saved: false, bytes: 0, note: 'cache not saved: the entry of this key was restored' });
    }
    expect(await entries()).toHaveLength(1);
    // Local copies are the runner's alone.
    expect(statSync(path.join(work, 'local-b')).mode & 0o777).toBe(0o700);
  });

  it('falls back to the newest entry of the scope when the lock file changed, and saves the new key', async () => {
    const { restored, saved } = await coldBuild(a(), 'master', 'lock-2', 'v2');
    expect(restored).toMatchObject({ hit: 'fallback', scope: 'master', source: 'local', paths: ['node_modules', '~/.npm'] });
    expect(saved.saved).toBe(true);
    expect((await entries()).map((e) => e.key)).toEqual([(await entries())[0]!.key, restored.key]);

    const dirs = await checkout('lock-3');
    const again = await restoreCache(b(), settings, target(dirs, 'master'));
    expect(again).toMatchObject({ hit: 'fallback', scope: 'master', source: 'store' });
    expect(readFileSync(path.join(dirs.tree, 'node_modules/left-pad/index.js'), 'utf8')).toBe("module.exports = 'v2';\n");
  });

  it('replaces what the checkout has at a save path, without following a link there', async () => {
    const outside = await mkdtemp(path.join(work, 'outside-'));
    await writeFile(path.join(outside, 'keep'), 'untouched');
    const dirs = await checkout();
    // A checkout may commit node_modules as a link anywhere (to / even).
    await symlink(outside, path.join(dirs.tree, 'node_modules'));
    const restored = await restoreCache(a(), settings, target(dirs, 'master'));
    expect(restored).toMatchObject({ hit: 'exact', paths: ['node_modules', '~/.npm'], notes: [] });
    expect(lstatSync(path.join(dirs.tree, 'node_modules')).isDirectory()).toBe(true);
    expect(await readdir(outside)).toEqual(['keep']);
    expect(readFileSync(path.join(outside, 'keep'), 'utf8')).toBe('untouched');
  });

  it('skips a save path with a link on its way, saying so, and writes nothing through it', async () => {
    const outside = await mkdtemp(path.join(work, 'outside-'));
    const nested: CacheSettings = { key_paths: ['package-lock.json'], save_paths: ['vendor/bundle', '~/.gem/cache'] };
    const dirs = await checkout('nested');
    await mkdir(path.join(dirs.tree, 'vendor/bundle'), { recursive: true });
    await writeFile(path.join(dirs.tree, 'vendor/bundle/gem.rb'), 'gem');
    await mkdir(path.join(dirs.home, '.gem/cache'), { recursive: true });
    await writeFile(path.join(dirs.home, '.gem/cache/x.gem'), 'x');
    const first = await restoreCache(a(), nested, target(dirs, 'master'));
    expect((await saveCache(a(), nested, target(dirs, 'master'), first)).saved).toBe(true);

    const next = await checkout('nested');
    await symlink(outside, path.join(next.tree, 'vendor'));
    await symlink('/', path.join(next.home, '.gem'));
    const restored = await restoreCache(a(), nested, target(next, 'master'));
    expect(restored).toMatchObject({ hit: 'exact', paths: [] });
    expect(restored.notes).toEqual(['vendor/bundle: not restored, vendor is a symbolic link', '~/.gem/cache: not restored, .gem is a symbolic link']);
    expect(await readdir(outside)).toEqual([]);
    expect(existsSync('/cache/x.gem')).toBe(false);

    // Nor is anything saved through a link: a build cannot have the runner copy files from elsewhere.
    const other = await checkout('nested-2');
    await symlink(outside, path.join(other.tree, 'vendor'));
    const saved = await saveCache(a(), { ...nested, save_paths: ['vendor/bundle'] }, target(other, 'master'), { ...restored, key: 'k', hit: 'miss' });
    expect(saved).toEqual({ saved: false, bytes: 0, note: 'cache not saved: nothing to save (vendor/bundle: not saved, vendor is a symbolic link)' });
    const linked = await checkout('nested-3');
    await symlink(outside, path.join(linked.tree, 'node_modules'));
    const saved2 = await saveCache(a(), { ...settings, save_paths: ['node_modules'] }, target(linked, 'master'), { ...restored, key: 'k2', hit: 'miss' });
    expect(saved2.note).toBe('cache not saved: nothing to save (node_modules: not saved, it is a symbolic link)');
  });
});

describe('scopes', () => {
  const deps = () => runner('scopes');
  const lock = 'scoped-lock';

  it('reads its own branch, then the default branch, never another branch, and a pull request writes nothing', async () => {
    const repo = await newRepo();
    const content = async (dirs: { tree: string }) => readFileSync(path.join(dirs.tree, 'node_modules/left-pad/index.js'), 'utf8');
    // A pull request (no write scope) misses and saves nothing.
    const pr = await coldBuild(deps(), 'feature-a', lock, 'pr', null, repo);
    expect(pr.restored.hit).toBe('miss');
    expect(pr.saved).toEqual({ saved: false, bytes: 0, note: 'cache not saved: this build may not write cache entries (a pull request, or a trigger with its own env)' });
    expect(await entries(repo)).toEqual([]);

    // feature-a's push writes feature-a's entry; feature-b reads nothing of it, exact or fallback.
    const a = await coldBuild(deps(), 'feature-a', lock, 'from-a', 'feature-a', repo);
    expect(a.saved.saved).toBe(true);
    const b = await checkout(lock);
    expect(await restoreCache(deps(), settings, target(b, 'feature-b', 'feature-b', repo))).toMatchObject({ hit: 'miss', scope: null });
    expect(existsSync(path.join(b.tree, 'node_modules'))).toBe(false);

    // feature-a reads its own.
    const a2 = await checkout(lock);
    expect(await restoreCache(deps(), settings, target(a2, 'feature-a', 'feature-a', repo))).toMatchObject({ hit: 'exact', scope: 'feature-a' });
    expect(await content(a2)).toContain('from-a');

    // The default branch's entries are every branch's: feature-b falls back to master's.
    const m = await coldBuild(deps(), 'master', 'master-lock', 'from-master', 'master', repo);
    expect(m.saved.saved).toBe(true);
    const b2 = await checkout(lock);
    expect(await restoreCache(deps(), settings, target(b2, 'feature-b', 'feature-b', repo))).toMatchObject({ hit: 'fallback', scope: 'master' });
    expect(await content(b2)).toContain('from-master');

    // An exact entry on the default branch beats a fallback on the build's own branch.
    const a3 = await checkout('master-lock');
    expect(await restoreCache(deps(), settings, target(a3, 'feature-a', 'feature-a', repo))).toMatchObject({ hit: 'exact', scope: 'master' });
    // And the build's own branch's newest beats the default branch's for a fallback.
    const a4 = await checkout('yet-another-lock');
    expect(await restoreCache(deps(), settings, target(a4, 'feature-a', 'feature-a', repo))).toMatchObject({ hit: 'fallback', scope: 'feature-a' });
  });

  it('never reads another repository\'s entries', async () => {
    const dirs = await checkout(lock);
    expect(await restoreCache(deps(), settings, target(dirs, 'master', 'master', otherRepoId))).toMatchObject({ hit: 'miss', scope: null });
  });

  it('keeps the key to the checkout: a key file that is a link counts as the link, never what it points to', async () => {
    const outside = await mkdtemp(path.join(work, 'outside-'));
    await writeFile(path.join(outside, 'lock'), 'one');
    const dirs = await checkout();
    await rm(path.join(dirs.tree, 'package-lock.json'));
    await symlink(path.join(outside, 'lock'), path.join(dirs.tree, 'package-lock.json'));
    const before = await checkoutKey(settings, dirs.tree);
    await writeFile(path.join(outside, 'lock'), 'two');
    expect((await checkoutKey(settings, dirs.tree)).key).toBe(before.key);
    const missing = await checkout();
    await rm(path.join(missing.tree, 'package-lock.json'));
    expect((await checkoutKey(settings, missing.tree)).key).not.toBe(before.key);
  });
});

describe('limits', () => {
  it('refuses an entry over the entry limit, saying so', async () => {
    const deps = runner('limits', { limits: { maxEntryBytes: 4096, maxRepoBytes: 200 * MiB } });
    const dirs = await checkout('big-lock');
    const restored = await restoreCache(deps, settings, target(dirs, 'big'));
    await mkdir(path.join(dirs.tree, 'node_modules'), { recursive: true });
    await writeFile(path.join(dirs.tree, 'node_modules/blob'), Buffer.from(Array.from({ length: 64 * 1024 }, () => Math.floor(Math.random() * 256))));
    expect(await saveCache(deps, settings, target(dirs, 'big'), restored)).toEqual({ saved: false, bytes: 0, note: 'cache not saved: it is over the limit of 0.0 MiB an entry' });
    expect((await entries()).filter((e) => e.scope === 'big')).toEqual([]);
  });

  it('evicts the repository\'s least recently used entries, rows and blobs, past the repository limit', async () => {
    const lru = await newRepo();
    const saveOne = async (deps: CacheDeps, lock: string) => {
      const dirs = await checkout(lock);
      const t = target(dirs, 'master', 'master', lru);
      // A miss without a restore: a fallback's restore would count as a use of the entry it restored.
      const restored: Restored = { key: (await checkoutKey(settings, dirs.tree)).key, hit: 'miss', scope: null, source: null, paths: [], bytes: 0, linked: false, mounted: false, notes: [] };
      await mkdir(path.join(dirs.tree, 'node_modules'), { recursive: true });
      await writeFile(path.join(dirs.tree, 'node_modules/blob'), Buffer.from(Array.from({ length: 20 * 1024 }, () => Math.floor(Math.random() * 256))));
      const saved = await saveCache(deps, settings, t, restored);
      expect(saved.saved).toBe(true);
      return { restored, saved, dirs };
    };
    const deps = runner('lru', { limits: { maxEntryBytes: 50 * MiB, maxRepoBytes: 50 * 1024 } });
    const one = await saveOne(deps, 'lru-1');
    const two = await saveOne(deps, 'lru-2');
    // lru-1 is used again: lru-2 is now the least recently used.
    const again = await checkout('lru-1');
    expect(await restoreCache(deps, settings, target(again, 'master', 'master', lru))).toMatchObject({ hit: 'exact' });
    const [storeKey2] = (await entries(lru)).filter((e) => e.key === two.restored.key).map((e) => e.storeKey);
    const three = await saveOne(deps, 'lru-3');
    expect(three.saved.note).toMatch(/1 least recently used entry evicted/);
    expect((await entries(lru)).map((e) => e.key)).toEqual([one.restored.key, three.restored.key]);
    expect(existsSync(path.join(storeDir, storeKey2!))).toBe(false);
  });

  it('keeps the runner\'s local copies under its limit, least recently used first, and sweeps copies of entries that are gone', async () => {
    const deps = runner('local-limit', { local: { dir: path.join(work, 'local-small'), maxBytes: 30 * 1024 } });
    const repo = await newRepo();
    const copies = async () => (await readdir(path.join(work, 'local-small', 'entries'))).sort();
    const saveOne = async (lock: string) => {
      const dirs = await checkout(lock);
      const t = target(dirs, 'small', 'small', repo);
      const restored: Restored = { key: (await checkoutKey(settings, dirs.tree)).key, hit: 'miss', scope: null, source: null, paths: [], bytes: 0, linked: false, mounted: false, notes: [] };
      await mkdir(path.join(dirs.tree, 'node_modules'), { recursive: true });
      await writeFile(path.join(dirs.tree, 'node_modules/blob'), Buffer.alloc(12 * 1024, lock));
      expect((await saveCache(deps, settings, t, restored)).saved).toBe(true);
    };
    await saveOne('small-1');
    await saveOne('small-2');
    expect(await copies()).toHaveLength(2);
    await saveOne('small-3');
    const kept = await copies();
    expect(kept).toHaveLength(2);
    // The oldest went; its entry is still in the store, so a restore downloads it again.
    const dirs = await checkout('small-1');
    expect(await restoreCache(deps, settings, target(dirs, 'small', 'small', repo))).toMatchObject({ hit: 'exact', source: 'store' });

    await db.pool.query(`DELETE FROM cache_entries WHERE scope = 'small'`);
    expect(await sweepLocalCache(deps)).toBe(2);
    expect(await copies()).toEqual([]);
  });
});

describe('a hostile entry in the store', () => {
  async function plant(scope: string, lock: string, blocks: Buffer[]): Promise<{ dirs: { tree: string; home: string }; storeKey: string }> {
    const dirs = await checkout(lock);
    const { key } = await checkoutKey(settings, dirs.tree);
    const file = path.join(work, `${scope}.tgz`);
    await writeFile(file, gzipSync(Buffer.concat([...blocks, Buffer.alloc(1024)])));
    const storeKey = `caches/${repoId}/${scope}.tgz`;
    await store.putFile(storeKey, file);
    await db.pool.query(`INSERT INTO cache_entries (repo_id, scope, key, family, size, store_key) VALUES ($1, $2, $3, 'f', 1, $4)`, [repoId, scope, key, storeKey]);
    return { dirs, storeKey };
  }
  const header = (p: string, type: string, linkpath?: string, body = '') => {
    const block = Buffer.alloc(512);
    new Header({ path: p, type: type as Header['type'], linkpath, size: body.length, mode: 0o644, mtime: new Date(0) }).encode(block, 0);
    const data = Buffer.from(body);
    return body ? [block, data, Buffer.alloc((512 - (data.length % 512)) % 512)] : [block];
  };

  it.each([
    ['a symbolic link to /etc, then a file written through it', (name: string) => [...header('tree/node_modules/', 'Directory'), ...header('tree/node_modules/etc', 'SymbolicLink', '/etc'), ...header(`tree/node_modules/etc/${name}`, 'File', undefined, 'pwned')]],
    ['an absolute path', (name: string) => [...header(`/tmp/${name}`, 'File', undefined, 'pwned')]],
    ['a path with ..', (name: string) => [...header(`tree/../../../../../../tmp/${name}`, 'File', undefined, 'pwned')]],
    ['a hard link to /etc/passwd', (_name: string) => [...header('tree/node_modules/', 'Directory'), ...header('tree/node_modules/passwd', 'Link', '/etc/passwd')]],
    [
      'a chain of links out',
      (name: string) => [...header('tree/node_modules/a/b/x', 'SymbolicLink', 'y/..'), ...header('tree/node_modules/a/b/y', 'SymbolicLink', '../../../..'), ...header(`tree/node_modules/a/b/x/${name}`, 'File', undefined, 'pwned')],
    ],
  ])('%s: refused whole, nothing written anywhere, the entry forgotten', async (what, build) => {
    const name = `sluice-hostile-${Math.random().toString(36).slice(2)}`;
    const scope = `hostile-${what.replace(/\W+/g, '-')}`;
    const { dirs, storeKey } = await plant(scope, `hostile-${scope}`, build(name));
    try {
      const restored = await restoreCache(runner('hostile'), settings, target(dirs, scope));
      expect(restored).toMatchObject({ hit: 'miss', scope: null, source: null, paths: [] });
      expect(restored.notes).toHaveLength(1);
      expect(restored.notes[0]).toMatch(new RegExp(`^cache entry of ${scope} refused, nothing restored: `));
      expect(existsSync(`/etc/${name}`)).toBe(false);
      expect(existsSync(`/tmp/${name}`)).toBe(false);
      expect(existsSync(path.join(dirs.tree, 'node_modules'))).toBe(false);
      expect((await entries()).filter((e) => e.scope === scope)).toEqual([]);
      expect(existsSync(path.join(storeDir, storeKey))).toBe(false);
      expect(await readdir(path.join(work, 'local-hostile', 'entries'))).toEqual([]);
    } finally {
      await rm(`/etc/${name}`, { force: true });
      await rm(`/tmp/${name}`, { force: true });
    }
  });

  it('treats an entry whose blob vanished as a miss, and forgets it', async () => {
    const { dirs, storeKey } = await plant('vanished', 'vanished-lock', header('tree/node_modules/x', 'File', undefined, 'x').flat());
    await store.delete(storeKey);
    const restored = await restoreCache(runner('vanished'), settings, target(dirs, 'vanished'));
    expect(restored).toMatchObject({ hit: 'miss', notes: [`cache entry ${storeKey} is no longer in the store; forgotten`] });
    expect((await entries()).filter((e) => e.scope === 'vanished')).toEqual([]);
  });
});

// Tests run as root here, like a runner, with the build user .ci/run and the Dockerfile make.
const BUILD_USER = 'sluice-build';
const buildUser = (() => {
  try {
    const id = (flag: string) => Number(execFileSync('id', [flag, BUILD_USER], { encoding: 'utf8', stdio: 'pipe' }).trim());
    return process.getuid?.() === 0 ? { uid: id('-u'), gid: id('-g') } : null;
  } catch {
    return null;
  }
})();
if (!buildUser) console.warn(`cache-restore.test.ts: the build user's tests skipped: they need root and the user ${BUILD_USER} (.ci/run creates it)`);

(buildUser ? describe : describe.skip)('as the build user (a root runner with SLUICE_BUILD_USER)', () => {
  const owner = buildUser!;
  /** A checkout that is the build user's, under a directory it may enter, as the runner's workspace is. */
  async function ownedCheckout(lock: string): Promise<{ tree: string; home: string }> {
    const dirs = await checkout(lock);
    await chmod(path.dirname(dirs.tree), 0o755);
    await chmod(work, 0o755);
    execFileSync('chown', ['-R', `${owner.uid}:${owner.gid}`, path.dirname(dirs.tree)]);
    return dirs;
  }

  it('restores files the build user owns, from a local copy it cannot reach otherwise', async () => {
    const deps = runner('owned');
    const dirs = await ownedCheckout('owned-lock');
    const t = { ...target(dirs, 'owned'), owner };
    const restored = await restoreCache(deps, settings, t);
    await install(dirs, 'owned');
    execFileSync('chown', ['-R', `${owner.uid}:${owner.gid}`, path.dirname(dirs.tree)]);
    expect(await saveCache(deps, settings, t, restored)).toMatchObject({ saved: true });

    for (const d of [runner('owned'), runner('owned-other')]) {
      const next = await ownedCheckout('owned-lock');
      const again = await restoreCache(d, settings, { ...target(next, 'owned'), owner });
      expect(again).toMatchObject({ hit: 'exact', paths: ['node_modules', '~/.npm'], notes: [] });
      for (const p of ['node_modules', 'node_modules/left-pad/index.js', 'node_modules/.bin/pad']) {
        const info = lstatSync(path.join(next.tree, p));
        expect([p, info.uid, info.gid]).toEqual([p, owner.uid, owner.gid]);
      }
      expect(lstatSync(path.join(next.home, '.npm/_cacache/index')).uid).toBe(owner.uid);
    }
    // The local directory is the runner's: the build user cannot list it.
    expect(statSync(deps.local.dir).mode & 0o777).toBe(0o700);
    expect(() => execFileSync('ls', [deps.local.dir], { uid: owner.uid, gid: owner.gid, stdio: 'pipe' })).toThrow(/Permission denied/);
  });

  describe('linked (`link: true`)', () => {
    const linking: CacheSettings = { ...settings, link: true };
    const as = (argv: string[]) => execFileSync(argv[0]!, argv.slice(1), { uid: owner.uid, gid: owner.gid, stdio: 'pipe', encoding: 'utf8' });

    it('links the runner’s copy: the build owns the directories, cannot change a file in place, and the next build reads the original', async () => {
      const deps = runner('linked');
      const repo = await newRepo();
      const first = await ownedCheckout('link-lock');
      const t = { ...target(first, 'linked', 'linked', repo), owner };
      const restored = await restoreCache(deps, linking, t);
      await install(first, 'original');
      execFileSync('chown', ['-R', `${owner.uid}:${owner.gid}`, path.dirname(first.tree)]);
      expect(await saveCache(deps, linking, t, restored)).toMatchObject({ saved: true });

      const dirs = await ownedCheckout('link-lock');
      const got = await restoreCache(deps, linking, { ...t, ...dirs });
      expect(got).toMatchObject({ hit: 'exact', source: 'local', linked: true, paths: ['node_modules', '~/.npm'], notes: [] });
      const file = path.join(dirs.tree, 'node_modules/left-pad/index.js');
      // The same file as the runner's copy, which is root's and writable by nobody else (and the next restore's spare).
      await sparesSettled();
      expect(lstatSync(file).nlink).toBe(3);
      expect([lstatSync(file).uid, lstatSync(file).mode & 0o022]).toEqual([0, 0]);
      expect(lstatSync(path.join(dirs.tree, 'node_modules/left-pad')).uid).toBe(owner.uid);
      expect(readlinkSync(path.join(dirs.tree, 'node_modules/.bin/pad'))).toBe('../left-pad/bin/pad');
      expect(as(['sh', '-c', `${path.join(dirs.tree, 'node_modules/.bin/pad')}`])).toBe('pad\n');

      // A step that gives the build its tree again (markUsed, before tests and the post_build hook) leaves shared files alone.
      await markUsed(dirs.tree, owner);
      expect(lstatSync(file).uid).toBe(0);

      // The build tries to change what it got: in place is refused, replacing and adding are its own.
      expect(() => as(['sh', '-c', `echo hacked > ${file}`])).toThrow(/Permission denied/);
      expect(() => as(['chmod', '666', file])).toThrow(/Operation not permitted/);
      expect(() => as(['touch', file])).toThrow(/Permission denied/);
      as(['sh', '-c', `rm ${file} && echo replaced > ${file} && echo new > ${path.join(dirs.tree, 'node_modules/left-pad/extra.js')}`]);
      expect(readFileSync(file, 'utf8')).toBe('replaced\n');

      // Another build reads the original.
      const next = await ownedCheckout('link-lock');
      expect(await restoreCache(deps, linking, { ...t, ...next })).toMatchObject({ hit: 'exact', linked: true });
      expect(readFileSync(path.join(next.tree, 'node_modules/left-pad/index.js'), 'utf8')).toBe("module.exports = 'original';\n");
      expect(existsSync(path.join(next.tree, 'node_modules/left-pad/extra.js'))).toBe(false);

      // A build that copies afterwards gets files of its own, writable, as before.
      const copied = await ownedCheckout('link-lock');
      expect(await restoreCache(deps, settings, { ...t, ...copied })).toMatchObject({ hit: 'exact', linked: false });
      const own = path.join(copied.tree, 'node_modules/left-pad/index.js');
      expect([lstatSync(own).uid, lstatSync(own).nlink]).toEqual([owner.uid, 1]);
      as(['sh', '-c', `echo mine > ${own}`]);
    });

    it('keeps a spare linked for the next restore, which takes it whole; the spare is the copy’s files, never the build’s to change', async () => {
      const deps = runner('spare');
      const repo = await newRepo();
      const first = await ownedCheckout('spare-lock');
      const t = { ...target(first, 'spare', 'spare', repo), owner };
      const restored = await restoreCache(deps, linking, t);
      await install(first, 'original');
      execFileSync('chown', ['-R', `${owner.uid}:${owner.gid}`, path.dirname(first.tree)]);
      expect(await saveCache(deps, linking, t, restored)).toMatchObject({ saved: true });
      // The first linked restore links, and leaves a spare of each path behind it.
      const a = await ownedCheckout('spare-lock');
      expect(await restoreCache(deps, linking, { ...t, ...a })).toMatchObject({ hit: 'exact', linked: true, notes: [] });
      await sparesSettled();
      const entries = path.join(deps.local.dir, 'entries');
      const [entry] = await readdir(entries);
      const spares = path.join(entries, entry!, '.spares');
      const before = new Map((await readdir(spares)).map((n) => [statSync(path.join(spares, n)).ino, n]));
      expect(before.size).toBe(2); // node_modules, ~/.npm
      for (const n of before.values()) expect(n.endsWith(`-${owner.uid}`)).toBe(true);
      // The next takes them: its trees are those very directories (moved, not linked again).
      const b = await ownedCheckout('spare-lock');
      expect(await restoreCache(deps, linking, { ...t, ...b })).toMatchObject({ hit: 'exact', linked: true, paths: ['node_modules', '~/.npm'], notes: [] });
      expect(before.has(statSync(path.join(b.tree, 'node_modules')).ino)).toBe(true);
      expect(before.has(statSync(path.join(b.home, '.npm')).ino)).toBe(true);
      const file = path.join(b.tree, 'node_modules/left-pad/index.js');
      expect([lstatSync(file).uid, lstatSync(path.join(b.tree, 'node_modules/left-pad')).uid]).toEqual([0, owner.uid]);
      expect(() => as(['sh', '-c', `echo hacked > ${file}`])).toThrow(/Permission denied/);
      // And a new spare follows; the build after still reads the original.
      await sparesSettled();
      expect((await readdir(spares)).length).toBe(2);
      const c = await ownedCheckout('spare-lock');
      await restoreCache(deps, linking, { ...t, ...c });
      expect(readFileSync(path.join(c.tree, 'node_modules/left-pad/index.js'), 'utf8')).toBe("module.exports = 'original';\n");
      // A restore that copies makes the copy the build user's; the next linked one seals it again and starts its spares over.
      const d = await ownedCheckout('spare-lock');
      await sparesSettled();
      expect(await restoreCache(deps, settings, { ...t, ...d })).toMatchObject({ linked: false });
      const e = await ownedCheckout('spare-lock');
      expect(await restoreCache(deps, linking, { ...t, ...e })).toMatchObject({ linked: true, notes: [] });
      expect(lstatSync(path.join(e.tree, 'node_modules/left-pad/index.js')).uid).toBe(0);
      expect(lstatSync(path.join(e.tree, 'node_modules/left-pad')).uid).toBe(owner.uid);
      await sparesSettled();
    });

    it('copies, saying so, where builds do not run as a build user', async () => {
      const deps = runner('linked-trusted');
      const repo = await newRepo();
      const first = await checkout('trusted-lock');
      const t = target(first, 'trusted', 'trusted', repo);
      const restored = await restoreCache(deps, linking, t);
      await install(first);
      expect(await saveCache(deps, linking, t, restored)).toMatchObject({ saved: true });
      const dirs = await checkout('trusted-lock');
      const got = await restoreCache(deps, linking, { ...t, ...dirs });
      expect(got).toMatchObject({ hit: 'exact', linked: false, notes: ['cache copied, not linked: linking needs builds that run as a build user'] });
      expect(lstatSync(path.join(dirs.tree, 'node_modules/left-pad/index.js')).nlink).toBe(1);
    });
  });

  describe('mounted (an overlay over the runner’s copy, issue 49)', () => {
    const as = (argv: string[]) => execFileSync(argv[0]!, argv.slice(1), { uid: owner.uid, gid: owner.gid, stdio: 'pipe', encoding: 'utf8' });
    const overlaysAt = () =>
      readFileSync('/proc/self/mountinfo', 'utf8').split('\n').filter((l) => l.includes(' - overlay ')).map((l) => l.split(' ')[4]!);
    /** A saved entry of `lock` on runner `deps`, and a new checkout of it with a place for layers. */
    async function savedThenFresh(deps: CacheDeps, lock: string, repo: number): Promise<{ t: CacheTarget; layers: string }> {
      const first = await ownedCheckout(lock);
      const t0 = { ...target(first, 'mounted', 'mounted', repo), owner };
      const restored = await restoreCache(deps, settings, t0);
      await install(first);
      execFileSync('chown', ['-R', `${owner.uid}:${owner.gid}`, path.dirname(first.tree)]);
      expect(await saveCache(deps, settings, t0, restored)).toMatchObject({ saved: true });
      const dirs = await ownedCheckout(lock);
      const layers = `${dirs.tree}.layers`;
      return { t: { ...target(dirs, 'mounted', 'mounted', repo), owner, layers }, layers };
    }

    it('mounts each directory, writable as a copy, while the runner’s copy stays as it was; the tree’s removal detaches it', async () => {
      const deps = runner('mounted');
      const { t, layers } = await savedThenFresh(deps, 'mounted-lock', await newRepo());
      const got = await restoreCache(deps, settings, t);
      expect(got).toMatchObject({ hit: 'exact', source: 'local', mounted: true, linked: false, paths: ['node_modules', '~/.npm'], notes: [] });
      expect(overlaysAt()).toEqual(expect.arrayContaining([t.tree, t.home]));
      expect(readFileSync(path.join(t.tree, 'package-lock.json'), 'utf8')).toBe('mounted-lock');
      // The build user writes, edits in place and deletes as in a copy of its own.
      as(['sh', '-c', `echo changed > ${t.tree}/node_modules/left-pad/index.js && rm -r ${t.tree}/node_modules/.bin && touch ${t.tree}/node_modules/new && rm -rf ${t.home}/.npm`]);
      expect(readFileSync(path.join(t.tree, 'node_modules/left-pad/index.js'), 'utf8')).toBe('changed\n');
      // The next build gets the entry as it was saved.
      const next = await ownedCheckout('mounted-lock');
      const again = await restoreCache(deps, settings, { ...t, ...next, layers: `${next.tree}.layers` });
      expect(again).toMatchObject({ hit: 'exact', mounted: true });
      expect(readFileSync(path.join(next.tree, 'node_modules/left-pad/index.js'), 'utf8')).toBe("module.exports = 'v1';\n");
      expect(readlinkSync(path.join(next.tree, 'node_modules/.bin/pad'))).toBe('../left-pad/bin/pad');
      expect(existsSync(path.join(next.tree, 'node_modules/new'))).toBe(false);
      // Giving the tree to the build user again (a post_build hook's run) copies nothing up.
      await markUsed(next.tree, owner);
      expect(await readdir(path.join(`${next.tree}.layers`, 'tree', 'upper'))).toEqual([]);
      // The layers are the runner's: the build user cannot reach them but through the mount.
      expect(statSync(layers).mode & 0o777).toBe(0o700);
      expect(() => as(['ls', layers])).toThrow(/Permission denied/);
      // A copy under a live mount is never evicted, however full the local directory.
      expect(await sweepLocalCache({ ...deps, local: { ...deps.local, maxBytes: 0 } })).toBe(0);
      await removeTree(t.tree);
      await removeTree(next.tree);
      expect(overlaysAt().filter((at) => at.startsWith(path.dirname(t.tree)) || at.startsWith(path.dirname(next.tree)))).toEqual([]);
      expect(existsSync(layers)).toBe(false);
    });

    it('a save path the checkout has too is replaced by a copy, never merged, nor written through a link the repository put there', async () => {
      const deps = runner('mounted');
      const { t } = await savedThenFresh(deps, 'mounted-link-lock', await newRepo());
      // A repository whose node_modules is a link out of the tree (the runner's libraries, say).
      const elsewhere = await mkdtemp(path.join(os.tmpdir(), 'sluice-elsewhere-'));
      await writeFile(path.join(elsewhere, 'kept'), 'mine');
      await symlink(elsewhere, path.join(t.tree, 'node_modules'));
      const got = await restoreCache(deps, settings, t);
      expect(got).toMatchObject({ hit: 'exact', mounted: true, paths: ['~/.npm', 'node_modules'] });
      expect(lstatSync(path.join(t.tree, 'node_modules')).isDirectory()).toBe(true);
      expect(readFileSync(path.join(t.tree, 'node_modules/left-pad/index.js'), 'utf8')).toBe("module.exports = 'v1';\n");
      expect(overlaysAt()).toContain(t.tree);
      expect(overlaysAt().some((at) => at.startsWith(elsewhere))).toBe(false);
      expect(await readdir(elsewhere)).toEqual(['kept']);
      await removeTree(t.tree);
      await rm(elsewhere, { recursive: true, force: true });
    });

    it('mounts a save path that is a file as well', async () => {
      const deps = runner('mounted');
      const repo = await newRepo();
      const odd: CacheSettings = { key_paths: ['package-lock.json'], save_paths: ['node_modules', '~/.npmrc'] };
      const first = await ownedCheckout('odd-lock');
      const t0 = { ...target(first, 'mounted', 'mounted', repo), owner };
      const restored = await restoreCache(deps, odd, t0);
      await install(first);
      await writeFile(path.join(first.home, '.npmrc'), 'fund=false\n');
      execFileSync('chown', ['-R', `${owner.uid}:${owner.gid}`, path.dirname(first.tree)]);
      expect(await saveCache(deps, odd, t0, restored)).toMatchObject({ saved: true });
      const dirs = await ownedCheckout('odd-lock');
      const got = await restoreCache(deps, odd, { ...target(dirs, 'mounted', 'mounted', repo), owner, layers: `${dirs.tree}.layers` });
      expect(got).toMatchObject({ hit: 'exact', mounted: true, paths: ['node_modules', '~/.npmrc'] });
      expect(overlaysAt()).toEqual(expect.arrayContaining([dirs.tree, dirs.home]));
      expect(readFileSync(path.join(dirs.home, '.npmrc'), 'utf8')).toBe('fund=false\n');
      await removeTree(dirs.tree);
    });
  });

  it('reads the build\'s files as the build user: a file it cannot read is not saved by the root runner', async () => {
    const deps = runner('owned');
    const dirs = await ownedCheckout('secret-lock');
    const t = { ...target(dirs, 'owned', 'owned', await newRepo()), owner };
    const restored = await restoreCache(deps, settings, t);
    await mkdir(path.join(dirs.tree, 'node_modules'));
    await chown(path.join(dirs.tree, 'node_modules'), owner.uid, owner.gid);
    await writeFile(path.join(dirs.tree, 'node_modules/root-only'), 'secret', { mode: 0o600 });
    const saved = await saveCache(deps, settings, t, restored);
    expect(saved.saved).toBe(false);
    expect(saved.note).toMatch(/Permission denied/);
  });
});
