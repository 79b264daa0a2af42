/**
 * Save paths between a build (its checkout and home) and an entry directory (`tree/…`,
 * `home/…`, on this runner, under the 0700 local directory), copied with `cp -a`: no work per
 * file in JavaScript, so a warm restore costs what a plain `cp -a` costs.
 *
 * Every copy that touches the build's files runs as the build's owner (the build user) when
 * there is one: it starts in the entry directory (entered while still root, so the build user
 * needs no way there) and then reads or writes the build's files with the build user's rights.
 * Whatever link a build left or swaps in on the way, the runner never reads or writes through
 * it as root. The symlink checks before each copy are for the notes: they say why a path was
 * skipped, where the copy would otherwise fail or land somewhere else.
 */
import { spawn } from 'node:child_process';
import { lstat } from 'node:fs/promises';
import path from 'node:path';
import type { CachePath } from './key';

export interface Owner {
  uid: number;
  gid: number;
}

/** The build's directories a save path is relative to. */
export interface BuildDirs {
  tree: string;
  home: string;
}

const STDERR_LIMIT = 2_000;

/** Runs `argv` in `cwd`, as `owner` when given; rejects with the end of what it printed on stderr. */
export function run(argv: readonly string[], opts: { cwd: string; owner?: Owner; signal?: AbortSignal }): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), {
      cwd: opts.cwd,
      stdio: ['ignore', 'ignore', 'pipe'],
      signal: opts.signal,
      env: { PATH: '/usr/local/bin:/usr/bin:/bin', LC_ALL: 'C' },
      ...(opts.owner ? { uid: opts.owner.uid, gid: opts.owner.gid } : {}),
    });
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => {
      stderr = (stderr + d.toString()).slice(-STDERR_LIMIT);
    });
    child.once('error', reject);
    child.once('close', (code, signal) => {
      if (code === 0) resolve();
      else reject(new Error(`${path.basename(argv[0]!)} ${signal ? `killed by ${signal}` : `exited ${code}`}: ${stderr.trim()}`));
    });
  });
}

/**
 * Why the way from `rootDir` to `rel`'s parent cannot be used (a symbolic link, or something
 * not a directory, in the way), or null: every part there is a real directory, or missing.
 */
export async function parentProblem(rootDir: string, rel: string): Promise<string | null> {
  const parents = rel.split('/').slice(0, -1);
  let at = rootDir;
  for (const part of parents) {
    at = path.join(at, part);
    const info = await lstat(at).catch(() => null);
    if (!info) return null;
    if (info.isSymbolicLink()) return `${path.relative(rootDir, at)} is a symbolic link`;
    if (!info.isDirectory()) return `${path.relative(rootDir, at)} is not a directory`;
  }
  return null;
}

export const rootDirOf = (dirs: BuildDirs, p: CachePath) => (p.root === 'tree' ? dirs.tree : dirs.home);

/** Copies each save path of the build into `entryDir` (which `owner` must own); the paths copied, and notes on the others. */
export async function copyOut(entryDir: string, dirs: BuildDirs, paths: readonly CachePath[], owner: Owner | undefined, signal?: AbortSignal): Promise<{ copied: CachePath[]; notes: string[] }> {
  const copied: CachePath[] = [];
  const notes: string[] = [];
  for (const p of paths) {
    const source = path.join(rootDirOf(dirs, p), p.rel);
    const problem = await parentProblem(rootDirOf(dirs, p), p.rel);
    const info = problem ? null : await lstat(source).catch(() => null);
    if (problem) notes.push(`${p.written}: not saved, ${problem}`);
    else if (!info) notes.push(`${p.written}: not saved, nothing there`);
    else if (info.isSymbolicLink()) notes.push(`${p.written}: not saved, it is a symbolic link`);
    else {
      const inEntry = `${p.root}/${p.rel}`;
      // Hard links become separate files: an entry holds files, directories and symbolic links only.
      const script = 'mkdir -p -- "$1" && exec cp -a --no-preserve=links -- "$2" "$3"';
      await run(['/bin/sh', '-c', script, 'sh', path.posix.dirname(inEntry), source, inEntry], { cwd: entryDir, owner, signal });
      copied.push(p);
    }
  }
  return { copied, notes };
}

/**
 * Copies each save path the entry holds from `entryDir` into the build, replacing what is
 * there (removed without following links); the paths restored, and notes on those skipped.
 */
export async function copyIn(entryDir: string, dirs: BuildDirs, paths: readonly CachePath[], owner: Owner | undefined, signal?: AbortSignal): Promise<{ restored: CachePath[]; notes: string[] }> {
  const restored: CachePath[] = [];
  const notes: string[] = [];
  for (const p of paths) {
    const inEntry = `${p.root}/${p.rel}`;
    if (!(await lstat(path.join(entryDir, inEntry)).catch(() => null))) continue; // the entry has none
    const problem = await parentProblem(rootDirOf(dirs, p), p.rel);
    if (problem) {
      notes.push(`${p.written}: not restored, ${problem}`);
      continue;
    }
    const target = path.join(rootDirOf(dirs, p), p.rel);
    const script = 'rm -rf -- "$1" && mkdir -p -- "$2" && exec cp -a -- "$3" "$1"';
    try {
      await run(['/bin/sh', '-c', script, 'sh', target, path.dirname(target), inEntry], { cwd: entryDir, owner, signal });
      restored.push(p);
    } catch (err) {
      if (signal?.aborted) throw err;
      notes.push(`${p.written}: not restored, ${(err as Error).message}`);
    }
  }
  return { restored, notes };
}

/**
 * Makes an entry directory hold what an entry may: devices, FIFOs and sockets removed, and no
 * set-user or set-group bit (a file unpacked as root would otherwise be set-user-root). Run as
 * the runner, on a directory no build can reach.
 */
export async function tidyEntry(dir: string, signal?: AbortSignal): Promise<void> {
  await run(['find', '.', '(', '-type', 'b', '-o', '-type', 'c', '-o', '-type', 'p', '-o', '-type', 's', ')', '-delete', '-o', '-type', 'f', '-perm', '/6000', '-exec', 'chmod', 'ug-s', '{}', '+'], {
    cwd: dir,
    signal,
  });
}

/** Gives an entry directory to `owner`, links themselves and not what they point to. */
export async function chownEntry(dir: string, owner: Owner, signal?: AbortSignal): Promise<void> {
  await run(['chown', '-R', '-h', `${owner.uid}:${owner.gid}`, '.'], { cwd: dir, signal });
}
