/**
 * The operator's actions on what the other admin modules create:
 * `DELETE /api/v1/orgs/:org`, `DELETE /api/v1/repos/:repo`, `DELETE /api/v1/repos/:repo/suites/:suite`
 * (`?stopped_by=<who>&force=true`, both optional): the builds under way are stopped first, then
 * the rows go (api/remove.ts); 204, 404, 409 while builds are still stopping, 503.
 * `POST /api/v1/repos/:repo/rotate-key`: a new trigger key; the old webhook URLs stop working at
 * once. `POST /api/v1/repos/:repo/rotate-ssh-key`: a new SSH key pair. Both answer with the
 * repository as GET shows it (the new `webhook_url`, `ssh_public_key`).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { stoppedBy } from '../../../core/access';
import { z } from 'zod';
import { keyHash, newRepoKey, seal } from '../../../crypto/sealed';
import type { RepoRow } from '../../../db/repos';
import { findSuiteOfRepo } from '../../../db/removal';
import { replaceRepoKey, replaceRepoSshKey } from '../../../db/repoKeys';
import { generateRepoKeyPair } from '../../../ssh/keys';
import type { ApiDeps } from '../../deps';
import { parseId } from '../../http';
import { notFound, validate } from '../../../app/errors';
import { stopAndRemove } from '../../remove';
import { loadOrg } from '../../../app/orgs';
import { Repo, repoView } from './repos';
import { loadRepo, reloadRepo } from '../../../app/repos';
import { documented, errors, NoBody, OrgParams, RepoParams, SuiteParams } from '../../openapi/shapes';

const REMOVE_NOTE = 'Builds under way are stopped first (`stopped_by`), then the rows go. 409 while builds are still stopping; `force=true` removes them anyway.';
const removeDoc = (tag: 'orgs' | 'repos' | 'suites', summary: string, params: z.ZodType) =>
  documented({ tag, summary, description: REMOVE_NOTE, params, querystring: RemoveQuery, response: { 204: NoBody, ...errors(400, 404, 409, 503) } });

const RemoveQuery = z.object({
  // Who stops the builds under way (their `stopped_by`), for the admin token, which names nobody;
  // a person's token stops them as that person.
  stopped_by: z.string().trim().min(1).max(200).default('admin'),
  force: z.enum(['true', 'false']).default('false'),
});

export interface RemoveBy {
  stoppedBy: string;
  force?: boolean;
}

const removeBy = (request: FastifyRequest): RemoveBy => {
  const q = validate(RemoveQuery, request.query ?? {}, 'query');
  return { stoppedBy: stoppedBy(request.principal!) ?? q.stopped_by, force: q.force === 'true' };
};

/** Deletes organization `ref` (id or name) with its repositories and webhooks, its builds stopped first. */
export async function removeOrg(deps: ApiDeps, ref: string, by: RemoveBy): Promise<void> {
  const org = await loadOrg(deps.pool, ref);
  if (!(await stopAndRemove(deps, { org: org.id }, { ...by, what: `organization ${org.name}` }))) throw notFound('organization');
}

/** Deletes a repository with its suites, secrets, branches and builds, those under way stopped first. */
export async function removeRepo(deps: ApiDeps, repo: RepoRow, by: RemoveBy): Promise<void> {
  if (!(await stopAndRemove(deps, { repo: repo.id }, { ...by, what: `repository ${repo.org_name}/${repo.name}` }))) throw notFound('repository');
}

/** Deletes suite `id` of a repository with its builds, those under way stopped first. */
export async function removeSuite(deps: ApiDeps, repo: RepoRow, id: number, by: RemoveBy): Promise<void> {
  const suite = await findSuiteOfRepo(deps.pool, repo.id, id);
  if (!suite) throw notFound('suite');
  const what = `the suite of ${repo.org_name}/${repo.name} @ ${suite.branch}`;
  if (!(await stopAndRemove(deps, { suite: suite.id }, { ...by, what }))) throw notFound('suite');
}

/** A new trigger key: the webhook URLs with the old one answer 404 from now on. */
export async function rotateRepoKey({ pool, config }: ApiDeps, repo: RepoRow): Promise<RepoRow> {
  const key = newRepoKey();
  if (!(await replaceRepoKey(pool, repo.id, keyHash(key), seal(config.secretKey, key)))) throw notFound('repository');
  return reloadRepo(pool, repo.id);
}

/** A new SSH key pair, its private half sealed: every fetch and push from now on uses it. */
export async function rotateRepoSshKey({ pool, config }: ApiDeps, repo: RepoRow): Promise<RepoRow> {
  const pair = generateRepoKeyPair(`sluice:${repo.org_name}/${repo.name}`);
  if (!(await replaceRepoSshKey(pool, repo.id, pair.publicKey, seal(config.secretKey, pair.privateKey)))) throw notFound('repository');
  return reloadRepo(pool, repo.id);
}

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
