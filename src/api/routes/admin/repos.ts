/**
 * `/api/v1/orgs/:org/repos` and `/api/v1/repos/:repo`: repositories, their webhook URL and SSH
 * pull key. `:repo` is the numeric id or `<org>/<name>` (the slash percent-encoded). What a
 * repository is made of and how it changes is app/repos.ts's; this is its HTTP.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { decide } from '../../../core/access';
import { z } from 'zod';
import type { ApiDeps } from '../../deps';
import { loadOrg } from '../../../app/orgs';
import { createRepo, CreateRepo, loadRepo, PatchRepo, Repo, repoView, reposOf, updateRepo } from '../../../app/repos';
import { registerCommitStatusRoutes } from './commitStatuses';
import { documented, errors, OrgParams, RepoParams } from '../../openapi/shapes';

/** Whether the caller may see the trigger keys of the route's organization (api/access). */
const seesKeys = (request: FastifyRequest): boolean => decide(request.principal!, 'maintainer', request.accessOrg!.id, false).allowed;

export function registerRepoRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const { pool, config } = deps;

  app.post<{ Params: { org: string } }>('/orgs/:org/repos', documented({ tag: 'repos', summary: 'Create a repository', params: OrgParams, body: CreateRepo, response: { 201: Repo, ...errors(400, 404, 409) } }), async (request, reply) => {
    const repo = await createRepo(deps, await loadOrg(pool, request.params.org), request.body);
    return reply.code(201).send(repoView(repo, config));
  });

  app.get<{ Params: { org: string } }>('/orgs/:org/repos', documented({ tag: 'repos', summary: 'List an organization’s repositories', params: OrgParams, response: { 200: z.array(Repo), ...errors(404) } }), async (request) => {
    const org = await loadOrg(pool, request.params.org);
    return (await reposOf(pool, org)).map((r) => repoView(r, config, seesKeys(request)));
  });

  app.get<{ Params: { repo: string } }>('/repos/:repo', documented({ tag: 'repos', summary: 'Show a repository', params: RepoParams, response: { 200: Repo, ...errors(404) } }), async (request) => repoView(await loadRepo(pool, request.params.repo), config, seesKeys(request)));

  app.patch<{ Params: { repo: string } }>('/repos/:repo', documented({ tag: 'repos', summary: 'Change a repository’s settings', description: 'Absent fields stay as they are; null clears one.', params: RepoParams, body: PatchRepo, response: { 200: Repo, ...errors(400, 404) } }), async (request) =>
    repoView(await updateRepo(deps, await loadRepo(pool, request.params.repo), request.body), config),
  );

  // The log of a repository's commit statuses lives under it (its branches too: branches.ts).
  registerCommitStatusRoutes(app, deps);
}
