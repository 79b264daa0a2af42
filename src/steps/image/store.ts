/**
 * A runner's images, unpacked, by digest: `<dir>/entries/<hex>/rootfs` with `image.json` beside
 * it (written last: an entry without one is half made), whose modification time is the entry's
 * last use. Builds that run an image hold a lease on it; over `maxBytes`, the least recently
 * used entries that nobody leases go (to trash.ts, deleted at low priority).
 *
 * Several builds of one runner, and several runner processes on one machine, share the store:
 * an image is pulled once (a pull lock per digest; the others wait for it), and an entry is
 * never deleted under a build (leasing and evicting take the store's lock, and a lease is a file
 * naming its process, so a runner that died holds nothing).
 *
 * The build user must reach an image's root filesystem to run in it (bubblewrap binds it as
 * that user), so the way to it is 0711: passable, not listable; each rootfs is 0755, read-only
 * to builds, which see only their own through the sandbox.
 */
import { chmod, mkdir, mkdtemp, readdir, readFile, rename, rm, stat, unlink, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { discard, emptyTrash } from '../trash';
import type { ImageConfig } from './pull';
import { evictLayers } from './layers';

export interface ImageStoreSettings {
  dir: string;
  maxBytes: number;
}

/** An entry's `image.json`. */
export interface ImageMeta {
  /** The digest builds name it by (a manifest's or an index's). */
  digest: string;
  /** The manifest unpacked (an index's entry for this runner's platform). */
  manifestDigest: string;
  /** The reference it was first pulled as, for people. */
  reference: string;
  config: ImageConfig;
  /** The unpacked size of its layers, counted against the store's limit. */
  bytes: number;
  layers: number;
  files: number;
  pulledAt: string;
}

export interface StoredImage {
  /** The entry's directory: `rootfs/` and the files beside it. */
  dir: string;
  rootfs: string;
  meta: ImageMeta;
}

export interface Lease {
  image: StoredImage;
  /** Whether the store had it (false: this call pulled it). */
  fromStore: boolean;
  release(): Promise<void>;
}

const META = 'image.json';
/** Work directories older than this were left by a runner that died mid-pull. */
const STALE_WORK_MS = 6 * 3600_000;
/** A lock whose holder is alive is waited for this often. */
const LOCK_POLL_MS = 50;

const hexOf = (digest: string) => digest.replace(/^sha256:/, '');
const entriesDir = (s: ImageStoreSettings) => path.join(s.dir, 'entries');
const entryDir = (s: ImageStoreSettings, digest: string) => path.join(entriesDir(s), hexOf(digest));
const workDir = (s: ImageStoreSettings) => path.join(s.dir, 'work');
const trashDir = (s: ImageStoreSettings) => path.join(s.dir, 'trash');
const leasesDir = (s: ImageStoreSettings) => path.join(s.dir, 'leases');
const locksDir = (s: ImageStoreSettings) => path.join(s.dir, 'locks');

async function prepare(s: ImageStoreSettings): Promise<void> {
  await mkdir(s.dir, { recursive: true, mode: 0o711 });
  await chmod(s.dir, 0o711);
  await mkdir(entriesDir(s), { recursive: true, mode: 0o711 });
  for (const d of [workDir(s), leasesDir(s), locksDir(s)]) await mkdir(d, { recursive: true, mode: 0o700 });
}

function alive(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

// --- locks ------------------------------------------------------------------------------------

/** In this process, the holders of each lock path, so one process's callers queue without polling. */
const held = new Map<string, Promise<void>>();

/**
 * Runs `fn` holding the lock `name` of the store, across processes: a directory made with mkdir
 * (atomic) naming its holder's pid; a holder that died is taken over.
 */
async function withLock<T>(s: ImageStoreSettings, name: string, fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
  const lock = path.join(locksDir(s), name);
  // Callers in this process wait their turn here first.
  for (let turn = held.get(lock); turn; turn = held.get(lock)) await turn;
  let free!: () => void;
  held.set(lock, new Promise<void>((resolve) => (free = resolve)));
  try {
    for (;;) {
      try {
        await mkdir(lock);
        await writeFile(path.join(lock, 'pid'), String(process.pid));
        break;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      const pid = Number(await readFile(path.join(lock, 'pid'), 'utf8').catch(() => ''));
      const since = (await stat(lock).catch(() => null))?.mtimeMs ?? 0;
      // No pid yet: its maker is between mkdir and writeFile, unless it died there long ago.
      if ((pid > 0 && !alive(pid)) || (!pid && Date.now() - since > 10_000)) {
        await rm(lock, { recursive: true, force: true });
        continue;
      }
      if (signal?.aborted) throw new Error('stopped');
      await sleep(LOCK_POLL_MS);
    }
    try {
      return await fn();
    } finally {
      await rm(lock, { recursive: true, force: true });
    }
  } finally {
    held.delete(lock);
    free();
  }
}

// --- leases -----------------------------------------------------------------------------------

/** This process's leases, by digest hex: a lease file exists while the count is above 0. */
const leases = new Map<string, number>();
const leaseFile = (s: ImageStoreSettings, hex: string) => path.join(leasesDir(s), `${hex}.${process.pid}`);

async function takeLease(s: ImageStoreSettings, hex: string): Promise<void> {
  const key = path.join(s.dir, hex);
  const n = leases.get(key) ?? 0;
  leases.set(key, n + 1);
  if (n === 0) await writeFile(leaseFile(s, hex), '');
}

async function dropLease(s: ImageStoreSettings, hex: string): Promise<void> {
  const key = path.join(s.dir, hex);
  const n = (leases.get(key) ?? 1) - 1;
  if (n > 0) return void leases.set(key, n);
  leases.delete(key);
  await unlink(leaseFile(s, hex)).catch(() => undefined);
}

/** Digests (hex) some live process holds a lease on. */
async function leased(s: ImageStoreSettings): Promise<Set<string>> {
  const out = new Set<string>();
  for (const name of await readdir(leasesDir(s)).catch(() => [] as string[])) {
    const [hex, pid] = name.split('.');
    if (!hex || !pid) continue;
    if (alive(Number(pid))) out.add(hex);
    else await unlink(path.join(leasesDir(s), name)).catch(() => undefined);
  }
  return out;
}

// --- entries ----------------------------------------------------------------------------------

async function readMeta(dir: string): Promise<ImageMeta | null> {
  try {
    return JSON.parse(await readFile(path.join(dir, META), 'utf8')) as ImageMeta;
  } catch {
    return null;
  }
}

/** The entry of `digest` leased, and marked used now; null when the store has none. Under the store lock. */
async function leaseExisting(s: ImageStoreSettings, digest: string): Promise<StoredImage | null> {
  const dir = entryDir(s, digest);
  const meta = await readMeta(dir);
  if (!meta || meta.digest !== digest) return null;
  await takeLease(s, hexOf(digest));
  const now = new Date();
  await utimes(path.join(dir, META), now, now).catch(() => undefined);
  return { dir, rootfs: path.join(dir, 'rootfs'), meta };
}

/**
 * A lease on the image `digest`: from the store, or pulled by `pull` into a fresh directory
 * (its `rootfs/` and what `pull` answers) and placed in the store, other entries evicted past
 * the limit. Concurrent calls for one digest pull it once.
 */
export async function leaseImage(
  s: ImageStoreSettings,
  digest: string,
  pull: (work: string) => Promise<Omit<ImageMeta, 'digest' | 'pulledAt'>>,
  signal?: AbortSignal,
): Promise<Lease> {
  await prepare(s);
  const hex = hexOf(digest);
  const lease = (image: StoredImage, fromStore: boolean): Lease => {
    let released = false;
    return {
      image,
      fromStore,
      release: async () => {
        if (released) return;
        released = true;
        await dropLease(s, hex);
      },
    };
  };
  const found = await withLock(s, 'store', () => leaseExisting(s, digest));
  if (found) return lease(found, true);

  // One pull per digest: whoever waited for another's finds the entry made.
  const pulled = await withLock(
    s,
    `pull-${hex}`,
    async () => {
      const again = await withLock(s, 'store', () => leaseExisting(s, digest));
      if (again) return { image: again, fromStore: true };
      const work = await mkdtemp(path.join(workDir(s), 'pull-'));
      try {
        const got = await pull(work);
        const meta: ImageMeta = { ...got, digest, pulledAt: new Date().toISOString() };
        await writeFile(path.join(work, META), JSON.stringify(meta), { mode: 0o600 });
        await chmod(work, 0o711);
        const image = await withLock(s, 'store', async () => {
          // A dead runner's half-made entry (no image.json) is in the way: out with it.
          await discard([entryDir(s, digest)], trashDir(s));
          await rename(work, entryDir(s, digest));
          return leaseExisting(s, digest);
        });
        if (!image) throw new Error(`the store lost image ${digest} as it placed it`);
        return { image, fromStore: false };
      } catch (err) {
        await discard([work], trashDir(s));
        throw err;
      }
    },
    signal,
  );
  const out = lease(pulled.image, pulled.fromStore);
  if (!pulled.fromStore) await evictImages(s);
  return out;
}

/**
 * Deletes entries: half-made ones, and the least recently used that no live process leases while
 * all hold more than `maxBytes`; work directories a dead runner left. How many entries went.
 */
export async function evictImages(s: ImageStoreSettings): Promise<number> {
  await prepare(s);
  await emptyTrash(trashDir(s));
  const gone = await withLock(s, 'store', async () => {
    const inUse = await leased(s);
    const names = await readdir(entriesDir(s)).catch(() => [] as string[]);
    const entries = await Promise.all(
      names.map(async (name) => {
        const dir = path.join(entriesDir(s), name);
        const meta = await readMeta(dir);
        const used = await stat(path.join(dir, META)).catch(() => null);
        return { name, dir, meta, usedAt: used?.mtimeMs ?? 0 };
      }),
    );
    // What builds hold stays and counts first; then the most recently used fit in what is left.
    let total = entries.reduce((n, e) => n + (e.meta && inUse.has(e.name) ? e.meta.bytes : 0), 0);
    const victims: string[] = [];
    for (const e of entries.filter((x) => !(x.meta && inUse.has(x.name))).sort((a, b) => b.usedAt - a.usedAt)) {
      if (e.meta !== null && total + e.meta.bytes <= s.maxBytes) total += e.meta.bytes;
      else victims.push(e.dir);
    }
    // Renamed away under the lock: a lease taken after it finds no entry and pulls again.
    await discard(victims, trashDir(s));
    return victims.length;
  });
  // The layers images were made of (layers.ts), under the same limit: an image's files are hard links to them.
  await evictLayers(s);
  for (const name of await readdir(workDir(s)).catch(() => [] as string[])) {
    const at = path.join(workDir(s), name);
    const info = await stat(at).catch(() => null);
    if (info && Date.now() - info.mtimeMs > STALE_WORK_MS) await discard([at], trashDir(s));
  }
  return gone;
}

/** The entries in the store now, newest use first (for the runner's operators and the tests). */
export async function listImages(s: ImageStoreSettings): Promise<ImageMeta[]> {
  const names = await readdir(entriesDir(s)).catch(() => [] as string[]);
  const metas = await Promise.all(names.map((name) => readMeta(path.join(entriesDir(s), name))));
  return metas.filter((m): m is ImageMeta => m !== null);
}
