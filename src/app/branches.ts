/**
 * Branches, as the JSON API and the web pages both decide about them (spec §4): every branch
 * Sluice has heard of (a trigger named it, a toggle was set, or a suite exists for it) with its
 * toggles. A branch switched off drops its triggers; a branch locked visible is never hidden by
 * a branch-delete, and locking it shows it. A name's leading `refs/heads/` is dropped.
 */
import { z } from 'zod';
import { findBranchView, listBranches, updateBranch, type BranchListRow } from '../db/branches';
import type { RepoRow } from '../db/repos';
import { lastBuildsOfRepo, type BranchLastBuild } from '../db/sessions';
import type { Db } from '../db/transaction';
import { validate } from './errors';
import { branchName } from './fields';

export const PutBranch = z.strictObject({
  enabled: z.boolean().optional(),
  locked_visible: z.boolean().optional(),
}).meta({ examples: [{ enabled: false }, { locked_visible: true }] });

export const Branch = z.object({ name: z.string(), enabled: z.boolean(), hidden: z.boolean(), locked_visible: z.boolean(), has_suite: z.boolean() });

export const branchView = (b: BranchListRow): z.output<typeof Branch> => ({
  name: b.name,
  enabled: b.enabled,
  hidden: b.hidden,
  locked_visible: b.locked_visible,
  has_suite: b.has_suite,
});

/** A repository's branches, by name. */
export const branchesOf = (db: Db, repo: RepoRow): Promise<BranchListRow[]> => listBranches(db, repo.id);

/** Branch `branch` of `repo` as a path names it (known or not: then with the defaults), or invalid for a bad name. */
export async function showBranch(db: Db, repo: RepoRow, branch: string): Promise<BranchListRow> {
  return findBranchView(db, repo.id, validate(branchName, branch, 'branch'));
}

/** Every branch of `repo` with the last build of its suite, if it has one: the Branches page. */
export async function branchesWithLastBuild(db: Db, repo: RepoRow): Promise<{ branch: BranchListRow; last: BranchLastBuild | undefined }[]> {
  const [branches, builds] = await Promise.all([listBranches(db, repo.id), lastBuildsOfRepo(db, repo.id)]);
  const last = new Map(builds.map((b) => [b.branch, b]));
  return branches.map((branch) => ({ branch, last: last.get(branch.name) }));
}

/**
 * Sets the toggles of `branch` of `repo` from a body of PUT /repos/:repo/branches/:branch,
 * creating its row when there is none: the branch as it is now, or invalid naming a bad field.
 */
export async function setBranch(pool: Db, repo: RepoRow, branch: string, input: unknown): Promise<BranchListRow> {
  const name = validate(branchName, branch, 'branch');
  const body = validate(PutBranch, input ?? {});
  await updateBranch(pool, repo.id, name, body);
  return findBranchView(pool, repo.id, name);
}
