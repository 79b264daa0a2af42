/**
 * The dependency cache (issue 21): restored before package setup, saved after a build whose key
 * missed. GitHub Actions' rules, which stop cache poisoning:
 * - a build reads entries of its `readScopes` only (its branch, then the default branch): first
 *   one with its key, else the newest of the same family (fallback); never another branch's;
 * - only a trusted build writes (`writeScope`), into its own branch's scope.
 *
 * The parts: key.ts (what names an entry), archive.ts (the store's file, unpacked safely),
 * local.ts (this runner's copies), copy.ts (between a build and an entry directory, as the
 * build user), db/cacheEntries.ts (the rows), the blob store (src/store).
 */
import { lchown, mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { DEFAULT_CACHE_DIR, DEFAULT_CACHE_LIMITS, DEFAULT_CACHE_LOCAL_DIR, DEFAULT_CACHE_LOCAL_MAX_BYTES, type Config } from '../../config';
import type { CacheEntryRow } from '../../db/cacheEntries';
import { repoCachePrefix } from '../../core/storeKeys';
import { countCacheRestore, countCacheSave } from '../../metrics/counts';
import type { BuildRecords } from '../records';
import { openStore, type BlobStore } from '../../store';
import { checkEntry, EntryTooBig, packEntry, unpackEntry } from './archive';
import { chownEntry, copyIn, copyOut, tidyEntry, type Owner } from './copy';
import { cacheFamily, checkoutKey, parseSavePaths } from './key';
import { canLink, linkIn, sealCopy } from './link';
import { canOverlay, overlayIn } from './overlay';
import { evictLocal, findLocal, placeLocal, setLocalOwner, workPlace, type LocalCopy } from './local';

export interface CacheSettings {
  key_paths: string[];
  save_paths: string[];
  /** Restore by hard links where the runner can (link.ts); else copied. */
  link?: boolean;
}

export interface CacheDeps {
  records: BuildRecords;
  store: BlobStore;
  local: { dir: string; maxBytes: number };
  limits: { maxEntryBytes: number; maxRepoBytes: number };
}

export interface CacheTarget {
  repoId: number;
  /** Branch names to read entries of, in order: the build's own branch, then the repository's default branch. */
  readScopes: string[];
  /** Where a save goes; null: this build may not write (a pull request, a trigger with its own env). */
  writeScope: string | null;
  /** The checkout, absolute. */
  tree: string;
  /** The build's home (`~`), absolute. */
  home: string;
  /** When set, restored files are this user's (tests run as it), and the build's files are read as it. */
  owner?: Owner;
  /** Where the upper layers of a restore by overlay go (overlay.ts), removed with the tree; absent: none is mounted. */
  layers?: string;
  /**
   * What the entry's files were made for, in its key: the runner's OS, or the image the build runs
   * in (`linux image docker.io/library/node:22`), so that an install made with one toolchain is
   * never restored into another. Default: the runner's OS.
   */
  platform?: string;
}

export interface Restored {
  /** The key this checkout computes ('' when the settings name a path that is not allowed). */
  key: string;
  hit: 'exact' | 'fallback' | 'miss';
  scope: string | null;
  source: 'local' | 'store' | null;
  /** The save paths restored, as the settings wrote them. */
  paths: string[];
  /** Bytes of the entry restored, unpacked. */
  bytes: number;
  /** How: copied, linked from the runner's copy (link.ts), or mounted over it (overlay.ts). */
  linked: boolean;
  mounted: boolean;
  /** Lines for the build page. */
  notes: string[];
}

/** What the runner's configuration says, with the defaults of config.ts; `store` is opened once by the caller when it has one. */
export function cacheDeps(config: Pick<Config, 'store' | 'cacheLocal' | 'cacheLimits'>, records: BuildRecords, store?: BlobStore): CacheDeps {
  return {
    records,
    store: store ?? openStore(config.store ?? { kind: 'dir', dir: DEFAULT_CACHE_DIR }),
    local: config.cacheLocal ?? { dir: DEFAULT_CACHE_LOCAL_DIR, maxBytes: DEFAULT_CACHE_LOCAL_MAX_BYTES },
    limits: config.cacheLimits ?? DEFAULT_CACHE_LIMITS,
  };
}


const MiB = 1024 * 1024;
const mib = (n: number) => `${(n / MiB).toFixed(n < 10 * MiB ? 1 : 0)} MiB`;
const message = (err: unknown) => (err instanceof Error ? err.message : String(err));

/** Restores the entry a build's cache settings name, and counts the hit or miss and its bytes. */
export async function restoreCache(deps: CacheDeps, settings: CacheSettings, target: CacheTarget, signal?: AbortSignal): Promise<Restored> {
  const restored = await restore(deps, settings, target, signal);
  countCacheRestore(restored);
  return restored;
}

async function restore(deps: CacheDeps, settings: CacheSettings, target: CacheTarget, signal?: AbortSignal): Promise<Restored> {
  const miss = (key: string, notes: string[]): Restored => ({ key, hit: 'miss', scope: null, source: null, paths: [], bytes: 0, linked: false, mounted: false, notes });
  let key = '';
  const notes: string[] = [];
  try {
    const computed = await checkoutKey(settings, target.tree, target.platform);
    key = computed.key;
    const found =
      (await deps.records.findExactEntry(target.repoId, target.readScopes, key)) ??
      (await deps.records.findNewestEntry(target.repoId, target.readScopes, computed.family));
    if (!found) return miss(key, notes);
    const local = await findLocal(deps.local, found.storeKey);
    const copy = local ?? (await download(deps, found, target.owner, notes, signal));
    if (!copy) return miss(key, notes);
    // Mounted where the runner can: as fast as a link, and writable as a copy.
    const mounted = target.layers !== undefined && (await canOverlay(target.owner, deps.local.dir));
    const linked = !mounted && settings.link === true && canLink(target.owner);
    if (settings.link && !linked && !mounted) notes.push('cache copied, not linked: linking needs builds that run as a build user');
    let restored: Awaited<ReturnType<typeof copyIn>>['restored'];
    if (canLink(target.owner) && linked) {
      // The copy's files become root's and unwritable by builds, once; then linked.
      if (copy.uid !== 0) {
        await sealCopy(copy.dir, signal);
        await setLocalOwner(copy, found.storeKey, 0);
      }
      const work = await workPlace(deps.local, target.owner);
      try {
        const done = await linkIn(copy.dir, work, target, computed.savePaths, target.owner, signal);
        restored = done.restored;
        notes.push(...done.notes);
      } finally {
        await rm(work, { recursive: true, force: true });
      }
    } else {
      // The build user's own files, as a copy gives it (a mount too: its writes go to the build's upper layer).
      if (target.owner && copy.uid !== target.owner.uid) {
        await chownEntry(copy.dir, target.owner, signal);
        await setLocalOwner(copy, found.storeKey, target.owner.uid);
      }
      const overlaid = mounted && target.owner && target.layers ? await overlayIn(copy.dir, target.layers, target, computed.savePaths, target.owner, signal) : { restored: [], rest: computed.savePaths };
      // What was not mounted (a save path the checkout has too, a path an overlay cannot hold) is copied.
      const done = await copyIn(copy.dir, target, overlaid.rest, target.owner, signal);
      restored = [...overlaid.restored, ...done.restored];
      notes.push(...done.notes);
    }
    await deps.records.touchEntry(found.id);
    await evictLocal(deps.local);
    return {
      key,
      hit: found.key === key ? 'exact' : 'fallback',
      scope: found.scope,
      source: local ? 'local' : 'store',
      paths: restored.map((p) => p.written),
      bytes: copy.bytes,
      linked,
      mounted,
      notes,
    };
  } catch (err) {
    if (signal?.aborted) throw err;
    return miss(key, [...notes, `cache not restored: ${message(err)}`]);
  }
}

/**
 * The entry's blob, checked and unpacked into this runner's local copy; null (with a note) when
 * it vanished or is refused. A refused entry is deleted, so the next trusted build replaces it.
 */
async function download(deps: CacheDeps, entry: CacheEntryRow, owner: Owner | undefined, notes: string[], signal?: AbortSignal): Promise<LocalCopy | null> {
  const work = await workPlace(deps.local);
  try {
    const archive = path.join(work, 'entry.tgz');
    if (!(await deps.store.getFile(entry.storeKey, archive))) {
      notes.push(`cache entry ${entry.storeKey} is no longer in the store; forgotten`);
      await deps.records.deleteEntry(entry.id);
      return null;
    }
    signal?.throwIfAborted();
    const verdict = await checkEntry(archive, deps.local.maxBytes);
    if (!verdict.ok) {
      notes.push(`cache entry of ${entry.scope} refused, nothing restored: ${verdict.why}`);
      await forget(deps, entry);
      return null;
    }
    const unpacked = path.join(work, 'entry');
    await mkdir(unpacked, { mode: 0o700 });
    await unpackEntry(archive, unpacked, verdict.links);
    await rm(archive, { force: true });
    await tidyEntry(unpacked, signal);
    if (owner) await chownEntry(unpacked, owner, signal);
    return await placeLocal(deps.local, entry.storeKey, unpacked, verdict.unpackedBytes, owner?.uid ?? null);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/** Deletes an entry's row, then its blob. */
async function forget(deps: CacheDeps, entry: CacheEntryRow): Promise<void> {
  const storeKey = await deps.records.deleteEntry(entry.id);
  if (storeKey) await deps.store.delete(storeKey);
}

/** Saves unless this build may not write (writeScope null) or `restored.hit === 'exact'`. Never throws for a cache problem: returns saved=false and why. */
export async function saveCache(...args: Parameters<typeof save>): ReturnType<typeof save> {
  const saved = await save(...args);
  countCacheSave(saved);
  return saved;
}

async function save(
  deps: CacheDeps,
  settings: CacheSettings,
  target: CacheTarget,
  restored: Restored,
  signal?: AbortSignal,
): Promise<{ saved: boolean; bytes: number; note: string }> {
  const no = (note: string) => ({ saved: false, bytes: 0, note });
  const scope = target.writeScope;
  if (scope === null) return no('cache not saved: this build may not write cache entries (a pull request, or a trigger with its own env)');
  if (restored.hit === 'exact') return no('cache not saved: the entry of this key was restored');
  if (!restored.key) return no('cache not saved: its settings name a path that is not allowed');
  let work: string | null = null;
  try {
    if (await deps.records.findExactEntry(target.repoId, [scope], restored.key)) return no(`cache not saved: ${scope} has an entry of this key already`);
    const savePaths = parseSavePaths(settings.save_paths);
    work = await workPlace(deps.local);
    const entryDir = path.join(work, 'entry');
    await mkdir(entryDir, { mode: 0o700 });
    // The build user copies its files in (copy.ts): the entry directory is its, nothing above it.
    if (target.owner) await lchown(entryDir, target.owner.uid, target.owner.gid);
    const { copied, notes } = await copyOut(entryDir, target, savePaths, target.owner, signal);
    const why = notes.length > 0 ? ` (${notes.join('; ')})` : '';
    if (copied.length === 0) return no(`cache not saved: nothing to save${why}`);
    await tidyEntry(entryDir, signal);

    const archive = path.join(work, 'entry.tgz');
    const roots = [...new Set(copied.map((p) => p.root))];
    const bytes = await packEntry(entryDir, roots, archive, deps.limits.maxEntryBytes, signal);
    const verdict = await checkEntry(archive, Number.MAX_SAFE_INTEGER);
    if (!verdict.ok) return no(`cache not saved: ${verdict.why}${why}`);

    const storeKey = `${repoCachePrefix(target.repoId)}/${randomBytes(12).toString('hex')}.tgz`;
    await deps.store.putFile(storeKey, archive);
    const family = cacheFamily({ platform: target.platform ?? process.platform, arch: process.arch, savePaths });
    const id = await deps.records.insertEntry({ repoId: target.repoId, scope, key: restored.key, family, size: bytes, storeKey });
    if (id === null) {
      await deps.store.delete(storeKey);
      return no(`cache not saved: another build saved an entry of this key in ${scope} meanwhile`);
    }
    const evicted = await deps.records.evictEntries(target.repoId, deps.limits.maxRepoBytes, id);
    for (const key of evicted) await deps.store.delete(key).catch(() => undefined);

    await rm(archive, { force: true });
    await placeLocal(deps.local, storeKey, entryDir, verdict.unpackedBytes, target.owner?.uid ?? null);
    await evictLocal(deps.local);
    const gone = evicted.length > 0 ? `; ${evicted.length} least recently used ${evicted.length === 1 ? 'entry' : 'entries'} evicted` : '';
    return { saved: true, bytes, note: `cache saved in ${scope}: ${copied.map((p) => p.written).join(', ')}, ${mib(bytes)}${gone}${why}` };
  } catch (err) {
    if (err instanceof EntryTooBig) return no(`cache not saved: it is over the limit of ${mib(deps.limits.maxEntryBytes)} an entry`);
    if (signal?.aborted) return no('cache not saved: the build was stopped');
    return no(`cache not saved: ${message(err)}`);
  } finally {
    if (work) await rm(work, { recursive: true, force: true }).catch(() => undefined);
  }
}

/** Deletes local copies no entry names any more, and the least recently used over the limit; runners call it from time to time. */
export async function sweepLocalCache(deps: Pick<CacheDeps, 'records' | 'local'>): Promise<number> {
  return evictLocal(deps.local, { isLive: (keys) => deps.records.liveStoreKeys(keys) });
}
