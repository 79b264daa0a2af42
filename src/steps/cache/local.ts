/**
 * A runner's local copies of cache entries, so a warm runner restores without a download:
 * each an entry directory (`tree/…`, `home/…`) under `<dir>/entries/<name>`, named after the
 * entry's store key, with `entry.json` (its size, and whose its files are) written last, whose
 * modification time is the copy's last use. Over `maxBytes`, the least recently used go.
 *
 * `<dir>` is 0700 and the runner's: the build user cannot read another repository's copies,
 * and nothing under it is reachable by a build (see copy.ts for how a build user's copy gets in).
 */
import { chmod, lchown, mkdir, mkdtemp, readdir, readFile, rename, rm, stat, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Owner } from './copy';
import { discard, emptyTrash } from '../trash';
import { mountedLowers } from './overlay';

export interface LocalSettings {
  dir: string;
  maxBytes: number;
}

export interface LocalCopy {
  name: string;
  /** The entry directory. */
  dir: string;
  bytes: number;
  /** Whose its files are (null: whoever made them, the runner). */
  uid: number | null;
}

interface Meta {
  storeKey: string;
  bytes: number;
  uid: number | null;
}

const META = 'entry.json';
/** Work directories older than this were left by a runner that died. */
const STALE_WORK_MS = 6 * 3600_000;

const entriesDir = (local: LocalSettings) => path.join(local.dir, 'entries');
const workDir = (local: LocalSettings) => path.join(local.dir, 'work');
/** Evicted copies on their way out, deleted at low priority (see trash.ts). */
const trashDir = (local: LocalSettings) => path.join(local.dir, 'trash');

/** A store key as a directory name: `caches/12/ab.tgz` is `caches-12-ab.tgz`. */
export const localName = (storeKey: string) => storeKey.replace(/\//g, '-');

/** Makes the local directory (0700, whatever it was) and its parts. */
async function prepare(local: LocalSettings): Promise<void> {
  await mkdir(local.dir, { recursive: true, mode: 0o700 });
  await chmod(local.dir, 0o700);
  await mkdir(entriesDir(local), { recursive: true, mode: 0o700 });
  await mkdir(workDir(local), { recursive: true, mode: 0o700 });
}

/** A fresh work directory under the local directory (for a download, a save's copy), owned by `owner` when given. */
export async function workPlace(local: LocalSettings, owner?: Owner): Promise<string> {
  await prepare(local);
  const dir = await mkdtemp(path.join(workDir(local), 'w-'));
  if (owner) await lchown(dir, owner.uid, owner.gid);
  return dir;
}

/** The local copy of the entry stored at `storeKey`, marked used now; null when this runner has none. */
export async function findLocal(local: LocalSettings, storeKey: string): Promise<LocalCopy | null> {
  const name = localName(storeKey);
  const dir = path.join(entriesDir(local), name);
  const meta = await readMeta(dir);
  if (!meta || meta.storeKey !== storeKey) return null;
  const now = new Date();
  await utimes(path.join(dir, META), now, now).catch(() => undefined);
  return { name, dir, bytes: meta.bytes, uid: meta.uid };
}

/**
 * Makes the entry directory `work` (from workPlace) the local copy of `storeKey`. When another
 * build placed one meanwhile, that one stays and `work` goes.
 */
export async function placeLocal(local: LocalSettings, storeKey: string, work: string, bytes: number, uid: number | null): Promise<LocalCopy> {
  const name = localName(storeKey);
  const dir = path.join(entriesDir(local), name);
  await writeFile(path.join(work, META), JSON.stringify({ storeKey, bytes, uid } satisfies Meta), { mode: 0o600 });
  try {
    await rename(work, dir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw err;
    await rm(work, { recursive: true, force: true });
  }
  return (await findLocal(local, storeKey)) ?? { name, dir, bytes, uid };
}

/** Records whose the copy's files are now. */
export async function setLocalOwner(copy: LocalCopy, storeKey: string, uid: number): Promise<void> {
  await writeFile(path.join(copy.dir, META), JSON.stringify({ storeKey, bytes: copy.bytes, uid } satisfies Meta), { mode: 0o600 });
  copy.uid = uid;
}

async function readMeta(dir: string): Promise<Meta | null> {
  try {
    return JSON.parse(await readFile(path.join(dir, META), 'utf8')) as Meta;
  } catch {
    return null;
  }
}

/** Every local copy with its last use, newest first; directories without entry.json (half placed, or broken) as unused. */
async function listLocal(local: LocalSettings): Promise<{ name: string; meta: Meta | null; usedAt: number }[]> {
  const names = await readdir(entriesDir(local)).catch(() => [] as string[]);
  const out = await Promise.all(
    names.map(async (name) => {
      const dir = path.join(entriesDir(local), name);
      const used = await stat(path.join(dir, META)).catch(() => null);
      return { name, meta: await readMeta(dir), usedAt: used?.mtimeMs ?? 0 };
    }),
  );
  return out.sort((a, b) => b.usedAt - a.usedAt);
}

/**
 * Deletes local copies: broken ones, those `isLive` says no entry names any more, and the least
 * recently used while all hold more than `maxBytes` (never `keep`, nor a copy that is a lower
 * layer of a build's overlay now). Also work directories a dead runner left. Returns how many
 * copies went.
 */
export async function evictLocal(local: LocalSettings, opts: { keep?: string; isLive?: (storeKeys: string[]) => Promise<Set<string>> } = {}): Promise<number> {
  await prepare(local);
  const copies = await listLocal(local);
  const live = opts.isLive ? await opts.isLive(copies.flatMap((c) => (c.meta ? [c.meta.storeKey] : []))) : null;
  const lowers = await mountedLowers();
  const mounted = (name: string) => lowers.some((l) => l.startsWith(`${path.join(entriesDir(local), name)}/`));
  await emptyTrash(trashDir(local));
  let total = 0;
  const gone: string[] = [];
  for (const copy of copies) {
    const keep =
      copy.name === opts.keep ||
      mounted(copy.name) ||
      (copy.meta !== null && (live === null || live.has(copy.meta.storeKey)) && total + copy.meta.bytes <= local.maxBytes);
    if (keep) {
      total += copy.meta?.bytes ?? 0;
      continue;
    }
    gone.push(path.join(entriesDir(local), copy.name));
  }
  await discard(gone, trashDir(local));
  for (const name of await readdir(workDir(local)).catch(() => [] as string[])) {
    const at = path.join(workDir(local), name);
    const info = await stat(at).catch(() => null);
    if (info && Date.now() - info.mtimeMs > STALE_WORK_MS) await discard([at], trashDir(local));
  }
  return gone.length;
}
