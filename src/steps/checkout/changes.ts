/**
 * What changed in a checked-out tree since an earlier commit, for selecting the test files a
 * change can affect (issue 40): whether that commit is an ancestor of the tree's (a map recorded
 * there can judge the change), and the files that differ between the two, added, modified or
 * deleted (both sides of a rename). Local only: no network, no key; git and hg run as for a pull
 * (hooks, fsmonitor and the tree's own hg configuration off: tests may have written them).
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

export interface TreeChanges {
  /** Whether `base` is the tree's commit or one of its ancestors (false too when the tree does not have it). */
  isAncestor(base: string): Promise<boolean>;
  /** The files that differ between `base` and the tree's commit, sorted. */
  changedSince(base: string): Promise<string[]>;
}

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
          const out = await runGit(ctx, [...OWNER_ANY, 'diff-tree', '-r', '-z', '--name-only', '--no-renames', '--no-commit-id', base, 'HEAD']);
          if (!out.ok) throw new Error(`git diff-tree ${base.slice(0, 12)} HEAD: ${out.stderr.trim() || 'failed'}`);
          return out.stdout.split('\0').filter((f) => f !== '').sort();
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
        const out = await runHg(ctx, ['status', '--rev', base, '--rev', '.', '--modified', '--added', '--removed', '--no-status', '--print0']);
        if (!out.ok) throw new Error(`hg status --rev ${base.slice(0, 12)}: ${out.stderr.trim() || 'failed'}`);
        return out.stdout.split('\0').filter((f) => f !== '').sort();
      },
    });
  } finally {
    await rm(scratch.dir, { recursive: true, force: true });
  }
}
