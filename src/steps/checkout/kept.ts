/**
 * Kept trees (issue 49): a runner keeps the checkouts of builds that ended, cleaned, and starts a
 * later build of the same repository from one, so that its checkout writes only the files that
 * differ between the two commits instead of every file of the repository.
 *
 * A kept tree is only ever trusted as far as a cache entry would be (the cache-poisoning rules of
 * cache/index.ts): a tree that a build writing cache scope S used (its branch) serves only builds
 * that may read S (that branch, and pull requests onto it); a tree that a build which may not
 * write used (a fork's pull request) is never kept. Trees never cross repositories.
 *
 * What a build may have left in a tree is undone before the tree is kept (git.ts cleanKeptTree):
 * its `.git` goes whole (its config could name a filter git would run), ignored and untracked
 * files go (`git clean -ffdx`, with a `.git` the runner made), what a submodule's directory holds
 * goes, and the index git wrote at the checkout is refreshed, so that a tracked file whose content
 * the build changed is written again at the next checkout. The pool is the runner's: `.kept` is
 * 0700, and no build reaches a tree while it is kept.
 *
 * Layout: `<workspace>/.kept/<repoId>/<entry>/{tree,index,kept.json}`. An entry is claimed by
 * renaming it (atomic: two checkouts never get the same one).
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { DEFAULT_KEPT_TREES } from '../../config';
import { discard } from '../trash';

interface KeptMeta {
  /** The cache scope (branch) of the build that used the tree. */
  scope: string;
  /** The commit its index describes. */
  commitId: string;
  at: number;
}

export const keptDir = (workspaceDir: string) => path.join(workspaceDir, '.kept');
const repoDir = (workspaceDir: string, repoId: number) => path.join(keptDir(workspaceDir), String(repoId));
const trashOf = (workspaceDir: string) => path.join(workspaceDir, '.trash');

/** A kept tree claimed for a checkout: its files are now at the checkout's place; `index` is git's index of `commitId` for them. */
export interface ClaimedTree {
  index: string;
  commitId: string;
  /** Removes what is left of the entry (its index, once copied). */
  release(): Promise<void>;
}

async function entries(workspaceDir: string, repoId: number): Promise<{ name: string; meta: KeptMeta }[]> {
  const dir = repoDir(workspaceDir, repoId);
  const names = await readdir(dir).catch(() => [] as string[]);
  const found: { name: string; meta: KeptMeta }[] = [];
  for (const name of names.filter((n) => n.startsWith('kept-'))) {
    const meta = await readFile(path.join(dir, name, 'kept.json'), 'utf8').then((t) => JSON.parse(t) as KeptMeta, () => null);
    if (meta) found.push({ name, meta });
  }
  return found;
}

/**
 * Moves a kept tree of `repoId` that a build reading `readScopes` may use to `workdir` (which must
 * not exist): one of its own branch first, then the newest. Null when there is none.
 */
export async function claimKeptTree(workspaceDir: string, repoId: number, readScopes: readonly string[], workdir: string): Promise<ClaimedTree | null> {
  const dir = repoDir(workspaceDir, repoId);
  const usable = (await entries(workspaceDir, repoId))
    .filter((e) => readScopes.includes(e.meta.scope))
    .sort((a, b) => readScopes.indexOf(a.meta.scope) - readScopes.indexOf(b.meta.scope) || b.meta.at - a.meta.at);
  for (const { name, meta } of usable) {
    const claimed = path.join(dir, `claimed-${randomBytes(6).toString('hex')}`);
    try {
      await rename(path.join(dir, name), claimed);
    } catch {
      continue; // another checkout took it first
    }
    try {
      await rename(path.join(claimed, 'tree'), workdir);
    } catch {
      await discard([claimed], trashOf(workspaceDir));
      return null;
    }
    return { index: path.join(claimed, 'index'), commitId: meta.commitId, release: () => rm(claimed, { recursive: true, force: true }) };
  }
  return null;
}

/**
 * Adds `tree` (cleaned, its `index` beside it, both the runner's) to the pool; then the oldest
 * entries beyond `max` go.
 */
export async function addKeptTree(
  workspaceDir: string,
  kept: { repoId: number; scope: string; commitId: string; tree: string; index: string },
  max = DEFAULT_KEPT_TREES,
): Promise<void> {
  await mkdir(keptDir(workspaceDir), { recursive: true, mode: 0o700 });
  const dir = repoDir(workspaceDir, kept.repoId);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const staging = path.join(dir, `staging-${randomBytes(6).toString('hex')}`);
  await mkdir(staging, { mode: 0o700 });
  try {
    await rename(kept.index, path.join(staging, 'index'));
    await rename(kept.tree, path.join(staging, 'tree'));
    await writeFile(path.join(staging, 'kept.json'), JSON.stringify({ scope: kept.scope, commitId: kept.commitId, at: Date.now() } satisfies KeptMeta));
    // Visible to claims only once whole.
    await rename(staging, path.join(dir, `kept-${randomBytes(6).toString('hex')}`));
  } catch (err) {
    await discard([staging], trashOf(workspaceDir));
    throw err;
  }
  await evictKeptTrees(workspaceDir, max);
}

/** A staging or claimed entry this old belongs to no live step (its runner died mid-way). */
const STALE_MS = 15 * 60_000;

/** Removes the oldest kept trees beyond `max`, and entries a runner that died left half made or half claimed. */
export async function evictKeptTrees(workspaceDir: string, max = DEFAULT_KEPT_TREES): Promise<void> {
  const repos = await readdir(keptDir(workspaceDir)).catch(() => [] as string[]);
  const all: { dir: string; at: number }[] = [];
  const stale: string[] = [];
  for (const repo of repos.filter((r) => /^\d+$/.test(r))) {
    const dir = repoDir(workspaceDir, Number(repo));
    for (const e of await entries(workspaceDir, Number(repo))) all.push({ dir: path.join(dir, e.name), at: e.meta.at });
    for (const name of (await readdir(dir).catch(() => [] as string[])).filter((n) => /^(staging|claimed)-/.test(n))) {
      const info = await stat(path.join(dir, name)).catch(() => null);
      if (info && Date.now() - info.ctimeMs > STALE_MS) stale.push(path.join(dir, name));
    }
  }
  all.sort((a, b) => b.at - a.at);
  await discard([...all.slice(max).map((e) => e.dir), ...stale], trashOf(workspaceDir));
}
