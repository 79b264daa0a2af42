/**
 * What changed in a checked-out tree since an earlier commit, for selecting the test files a
 * change can affect (issue 40): whether that commit is an ancestor of the tree's (a map recorded
 * there can judge the change), and the files that differ between the two, added, modified or
 * deleted (both sides of a rename), and which of them add or remove a name in their directory.
 * Local only: no network, no key; git and hg run as for a pull (hooks, fsmonitor and the tree's
 * own hg configuration off: tests may have written them).
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Scm } from '../../core/types';
import { runGit } from './git';
import { hgContext, runHg } from './hg';
import { makeScratch, type ScmContext } from './scmProcess';

const COMMIT_ID = /^[0-9a-f]{40}$/;
const CHANGES_TIMEOUT_MS = 60_000;
/** The tree may belong to the build user by now; git reads nothing from it but objects here. */
const OWNER_ANY = ['-c', 'safe.directory=*'];

export interface ChangedFiles {
  /** Every file that differs, sorted. */
  changed: string[];
  /** Those added or removed (or, in git, of another kind now: a link for a file): what changes a directory's listing. */
  addedOrRemoved: string[];
}

export interface TreeChanges {
  /** Whether `base` is the tree's commit or one of its ancestors (false too when the tree does not have it). */
  isAncestor(base: string): Promise<boolean>;
  /** The files that differ between `base` and the tree's commit. */
  changedSince(base: string): Promise<ChangedFiles>;
  /** The tree's commit's (first) parent; null for a root commit. */
  parent(): Promise<string | null>;
}

/**
 * `status\0path\0…` (git diff-tree -z --name-status) or `status path\0…` (hg status --print0):
 * statuses are one letter, M for a file modified in place.
 */
function byStatus(entries: Array<[status: string, file: string]>): ChangedFiles {
  const sorted = entries.sort((a, b) => (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
  return { changed: sorted.map(([, f]) => f), addedOrRemoved: sorted.filter(([st]) => st !== 'M').map(([, f]) => f) };
}

const pairs = (fields: string[]): Array<[string, string]> =>
  Array.from({ length: Math.floor(fields.length / 2) }, (_, i) => [fields[2 * i]!, fields[2 * i + 1]!]);

/** Runs `fn` with the changes of the tree at `workdir`, scratch space made and removed around it. */
export async function withTreeChanges<T>(scm: Scm, workdir: string, signal: AbortSignal | undefined, fn: (changes: TreeChanges) => Promise<T>): Promise<T> {
  const scratch = await makeScratch(`${scm}-changes`, '');
  try {
    if (scm === 'git') {
      const ctx: ScmContext = {
        workdir,
        env: { ...scratch.env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', GIT_TERMINAL_PROMPT: '0' },
        timeoutMs: CHANGES_TIMEOUT_MS,
        signal,
        secrets: scratch.secrets,
      };
      return await fn({
        isAncestor: async (base) => COMMIT_ID.test(base) && (await runGit(ctx, [...OWNER_ANY, 'merge-base', '--is-ancestor', base, 'HEAD'])).ok,
        changedSince: async (base) => {
          if (!COMMIT_ID.test(base)) throw new Error(`not a commit id: ${base}`);
          const out = await runGit(ctx, [...OWNER_ANY, 'diff-tree', '-r', '-z', '--name-status', '--no-renames', '--no-commit-id', base, 'HEAD']);
          if (!out.ok) throw new Error(`git diff-tree ${base.slice(0, 12)} HEAD: ${out.stderr.trim() || 'failed'}`);
          return byStatus(pairs(out.stdout.split('\0').slice(0, -1)));
        },
        parent: async () => {
          const out = await runGit(ctx, [...OWNER_ANY, 'rev-parse', '--verify', '--quiet', 'HEAD^']);
          const id = out.stdout.trim();
          return out.ok && COMMIT_ID.test(id) ? id : null;
        },
      });
    }
    // The tree's own hgrc could name hooks or extensions its tests planted: never read.
    await rm(join(workdir, '.hg', 'hgrc'), { force: true });
    const ctx = await hgContext(scratch, workdir, { timeoutMs: CHANGES_TIMEOUT_MS, signal });
    return await fn({
      isAncestor: async (base) => {
        if (!COMMIT_ID.test(base)) return false;
        const out = await runHg(ctx, ['log', '-r', `${base} and ancestors(.)`, '-T', '{node}']);
        return out.ok && out.stdout.trim() === base;
      },
      changedSince: async (base) => {
        if (!COMMIT_ID.test(base)) throw new Error(`not a changeset id: ${base}`);
        const out = await runHg(ctx, ['status', '--rev', base, '--rev', '.', '--modified', '--added', '--removed', '--print0']);
        if (!out.ok) throw new Error(`hg status --rev ${base.slice(0, 12)}: ${out.stderr.trim() || 'failed'}`);
        return byStatus(out.stdout.split('\0').filter((e) => e !== '').map((e) => [e.slice(0, 1), e.slice(2)]));
      },
      parent: async () => {
        const out = await runHg(ctx, ['log', '-r', 'p1(.)', '-T', '{node}']);
        const id = out.stdout.trim();
        // A root changeset's parent is the null revision, all zeros.
        return out.ok && COMMIT_ID.test(id) && !/^0+$/.test(id) ? id : null;
      },
    });
  } finally {
    await rm(scratch.dir, { recursive: true, force: true });
  }
}
