/**
 * A restore by overlay mount (issue 49): the build's checkout (and home) becomes an overlayfs
 * whose lower layers are the runner's local copy of the entry and the files the checkout made,
 * and whose upper layer takes the build's writes. A warm restore then costs one mount whatever
 * the entry's size (express's node_modules, 7,500 files: `cp -a` took 7.4 s of system time on
 * these disks, the mount 4 ms), and, unlike hard links (link.ts), every file is writable and
 * every directory removable, as in a copy: a write copies the file up, a delete leaves a
 * whiteout, and the local copy stays as it was for every later build.
 *
 * Only a runner that is root mounts (as Docker's and Podman's overlay storage does), and only
 * where the kernel has overlayfs (probed once); elsewhere the cache is copied or linked. The
 * mount is `nosuid,nodev`. Its layers are real directories (no symbolic link on the way: one
 * could point at another repository's copy); after the mount, the mount table must show it where
 * it was made, or it is undone. The layers live beside the tree in `<tree>.layers` (0700, the
 * runner's), which no build reaches but through the mount; they go when the tree goes, after
 * every mount of the tree, its home and its layers is detached (unmountUnder, also for a runner
 * that died).
 *
 * A local copy that is a lower layer of a live mount is never evicted (mountedLowers): changing
 * a lower layer under a mounted overlay is undefined.
 */
import { randomBytes } from 'node:crypto';
import { chown, lstat, mkdir, readFile, realpath, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { CachePath } from './key';
import { run, type BuildDirs, type Owner } from './copy';

/** Paths the mount options may hold as they are (`,` and `:` separate options and layers). */
const SAFE_PATH = /^\/[A-Za-z0-9._@+/-]*$/;

let probed: Promise<boolean> | undefined;

/** Whether this runner can restore by overlay for `owner`: it is root, the build runs as another user, and a test mount works here. */
export async function canOverlay(owner: Owner | undefined, scratch: string): Promise<boolean> {
  if (owner === undefined || process.getuid?.() !== 0 || owner.uid === 0 || process.platform !== 'linux') return false;
  probed ??= probe(scratch);
  return probed;
}

async function probe(scratch: string): Promise<boolean> {
  const dir = path.join(scratch, `overlay-probe-${randomBytes(4).toString('hex')}`);
  try {
    for (const d of ['lower', 'upper', 'work', 'merged']) await mkdir(path.join(dir, d), { recursive: true, mode: 0o700 });
    await mountOverlay(path.join(dir, 'lower'), path.join(dir, 'upper'), path.join(dir, 'work'), path.join(dir, 'merged'));
    await run(['umount', path.join(dir, 'merged')], { cwd: dir });
    return true;
  } catch {
    return false;
  } finally {
    await rm(dir, { recursive: true, force: true }).catch(() => undefined);
  }
}

/** `lower`: the lower layers, the top one first, separated by `:`. */
function mountOverlay(lower: string, upper: string, work: string, at: string, signal?: AbortSignal): Promise<void> {
  for (const p of [...lower.split(':'), upper, work, at]) if (!SAFE_PATH.test(p)) throw new Error(`${p}: not a path an overlay's options can hold`);
  return run(['mount', '-t', 'overlay', 'overlay', '-o', `lowerdir=${lower},upperdir=${upper},workdir=${work},nosuid,nodev`, at], { cwd: '/', signal });
}

interface Mount {
  /** Where it is mounted, as the kernel says. */
  at: string;
  type: string;
  /** The superblock's options (an overlay's layers). */
  options: string;
}

/** This mount namespace's mounts (/proc/self/mountinfo), octal escapes undone. */
async function mounts(): Promise<Mount[]> {
  const text = await readFile('/proc/self/mountinfo', 'utf8').catch(() => '');
  const unescape = (s: string) => s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [left, right = ''] = line.split(' - ');
      const fields = left!.split(' ');
      const [type = '', , options = ''] = right.split(' ');
      return { at: unescape(fields[4] ?? ''), type, options: unescape(options) };
    });
}

const under = (p: string, dir: string) => p === dir || p.startsWith(`${dir}/`);

/**
 * Detaches every mount at or under any of `dirs`, and every overlay whose upper layer is under
 * any of them (wherever it was mounted), deepest first: before a tree, its home and its layers
 * are removed.
 */
export async function unmountUnder(dirs: readonly string[]): Promise<void> {
  const within = (p: string) => dirs.some((d) => under(p, path.resolve(d)));
  const upperOf = (m: Mount) => m.options.split(',').find((o) => o.startsWith('upperdir='))?.slice('upperdir='.length);
  const found = (await mounts())
    .filter((m) => within(m.at) || (m.type === 'overlay' && within(upperOf(m) ?? '')))
    .sort((a, b) => b.at.length - a.at.length);
  for (const m of found) await run(['umount', '--lazy', m.at], { cwd: '/' }).catch(() => undefined);
}

/** The lower layers of every overlay mounted now: local copies that may not be evicted. */
export async function mountedLowers(): Promise<string[]> {
  return (await mounts())
    .filter((m) => m.type === 'overlay')
    .flatMap((m) => m.options.split(',').filter((o) => o.startsWith('lowerdir=')).flatMap((o) => o.slice('lowerdir='.length).split(':')));
}

/** A real directory, reached through no symbolic link from `/`. */
async function plainDirectory(p: string): Promise<boolean> {
  const info = await lstat(p).catch(() => null);
  return info !== null && info.isDirectory() && (await realpath(p).catch(() => null)) === p;
}

/**
 * Mounts the entry (`entryDir`, the runner's copy, its files `owner`'s) under the build's tree
 * and home: each becomes an overlay of the entry's part (on top) over what the checkout made
 * (moved into `layers` as the lower layer), with an upper layer of its own for the build's
 * writes. The save paths are then plain parts of a writable tree: a hook may `rm -rf` one, a
 * tool may edit a file in place. A save path the checkout has too is left to be restored as a
 * copy (`rest`), so that it replaces the checkout's rather than merging with it.
 */
export async function overlayIn(
  entryDir: string,
  layers: string,
  dirs: BuildDirs,
  paths: readonly CachePath[],
  owner: Owner,
  signal?: AbortSignal,
): Promise<{ restored: CachePath[]; rest: CachePath[] }> {
  const restored: CachePath[] = [];
  const rest: CachePath[] = [];
  await mkdir(layers, { recursive: true, mode: 0o700 });
  for (const root of ['tree', 'home'] as const) {
    const mine = [];
    for (const p of paths.filter((q) => q.root === root)) if (await lstat(path.join(entryDir, root, p.rel)).catch(() => null)) mine.push(p);
    if (mine.length === 0) continue;
    const part = path.join(entryDir, root);
    const target = root === 'tree' ? dirs.tree : dirs.home;
    if (!(await plainDirectory(part)) || !(await plainDirectory(target)) || !SAFE_PATH.test(target) || (await isMountPoint(target))) {
      rest.push(...mine);
      continue;
    }
    const layer = path.join(layers, root);
    const base = path.join(layer, 'base');
    const upper = path.join(layer, 'upper');
    await mkdir(path.join(layer, 'work'), { recursive: true, mode: 0o700 });
    const info = await stat(target);
    // The checkout becomes the lower layer: no build code has run in it yet.
    await rename(target, base);
    try {
      await mkdir(target, { mode: info.mode & 0o7777 });
      await chown(target, info.uid, info.gid);
      await mkdir(upper, { mode: info.mode & 0o7777 });
      await chown(upper, owner.uid, owner.gid);
      await mountOverlay(`${part}:${base}`, upper, path.join(layer, 'work'), target, signal);
      // Where the kernel put it: a mount point swapped for a link in between would be elsewhere.
      const landed = (await mounts()).filter((m) => m.type === 'overlay' && m.options.split(',').includes(`upperdir=${upper}`));
      if (landed.length !== 1 || landed[0]!.at !== target) {
        for (const m of landed) await run(['umount', '--lazy', m.at], { cwd: '/' }).catch(() => undefined);
        throw new Error(`the overlay of ${root === 'tree' ? 'the checkout' : 'the home'} did not land where it was made`);
      }
    } catch (err) {
      // The checkout back where it was, as if nothing had been tried.
      await rm(target, { recursive: true, force: true }).catch(() => undefined);
      await rename(base, target);
      await rm(layer, { recursive: true, force: true }).catch(() => undefined);
      throw err;
    }
    for (const p of mine) {
      if (await lstat(path.join(base, p.rel)).catch(() => null)) rest.push(p);
      else restored.push(p);
    }
  }
  return { restored, rest };
}

async function isMountPoint(dir: string): Promise<boolean> {
  return (await mounts()).some((m) => m.at === dir);
}
