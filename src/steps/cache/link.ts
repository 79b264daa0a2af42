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
 */
import { rm } from 'node:fs/promises';
import path from 'node:path';
import type { CachePath } from './key';
import { parentProblem, rootDirOf, run, type BuildDirs, type Owner } from './copy';

/** Whether this runner can link safely for `owner`: it is root, and the build runs as another user. */
export function canLink(owner: Owner | undefined): owner is Owner {
  return owner !== undefined && process.getuid?.() === 0 && owner.uid !== 0;
}

/** Makes a local copy's files root's, readable by all and writable by none but root: what a link may be. */
export async function sealCopy(dir: string, signal?: AbortSignal): Promise<void> {
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
    try {
      // As root, within the runner's own directories: the links, then their directories (and symbolic links) the build user's.
      await run(['/bin/sh', '-c', '[ -e "$1" ] || [ -L "$1" ] || exit 3; exec cp -al -- "$1" "$2"', 'sh', inEntry, staged], { cwd: entryDir, signal });
      await run(['find', staged, '(', '-type', 'd', '-o', '-type', 'l', ')', '-exec', 'chown', '-h', `${owner.uid}:${owner.gid}`, '{}', '+'], { cwd: work, signal });
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
  return { restored, notes };
}
