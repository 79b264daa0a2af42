/**
 * `/api/v1/repos/:repo/branches`: the Branches page (spec §4): every branch Sluice has heard of
 * (a trigger named it, a toggle was set, or a suite exists for it) with its toggles.
 *
 * - `GET .../branches`: `[{name, enabled, hidden, locked_visible, has_suite}]`, by name.
 * - `PUT .../branches/:branch {enabled?, locked_visible?}`: sets the toggles given, creating the
 *   row when there is none; answers the branch. A branch switched off drops its triggers (422
 *   `DROPPED`); a branch locked visible is never hidden by a branch-delete, and locking it
 *   shows it. `:branch` is percent-encoded (`feature%2Fx`); a leading `refs/heads/` is dropped.
 *
 * The rules are app/branches.ts's; this is their HTTP.
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { ApiDeps } from '../../deps';
import { Branch, branchesOf, branchView, PutBranch, setBranch, showBranch } from '../../../app/branches';
import { loadRepo } from '../../../app/repos';
import { documented, errors, RepoParams } from '../../openapi/shapes';

const BranchParams = RepoParams.extend({ branch: z.string().describe('the branch name, percent-encoded (`feature%2Fx`)') });

export function registerBranchRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const { pool } = deps;

  app.get<{ Params: { repo: string } }>('/repos/:repo/branches', documented({ tag: 'repos', summary: 'List a repository’s branches', params: RepoParams, response: { 200: z.array(Branch), ...errors(404) } }), async (request) => {
    const repo = await loadRepo(pool, request.params.repo);
    return (await branchesOf(pool, repo)).map(branchView);
  });

  app.get<{ Params: { repo: string; branch: string } }>('/repos/:repo/branches/:branch', documented({ tag: 'repos', summary: 'Show a branch', params: BranchParams, response: { 200: Branch, ...errors(400, 404) } }), async (request) => {
    const repo = await loadRepo(pool, request.params.repo);
    return branchView(await showBranch(pool, repo, request.params.branch));
  });

  app.put<{ Params: { repo: string; branch: string } }>('/repos/:repo/branches/:branch', documented({ tag: 'repos', summary: 'Switch a branch on or off, or lock it visible', params: BranchParams, body: PutBranch, response: { 200: Branch, ...errors(400, 404) } }), async (request) =>
    branchView(await setBranch(pool, await loadRepo(pool, request.params.repo), request.params.branch, request.body)),
  );
}
