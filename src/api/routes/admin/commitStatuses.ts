/**
 * `GET /api/v1/repos/:repo/statuses`: the log of every attempt to post a repository's commit
 * status (issue 13), newest first. The status settings themselves are taken by
 * `POST /orgs/:org/repos` and `PATCH /repos/:repo` (repos.ts); their rules are app/commitStatuses.ts.
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { ApiDeps } from '../../deps';
import { repoStatusAttempts, StatusPage } from '../../../app/commitStatuses';
import { loadRepo } from '../../../app/repos';
import { described, documented, errors, RepoParams } from '../../openapi/shapes';

export function registerCommitStatusRoutes(app: FastifyInstance, deps: ApiDeps): void {
  app.get<{ Params: { repo: string } }>('/repos/:repo/statuses', documented({ tag: 'repos', summary: 'The log of a repository’s commit statuses', description: 'Every attempt, newest first.', params: RepoParams, querystring: StatusPage, response: { 200: z.array(described('one attempt to post a commit status')), ...errors(400, 404) } }), async (request) =>
    repoStatusAttempts(deps.pool, await loadRepo(deps.pool, request.params.repo), request.query),
  );
}
