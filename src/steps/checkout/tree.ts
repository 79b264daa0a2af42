/**
 * Checkouts on a runner's disk. Every build activity runs on whichever runner takes it from
 * the build queue, so none may assume the tree an earlier step made is here: each names the
 * commit it needs (a TreeRef) and gets a tree of it, reusing one this runner already has when
 * it can, else fetching. A runner that dies takes its trees with it and nothing waits for it.
 *
 * Lane 0 of a session uses `session-<id>` (also the session's first checkout, the one sluice.yml
 * and the list of test files come from); lane k > 0 uses `session-<id>-<k>`. Beside each tree a
 * marker (`<tree>.json`) says which commit it holds and whether tests have run in it yet, the
 * worker's home (`<tree>.home`) keeps what its hooks and tests leave there (`~/.npm`, ...), and
 * `<tree>.layers` the upper layers of caches restored by overlay mounts in either (cache/overlay.ts),
 * detached before the tree goes, and `<tree>.index` (git) the runner's copy of the index the
 * checkout wrote.
 *
 * A tree is not simply removed when its build is done with it: a git tree of a build that may
 * write the cache is cleaned and kept (kept.ts), and a later build of the repository that may
 * read that cache starts from it, writing only the files that differ (retireTree, fetchTree).
 */
import { copyFile, lchown, lstat, mkdir, mkdtemp, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { DEFAULT_KEPT_TREES, type Config } from '../../config';
import type { TreeRef } from '../../core/session';
import { fetchRepository, GitPullError, type FetchRepositoryResult, type HostKeys } from './git';
import { fetchHgRepository } from './hg';
import { DEFAULT_MIRROR_MAX_BYTES, evictMirrors } from './mirror';
import type { BuildUser } from '../isolation/process';
import type { BuildRecords } from '../records';
import { discard, emptyTrash } from '../trash';
import { unmountUnder } from '../cache/overlay';
import { addKeptTree, claimKeptTree, evictKeptTrees } from './kept';
import { cleanKeptTree } from './git';
import { countCheckout } from '../../metrics/counts';

export interface TreeDeps {
  records: BuildRecords;
  workspaceDir: string;
  /** How much of the disk the runner's mirrors may take (mirror.ts; default DEFAULT_MIRROR_MAX_BYTES). */
  mirrorMaxBytes?: number;
  /** How many trees of ended builds the runner keeps for later ones (kept.ts; default DEFAULT_KEPT_TREES; 0: none). */
  keptTrees?: number;
}

export const treeDeps = (config: Pick<Config, 'workspaceDir' | 'gitMirrorMaxBytes' | 'keptTrees'>, records: BuildRecords): TreeDeps => ({
  records,
  workspaceDir: config.workspaceDir,
  mirrorMaxBytes: config.gitMirrorMaxBytes,
  keptTrees: config.keptTrees,
});

interface Marker extends FetchRepositoryResult {
  /** No test has run in the tree yet. */
  pristine: boolean;
  repoId?: number;
  scm?: 'git' | 'hg';
  /** The cache scope of the build that made it: where it may be kept (null: never). */
  writeScope?: string | null;
}

export function treeDir(workspaceDir: string, sessionId: number, lane = 0): string {
  return path.resolve(workspaceDir, lane === 0 ? `session-${sessionId}` : `session-${sessionId}-${lane}`);
}

const markerOf = (workdir: string) => `${workdir}.json`;
/** The runner's copy of the index git wrote at the checkout: what a kept tree's files are (kept.ts). */
const indexOf = (workdir: string) => `${workdir}.index`;
/** The home of the worker whose checkout `workdir` is: HOME of its hooks and tests, `~` of its cache paths. */
export const homeDir = (workdir: string) => `${workdir}.home`;
/** Where the upper layers of the caches mounted in `workdir` and its home go (the runner's; no build reaches it). */
export const layersDir = (workdir: string) => `${workdir}.layers`;

/**
 * Trees a step of this process is using after their session ended (the push, the post_build
 * hook): the sweep leaves them alone until released.
 */
const held = new Map<string, number>();
export function holdTree(workdir: string): () => void {
  held.set(workdir, (held.get(workdir) ?? 0) + 1);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    const n = (held.get(workdir) ?? 1) - 1;
    if (n <= 0) held.delete(workdir);
    else held.set(workdir, n);
  };
}

async function readMarker(workdir: string): Promise<Marker | null> {
  try {
    return JSON.parse(await readFile(markerOf(workdir), 'utf8')) as Marker;
  } catch {
    return null;
  }
}

/**
 * Fetches `head` (a branch tip, commit, tag or ref) into a `workdir` made afresh: git and hg
 * never run in a directory they did not create (configuration planted in a `.git` could run a
 * command during the fetch). The tree is pristine.
 */
export async function fetchTree(
  deps: TreeDeps,
  ref: Omit<TreeRef, 'commitId'> & { head: string },
  workdir: string,
  signal: AbortSignal | undefined,
): Promise<FetchRepositoryResult> {
  const repo = await deps.records.pullSource(ref.repoId);
  if (!repo) throw new TreeGoneError(`repository ${ref.repoId} no longer exists`);
  await removeTree(workdir);
  // The repository's SCM decides (the API refuses a trigger naming the other one).
  const hostKeys: HostKeys = { known: repo.knownHosts };
  const common = { pullUrl: repo.pullUrl, privateKey: repo.privateKey, workdir, branch: ref.branch, head: ref.head, signal, hostKeys };
  let got: FetchRepositoryResult;
  // A kept tree serves only a pull through the mirror (one with refspecs goes to the site).
  const kept = repo.scm === 'git' && (ref.refspecs ?? []).length === 0 && ref.scopes && deps.keptTrees !== 0 ? await claimKeptTree(deps.workspaceDir, ref.repoId, ref.scopes.readScopes, workdir) : null;
  try {
    const mirror = { dir: mirrorsDir(deps.workspaceDir), key: String(ref.repoId) };
    got =
      repo.scm === 'hg'
        ? await fetchHgRepository({ ...common, mirror })
        : await fetchRepository({ ...common, httpToken: repo.httpToken, refspecs: ref.refspecs ?? [], mirror, ...(kept ? { kept: { index: kept.index } } : {}) });
  } catch (err) {
    throw withHostKeyHint(err, ref.repoId);
  } finally {
    await kept?.release();
    await keepLearnedHostKeys(deps.records, ref.repoId, hostKeys);
  }
  countCheckout(kept ? 'kept' : 'new');
  if (repo.scm === 'git') await copyFile(path.join(workdir, '.git', 'index'), indexOf(workdir)).catch(() => undefined);
  const marker: Marker = { ...got, pristine: true, repoId: ref.repoId, scm: repo.scm === 'hg' ? 'hg' : 'git', writeScope: ref.scopes?.writeScope ?? null };
  await writeFile(markerOf(workdir), JSON.stringify(marker));
  return got;
}

/** Stores what ssh learned on a first connection to a host (trust on first use). */
export async function keepLearnedHostKeys(records: Pick<BuildRecords, 'recordKnownHosts'>, repoId: number, hostKeys: HostKeys): Promise<void> {
  const { known, learned } = hostKeys;
  if (learned !== undefined && learned.trim() !== '' && learned !== (known ?? '')) await records.recordKnownHosts(repoId, known ?? null, learned);
}

/** A refused host key says what to do about it. */
export function withHostKeyHint<E>(err: E, repoId: number): E | GitPullError {
  if (!(err instanceof GitPullError) || !/Host key verification failed|REMOTE HOST IDENTIFICATION HAS CHANGED/i.test(err.message)) return err;
  return new GitPullError(
    `${err.message} (the server's SSH host key is not the one this repository trusts, recorded when Sluice first connected: see its ssh_known_hosts; if the key really changed, reset it with PATCH /api/v1/repos/${repoId} {"ssh_known_hosts": null})`,
    err.reason,
  );
}

/**
 * A tree of `ref.commitId` in `workdir`: the one already there when it holds that commit and,
 * for `pristine`, no test has run in it (the push reads only its objects, through a repository
 * of its own); else fetched afresh.
 */
export async function ensureTree(deps: TreeDeps, ref: TreeRef, workdir: string, want: 'pristine' | 'objects', signal: AbortSignal | undefined): Promise<void> {
  const marker = await readMarker(workdir);
  if (marker?.commitId === ref.commitId && (want === 'objects' || marker.pristine)) return;
  await fetchTree(deps, { ...ref, head: ref.commitId }, workdir, signal);
}

/**
 * Tests are about to run in `workdir`: it is no longer pristine, and it becomes the build user's
 * (when tests run as one), so they may write in it.
 */
export async function markUsed(workdir: string, owner?: BuildUser): Promise<void> {
  const marker = await readMarker(workdir);
  if (marker) await writeFile(markerOf(workdir), JSON.stringify({ ...marker, pristine: false }));
  if (owner) await chownTree(workdir, owner);
}

/**
 * `chown -R` without following links (a tree's symlinks point wherever its author liked), and
 * leaving alone files with more than one link: a cache restored by hard links (steps/cache/link.ts)
 * shares its files with the runner's copy, which must stay root's and unwritable by builds. What
 * is the owner's already is not chowned again: in a tree that is an overlay (a cache restored by
 * a mount, cache/overlay.ts) even a chown that changes nothing copies the file up; and a mount
 * inside the tree is left alone.
 */
async function chownTree(dir: string, owner: BuildUser, dev?: number): Promise<void> {
  const info = await lstat(dir);
  if (dev !== undefined && info.dev !== dev) return;
  const mine = (i: { uid: number; gid: number }) => i.uid === owner.uid && i.gid === owner.gid;
  if (!mine(info)) await lchown(dir, owner.uid, owner.gid);
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const child = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      await chownTree(child, owner, info.dev);
      continue;
    }
    const stat = await lstat(child);
    if (!mine(stat) && (!entry.isFile() || stat.nlink === 1)) await lchown(child, owner.uid, owner.gid);
  }
}

/** Where a workspace's removed trees wait for their deletion (see trash.ts). */
const trashOf = (workspaceDir: string) => path.join(workspaceDir, '.trash');
/** This runner's mirrors of the repositories it builds (mirror.ts). */
export const mirrorsDir = (workspaceDir: string) => path.join(workspaceDir, '.mirrors');

/** Frees `workdir`'s name at once (marker first: no marker may claim a half-removed tree); the files go at low priority. */
export async function removeTree(workdir: string): Promise<void> {
  await rm(markerOf(workdir), { force: true });
  await unmountUnder([workdir, homeDir(workdir), layersDir(workdir)]);
  await discard([workdir, homeDir(workdir), layersDir(workdir), indexOf(workdir)], trashOf(path.dirname(workdir)));
}

/** Trees being retired: moved out of their names at once, cleaned and kept (or removed) after. */
const retiringOf = (workspaceDir: string) => path.join(workspaceDir, '.retiring');
/** A retiring tree this old was left by a runner that died while it cleaned it. */
const STALE_RETIRING_MS = 10 * 60_000;

/** A tree taken out of its name (retireTree), its parts under `dir` as `tree`, `home`, `layers`, `index`. */
interface Retiring {
  dir: string;
  marker: Marker | null;
}

/** Trees this process is taking aside now: a lane's end and the sweep may both come for one. */
const taking = new Set<string>();
/** Trees being kept or removed in the background now (retiringSettled). */
const retiring = new Set<Promise<void>>();

/**
 * Frees `workdir`'s name at once, as removeTree does (a step that checks the tree out again, a
 * push, never meets a tree half cleaned), keeping its parts aside for keepOrDiscard. Null when
 * another step of this process is taking it already.
 */
async function takeTree(workdir: string): Promise<Retiring | null> {
  if (taking.has(workdir)) return null;
  taking.add(workdir);
  try {
    const marker = await readMarker(workdir);
    await rm(markerOf(workdir), { force: true });
    await unmountUnder([workdir, homeDir(workdir), layersDir(workdir)]);
    await mkdir(retiringOf(path.dirname(workdir)), { recursive: true, mode: 0o700 });
    const dir = await mkdtemp(path.join(retiringOf(path.dirname(workdir)), `${path.basename(workdir)}-`));
    let tree = false;
    for (const [from, name] of [[workdir, 'tree'], [homeDir(workdir), 'home'], [layersDir(workdir), 'layers'], [indexOf(workdir), 'index']] as const) {
      await rename(from, path.join(dir, name)).then(
        () => (tree ||= name === 'tree'),
        (err: NodeJS.ErrnoException) => {
          if (err.code !== 'ENOENT') throw err;
        },
      );
    }
    // Only a tree that is all there is kept.
    return { dir, marker: tree ? marker : null };
  } finally {
    taking.delete(workdir);
  }
}

/**
 * Keeps a tree taken aside for a later build when it may be (a git tree of a build that may write
 * the cache, whose index the runner has), then removes the rest. The files kept are the
 * checkout's own: under a cache restored by overlay mount, the lower layer the build never wrote.
 */
async function keepOrDiscard(deps: TreeDeps, { dir, marker }: Retiring): Promise<void> {
  const max = deps.keptTrees ?? DEFAULT_KEPT_TREES;
  if (marker?.scm === 'git' && marker.repoId !== undefined && marker.writeScope && max > 0) {
    const base = path.join(dir, 'layers', 'tree', 'base');
    const files = (await lstat(base).catch(() => null))?.isDirectory() ? base : path.join(dir, 'tree');
    const index = path.join(dir, 'index');
    try {
      await cleanKeptTree(files, index);
      await addKeptTree(deps.workspaceDir, { repoId: marker.repoId, scope: marker.writeScope, commitId: marker.commitId, tree: files, index }, max);
    } catch (err) {
      console.warn(`sluice runner: a tree of repository ${marker.repoId} not kept: ${(err as Error).message}`);
    }
  }
  await discard([dir], trashOf(deps.workspaceDir));
}

/** keepOrDiscard, counted in `retiring` until it ends. */
function settle(deps: TreeDeps, taken: Retiring): Promise<void> {
  const done = keepOrDiscard(deps, taken);
  retiring.add(done);
  void done.catch(() => undefined).finally(() => retiring.delete(done));
  return done;
}

/** The build is done with `workdir`: kept for a later build when it may be (kept.ts), else removed. */
export async function retireTree(deps: TreeDeps, workdir: string): Promise<void> {
  const taken = await takeTree(workdir);
  if (taken) await settle(deps, taken);
}

/** retireTree with its cleaning in the background: a lane's end waits only for the tree's name to be free. */
export async function retireTreeLater(deps: TreeDeps, workdir: string): Promise<void> {
  const taken = await takeTree(workdir);
  if (taken) void settle(deps, taken).catch((err: unknown) => console.warn(`sluice runner: retiring ${path.basename(workdir)} failed: ${(err as Error).message}`));
}

/** Resolves once every tree being retired now is kept or removed: a runner that stops waits for them (its workspace may go next). */
export async function retiringSettled(): Promise<void> {
  await Promise.allSettled([...retiring]);
}

/**
 * Removes the trees of sessions that have ended (and of sessions that no longer exist). Runs
 * on every runner from time to time: whichever runner did a session's checkouts cleans them up,
 * and a runner that starts where a dead one left trees cleans those too.
 */
export async function sweepTrees(deps: TreeDeps): Promise<number> {
  const names = await readdir(deps.workspaceDir).catch(() => [] as string[]);
  const bySession = new Map<number, Set<string>>();
  for (const name of names) {
    const m = /^(session-(\d+)(?:-\d+)?)(?:\.json|\.home|\.layers|\.index)?$/.exec(name);
    if (!m) continue;
    const id = Number(m[2]);
    bySession.set(id, (bySession.get(id) ?? new Set()).add(m[1]!));
  }
  await emptyTrash(trashOf(deps.workspaceDir));
  await evictMirrors({ dir: mirrorsDir(deps.workspaceDir), maxBytes: deps.mirrorMaxBytes ?? DEFAULT_MIRROR_MAX_BYTES }, trashOf(deps.workspaceDir));
  await evictKeptTrees(deps.workspaceDir, deps.keptTrees ?? DEFAULT_KEPT_TREES);
  for (const name of await readdir(retiringOf(deps.workspaceDir)).catch(() => [] as string[])) {
    const at = path.join(retiringOf(deps.workspaceDir), name);
    const info = await stat(at).catch(() => null);
    if (info && Date.now() - info.ctimeMs > STALE_RETIRING_MS) await discard([at], trashOf(deps.workspaceDir));
  }
  if (bySession.size === 0) return 0;
  const ended = await deps.records.endedSessions([...bySession.keys()]);
  let gone = 0;
  for (const id of ended) {
    for (const tree of bySession.get(id) ?? []) {
      const workdir = path.join(deps.workspaceDir, tree);
      if (held.has(workdir)) continue;
      // Kept when it may be, else removed with its marker, home, layers and index (a runner that died left them too).
      await retireTree(deps, workdir);
      gone++;
    }
  }
  return gone;
}

/** The repository of a build is gone: nothing to check out, ever. */
export class TreeGoneError extends Error {
  override readonly name = 'TreeGoneError';
}
