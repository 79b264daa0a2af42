/**
 * `/api/v1/repos/:repo/branches`: the Branches page (spec §4): every branch Sluice has heard of
 * (a trigger named it, a toggle was set, or a suite exists for it) with its toggles.
 *
 * - `GET .../branches`: `[{name, enabled, hidden, locked_visible, has_suite}]`, by name.
 * - `PUT .../branches/:branch {enabled?, locked_visible?}`: sets the toggles given, creating the
 *   row when there is none; answers the branch. A branch switched off drops its triggers (422
 *   `DROPPED`); a branch locked visible is never hidden by a branch-delete, and locking it
 *   shows it. `:branch` is percent-encoded (`feature%2Fx`); a leading `refs/heads/` is dropped.
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { ApiDeps } from '../../deps';
import { validate } from '../../../app/errors';
import { findBranchView, listBranches, updateBranch, type BranchListRow } from '../../../db/branches';
import type { RepoRow } from '../../../db/repos';
import type { Db } from '../../../db/transaction';
import { documented, errors, RepoParams } from '../../openapi/shapes';
import { branchName } from './fields';
import { loadRepo } from '../../../app/repos';

const PutBranch = z.strictObject({
  enabled: z.boolean().optional(),
  locked_visible: z.boolean().optional(),
}).meta({ examples: [{ enabled: false }, { locked_visible: true }] });

export const Branch = z.object({ name: z.string(), enabled: z.boolean(), hidden: z.boolean(), locked_visible: z.boolean(), has_suite: z.boolean() });
const BranchParams = RepoParams.extend({ branch: z.string().describe('the branch name, percent-encoded (`feature%2Fx`)') });

export const branchView = (b: BranchListRow): z.output<typeof Branch> => ({
  name: b.name,
  enabled: b.enabled,
  hidden: b.hidden,
  locked_visible: b.locked_visible,
  has_suite: b.has_suite,
});

/**
 * Sets the toggles of `branch` of `repo` from a body of PUT /repos/:repo/branches/:branch,
 * creating its row when there is none: the branch as it is now, or a 400 naming a bad field.
 */
export async function setBranch(pool: Db, repo: RepoRow, branch: string, input: unknown): Promise<BranchListRow> {
  const name = validate(branchName, branch, 'branch');
  const body = validate(PutBranch, input ?? {});
  await updateBranch(pool, repo.id, name, body);
  return findBranchView(pool, repo.id, name);
}

export function registerBranchRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const { pool } = deps;

  app.get<{ Params: { repo: string } }>('/repos/:repo/branches', documented({ tag: 'repos', summary: 'List a repository’s branches', params: RepoParams, response: { 200: z.array(Branch), ...errors(404) } }), async (request) => {
    const repo = await loadRepo(pool, request.params.repo);
    return (await listBranches(pool, repo.id)).map(branchView);
  });

  app.get<{ Params: { repo: string; branch: string } }>('/repos/:repo/branches/:branch', documented({ tag: 'repos', summary: 'Show a branch', params: BranchParams, response: { 200: Branch, ...errors(400, 404) } }), async (request) => {
    const repo = await loadRepo(pool, request.params.repo);
    const name = validate(branchName, request.params.branch, 'branch');
    return branchView(await findBranchView(pool, repo.id, name));
  });

  app.put<{ Params: { repo: string; branch: string } }>('/repos/:repo/branches/:branch', documented({ tag: 'repos', summary: 'Switch a branch on or off, or lock it visible', params: BranchParams, body: PutBranch, response: { 200: Branch, ...errors(400, 404) } }), async (request) =>
    branchView(await setBranch(pool, await loadRepo(pool, request.params.repo), request.params.branch, request.body)),
  );
}
