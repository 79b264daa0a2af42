/**
 * A runner's mirrors of the repositories it builds (issue 39): one bare repository (git's; hg's,
 * a repository without a working copy) per Sluice repository and pull URL under
 * `<workspace>/.mirrors` (0700, the runner's), fetched from the hosting site under a lock, so
 * that the history crosses the network once per runner, not once per worker and build. Each
 * worker's tree is a local clone of its mirror (git.ts, hg.ts): its object files are hard links
 * (the same files, read-only, never the build's to change: tree.ts leaves files with other links
 * alone when it gives a tree to the build user), so a mirror's later fetches or repacks never
 * break a checkout that borrowed from it (Buildkite's agent learned with `--reference` that a
 * collected mirror breaks its borrowers; hg copies a linked file before it appends to it), and a
 * tree holds its own repository's objects only, inside the sandbox too.
 *
 * A mirror that cannot serve is thrown away and the pull goes straight to the site: it
 * never fails a build. Past `maxBytes`, the least recently used mirrors go (`evictMirrors`).
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, open, readdir, readFile, rm, stat, utimes } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { discard } from '../trash';

const execFileAsync = promisify(execFile);

export interface MirrorSettings {
  dir: string;
  maxBytes: number;
}

/** The default share of a runner's disk its mirrors may take. */
export const DEFAULT_MIRROR_MAX_BYTES = 20 * 1024 ** 3;

/** Where a repository's mirror of `pullUrl` lives: by repository (never shared across repositories, whose keys differ), URL and kind. */
export function mirrorPath(dir: string, repoKey: string, pullUrl: string, scm: 'git' | 'hg' = 'git'): string {
  const url = createHash('sha256').update(pullUrl).digest('hex').slice(0, 16);
  return path.join(dir, `${repoKey.replace(/[^A-Za-z0-9_-]/g, '_')}-${url}.${scm}`);
}

/** Makes the mirrors' directory, 0700: no build reads another repository's history. */
export async function prepareMirrors(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
}

/** How long a pull (git's or hg's) waits for another pull of the same mirror. */
export const MIRROR_LOCK_WAIT_MS = 10 * 60_000;

const LOCK_POLL_MS = 100;
/** A lock held this long by a process that still lives is taken over anyway: no fetch runs this long. */
const STALE_LOCK_MS = 30 * 60_000;

const held = new Map<string, Promise<unknown>>();

/**
 * Runs `fn` holding `mirror`'s lock: one fetch or clone at a time, in this process (a queue) and
 * across processes (`<mirror>.lock`, made with O_EXCL, holding the pid). A lock whose process is
 * gone (killed mid-fetch) or older than STALE_LOCK_MS is taken over. Waits at most `timeoutMs`.
 */
export async function withMirrorLock<T>(mirror: string, timeoutMs: number, fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
  const before = held.get(mirror) ?? Promise.resolve();
  const mine = before.catch(() => undefined).then(() => lockFile(mirror, timeoutMs, fn, signal));
  held.set(mirror, mine);
  try {
    return await mine;
  } finally {
    if (held.get(mirror) === mine) held.delete(mirror);
  }
}

async function lockFile<T>(mirror: string, timeoutMs: number, fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
  const lock = `${mirror}.lock`;
  const deadline = Date.now() + timeoutMs;
  let tookOver = false;
  for (;;) {
    signal?.throwIfAborted();
    try {
      const handle = await open(lock, 'wx', 0o600);
      await handle.writeFile(String(process.pid));
      await handle.close();
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      if (await staleLock(lock)) {
        await rm(lock, { force: true });
        tookOver = true;
        continue;
      }
      if (Date.now() > deadline) throw new MirrorBusy(`the mirror is locked by another fetch for more than ${timeoutMs} ms`, { cause: err });
      await new Promise((r) => setTimeout(r, LOCK_POLL_MS));
    }
  }
  try {
    // A pull killed mid-fetch leaves git's own locks (a ref's, packed-refs'): no git runs in the mirror now but ours.
    if (tookOver) await execFileAsync('find', [mirror, '-type', 'f', '-name', '*.lock', '-delete']).catch(() => undefined);
    return await fn();
  } finally {
    await rm(lock, { force: true });
    // Its last use, for eviction.
    const now = new Date();
    await utimes(mirror, now, now).catch(() => undefined);
  }
}

/** The mirror stayed locked by another pull too long: this pull goes to the site, the mirror stays. */
export class MirrorBusy extends Error {
  override readonly name = 'MirrorBusy';
}

/** Throws a mirror that could not serve away, under its lock (a pull using it meanwhile keeps it). */
export async function discardMirror(mirror: string): Promise<void> {
  await withMirrorLock(mirror, 1_000, () => rm(mirror, { recursive: true, force: true })).catch(() => undefined);
}

async function staleLock(lock: string): Promise<boolean> {
  const [pidText, info] = await Promise.all([readFile(lock, 'utf8').catch(() => ''), stat(lock).catch(() => null)]);
  if (!info) return false;
  if (Date.now() - info.mtimeMs > STALE_LOCK_MS) return true;
  const pid = Number(pidText);
  // Not written yet: its maker is between open and write.
  if (!Number.isInteger(pid) || pid <= 0) return Date.now() - info.mtimeMs > 5_000;
  if (pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

/** Bytes under `dir` (`du`: what the disk holds). */
async function sizeOf(dir: string): Promise<number> {
  const out = await execFileAsync('du', ['-sk', '--', dir], { encoding: 'utf8' }).then(
    (r) => r.stdout,
    () => '0',
  );
  return Number(out.split(/\s/)[0] ?? 0) * 1024;
}

/**
 * Removes the least recently used mirrors while all take more than `maxBytes`; a mirror in use
 * (locked) is never removed. How many went.
 */
export async function evictMirrors(settings: MirrorSettings, trash: string): Promise<number> {
  const names = (await readdir(settings.dir).catch(() => [] as string[])).filter((n) => n.endsWith('.git') || n.endsWith('.hg'));
  const mirrors = await Promise.all(
    names.map(async (name) => {
      const dir = path.join(settings.dir, name);
      const info = await stat(dir).catch(() => null);
      return { dir, usedAt: info?.mtimeMs ?? 0, bytes: info ? await sizeOf(dir) : 0 };
    }),
  );
  mirrors.sort((a, b) => b.usedAt - a.usedAt);
  let total = 0;
  const gone: string[] = [];
  for (const m of mirrors) {
    total += m.bytes;
    if (total <= settings.maxBytes) continue;
    if (await stat(`${m.dir}.lock`).catch(() => null)) continue;
    gone.push(m.dir);
  }
  await discard(gone, trash);
  return gone.length;
}
