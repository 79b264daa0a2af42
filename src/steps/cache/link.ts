/**
 * A restore by hard links (issue 39): the runner's local copy of an entry is linked into the
 * build instead of copied, so a warm restore of 11,000 files costs the directories, not the bytes
 * (pnpm's and Nix's stores work this way; ext4 has no reflinks and bubblewrap 0.8 no overlays).
 *
 * A hard link is the same file, so the build must not be able to write it: the copy's files are
 * the runner's (root's), never writable by group or others (`sealCopy`), and the build runs as
 * the build user. The build owns every directory of what it gets, so it may delete, rename and add
 * files as it likes; it cannot change a linked file in place (the kernel refuses: EACCES), so
 * the stored copy stays as it was for every later build. That is the price: a tool that edits a
 * restored file in place fails, which is why a cache asks for it (`link: true`).
 *
 * Every step that touches the build's tree runs as the build user: the links are made as root in
 * a work directory under the runner's 0700 local directory (which no build can reach), their
 * directories given to the build user, and then, as the build user, moved into the build
 * (`mv -T`: a rename on the same file system, a copy across).
 *
 * Linking 11,000 files still costs a link each (0.6 s on our disks). So a warm runner keeps a
 * spare: after each linked restore it links the next one in the background, into the copy's
 * `.spares` (`<hash of the path>-<uid>`, its directories already the build user's), and the next
 * restore of that path takes it with one rename. Two restores at once: one takes the spare, the
 * other links as before. Sealing a copy (its files made root's again) starts its spares over.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import type { CachePath } from './key';
import { parentProblem, rootDirOf, run, type BuildDirs, type Owner } from './copy';

/** Whether this runner can link safely for `owner`: it is root, and the build runs as another user. */
export function canLink(owner: Owner | undefined): owner is Owner {
  return owner !== undefined && process.getuid?.() === 0 && owner.uid !== 0;
}

/** Makes a local copy's files root's, readable by all and writable by none but root: what a link may be. */
export async function sealCopy(dir: string, signal?: AbortSignal): Promise<void> {
  // Spares being linked from this copy first: the chown below must not meet one half made.
  await Promise.all([...making].filter(([spare]) => spare.startsWith(path.join(dir, SPARES) + path.sep)).map(([, made]) => made));
  await rm(path.join(dir, SPARES), { recursive: true, force: true });
  await run(['chown', '-R', '-h', '0:0', '.'], { cwd: dir, signal });
  await run(['chmod', '-R', 'go+r,go-w', '.'], { cwd: dir, signal });
  // Directories are not linked (each build gets its own), but must stay searchable for the copy.
  await run(['find', '.', '-type', 'd', '-exec', 'chmod', 'go+x', '{}', '+'], { cwd: dir, signal });
}

/**
 * Links each save path the entry (`entryDir`, sealed) holds into the build, through `work` (a
 * directory of the build user's under the local directory); the paths restored, and notes.
 */
export async function linkIn(
  entryDir: string,
  work: string,
  dirs: BuildDirs,
  paths: readonly CachePath[],
  owner: Owner,
  signal?: AbortSignal,
): Promise<{ restored: CachePath[]; notes: string[] }> {
  const restored: CachePath[] = [];
  const notes: string[] = [];
  for (const [i, p] of paths.entries()) {
    const inEntry = `${p.root}/${p.rel}`;
    const problem = await parentProblem(rootDirOf(dirs, p), p.rel);
    if (problem) {
      notes.push(`${p.written}: not restored, ${problem}`);
      continue;
    }
    const staged = path.join(work, String(i));
    const spare = sparePath(entryDir, inEntry, owner);
    try {
      // A spare linked earlier, taken whole; else the links made now.
      if (!(await rename(spare, staged).then(() => true, () => false))) await linkTree(entryDir, inEntry, staged, owner, signal);
    } catch (err) {
      if (signal?.aborted) throw err;
      if (/exited 3/.test((err as Error).message)) continue; // the entry has none
      throw err;
    }
    const target = path.join(rootDirOf(dirs, p), p.rel);
    try {
      // As the build user, from inside `work`: nothing of the build's is touched as root.
      await run(['/bin/sh', '-c', 'rm -rf -- "$1" && mkdir -p -- "$2" && exec mv -T -- "$3" "$1"', 'sh', target, path.dirname(target), String(i)], { cwd: work, owner, signal });
      restored.push(p);
    } catch (err) {
      if (signal?.aborted) throw err;
      notes.push(`${p.written}: not restored, ${(err as Error).message}`);
      await rm(staged, { recursive: true, force: true });
    }
  }
  // The next restore's spares, made while this build goes on.
  for (const p of restored) keepSpare(entryDir, `${p.root}/${p.rel}`, owner);
  return { restored, notes };
}

/** Where a copy keeps its spares. */
const SPARES = '.spares';

const sparePath = (entryDir: string, inEntry: string, owner: Owner) =>
  path.join(entryDir, SPARES, `${createHash('sha256').update(inEntry).digest('hex').slice(0, 16)}-${owner.uid}`);

/** As root, within the runner's own directories: `inEntry` linked at `to`, its directories (and symbolic links) the build user's. */
async function linkTree(entryDir: string, inEntry: string, to: string, owner: Owner, signal?: AbortSignal): Promise<void> {
  await run(['/bin/sh', '-c', '[ -e "$1" ] || [ -L "$1" ] || exit 3; exec cp -al -- "$1" "$2"', 'sh', inEntry, to], { cwd: entryDir, signal });
  await run(['find', to, '(', '-type', 'd', '-o', '-type', 'l', ')', '-exec', 'chown', '-h', `${owner.uid}:${owner.gid}`, '{}', '+'], { cwd: entryDir, signal });
}

/** Spares being linked now, by where they go: one at a time each. */
const making = new Map<string, Promise<void>>();

/** Links a spare of `inEntry` for the next restore, in the background, unless one is there or on its way; a failure only means no spare. */
function keepSpare(entryDir: string, inEntry: string, owner: Owner): void {
  const spare = sparePath(entryDir, inEntry, owner);
  if (making.has(spare)) return;
  const temp = `${spare}.tmp-${randomBytes(4).toString('hex')}`;
  const made = (async () => {
    await mkdir(path.dirname(spare), { recursive: true, mode: 0o700 });
    await linkTree(entryDir, inEntry, temp, owner);
    // A spare there already (another runner process's) stays; this one goes.
    await rename(temp, spare);
  })()
    .catch(() => rm(temp, { recursive: true, force: true }).catch(() => undefined))
    .finally(() => making.delete(spare));
  making.set(spare, made);
}

/** Resolves once every spare being linked is there (or given up): tests and the bench wait on it. */
export async function sparesSettled(): Promise<void> {
  while (making.size > 0) await Promise.all([...making.values()]);
}
