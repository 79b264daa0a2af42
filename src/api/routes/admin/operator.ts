/**
 * The operator's actions on what the other admin modules create:
 * `DELETE /api/v1/orgs/:org`, `DELETE /api/v1/repos/:repo`, `DELETE /api/v1/repos/:repo/suites/:suite`
 * (`?stopped_by=<who>&force=true`, both optional): the builds under way are stopped first, then
 * the rows go (app/remove.ts); 204, 404, 409 while builds are still stopping, 503.
 * `POST /api/v1/repos/:repo/rotate-key`: a new trigger key; the old webhook URLs stop working at
 * once. `POST /api/v1/repos/:repo/rotate-ssh-key`: a new SSH key pair. Both answer with the
 * repository as GET shows it (the new `webhook_url`, `ssh_public_key`).
 *
 * What each does is decided in app/orgs.ts, app/repos.ts and app/suites.ts; this is their HTTP,
 * and hands the deletes app/remove.ts's stopping.
 */
import { parseId } from '../../../app/errors';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { stoppedBy } from '../../../core/access';
import { z } from 'zod';
import type { ApiDeps } from '../../deps';
import { removalBy, removeOrg, RemoveQuery, type RemoveBy } from '../../../app/orgs';
import { loadRepo, removeRepo, Repo, repoView, rotateRepoKey, rotateRepoSshKey } from '../../../app/repos';
import { removeSuite } from '../../../app/suites';
import { documented, errors, NoBody, OrgParams, RepoParams, SuiteParams } from '../../openapi/shapes';

const REMOVE_NOTE = 'Builds under way are stopped first (`stopped_by`), then the rows go. 409 while builds are still stopping; `force=true` removes them anyway.';
const removeDoc = (tag: 'orgs' | 'repos' | 'suites', summary: string, params: z.ZodType) =>
  documented({ tag, summary, description: REMOVE_NOTE, params, querystring: RemoveQuery, response: { 204: NoBody, ...errors(400, 404, 409, 503) } });

const removeBy = (request: FastifyRequest): RemoveBy => removalBy(request.query ?? {}, stoppedBy(request.principal!));

export function registerOperatorRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const { pool, config } = deps;

  app.delete<{ Params: { org: string } }>('/orgs/:org', removeDoc('orgs', 'Delete an organization with its repositories and webhooks', OrgParams), async (request, reply) => {
    await removeOrg(deps, request.params.org, removeBy(request));
    return reply.code(204).send();
  });

  app.delete<{ Params: { repo: string } }>('/repos/:repo', removeDoc('repos', 'Delete a repository with its suites, secrets and builds', RepoParams), async (request, reply) => {
    await removeRepo(deps, await loadRepo(pool, request.params.repo), removeBy(request));
    return reply.code(204).send();
  });

  app.delete<{ Params: { repo: string; suite: string } }>('/repos/:repo/suites/:suite', removeDoc('suites', 'Delete a suite with its builds', SuiteParams), async (request, reply) => {
    const repo = await loadRepo(pool, request.params.repo);
    await removeSuite(deps, repo, parseId(request.params.suite, 'suite'), removeBy(request));
    return reply.code(204).send();
  });

  app.post<{ Params: { repo: string } }>('/repos/:repo/rotate-key', documented({ tag: 'repos', summary: 'Give a repository a new trigger key', description: 'Webhook URLs with the old key answer 404 from now on.', params: RepoParams, response: { 200: Repo, ...errors(404) } }), async (request) =>
    repoView(await rotateRepoKey(deps, await loadRepo(pool, request.params.repo)), config),
  );

  app.post<{ Params: { repo: string } }>('/repos/:repo/rotate-ssh-key', documented({ tag: 'repos', summary: 'Give a repository a new SSH key pair', params: RepoParams, response: { 200: Repo, ...errors(404) } }), async (request) =>
    repoView(await rotateRepoSshKey(deps, await loadRepo(pool, request.params.repo)), config),
  );
}
