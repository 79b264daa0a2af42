/**
 * Hosting-site connections (issue 38): `POST/GET /api/v1/orgs/:org/connections`, `DELETE
 * …/connections/:connection`, the site's repositories `GET …/connections/:connection/repos` and
 * activating one `POST …/connections/:connection/repos {site_repo_id}`; a repository's link
 * `GET /api/v1/repos/:repo/connection`, `POST …/connection/repair`, `DELETE …/connection`
 * (deactivate); a new token, `PUT …/connections/:connection/token`. The rules are app/connections.ts's; this is their HTTP.
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { ApiDeps } from '../../deps';
import {
  ActivateRepo,
  activateRepo,
  Connection,
  connectionOf,
  connectionsOf,
  connectionView,
  CreateConnection,
  createConnection,
  deactivateRepo,
  loadConnection,
  removeConnection,
  repairRepo,
  ReplaceToken,
  replaceToken,
  RepoConnection,
  repoConnection,
  SiteRepository,
  siteReposOf,
} from '../../../app/connections';
import { loadOrg } from '../../../app/orgs';
import { loadRepo, Repo, repoView } from '../../../app/repos';
import { nameOf } from '../../../core/access';
import { documented, errors, NoBody, OrgParams, RepoParams } from '../../openapi/shapes';

const ConnectionParams = OrgParams.extend({ connection: z.string().describe('the connection’s id') });

export function registerConnectionRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const { pool } = deps;

  app.post<{ Params: { org: string } }>('/orgs/:org/connections', documented({ tag: 'connections', summary: 'Connect a hosting site', description: 'The site must accept the token and say whose it is. The token is sealed and never shown again.', params: OrgParams, body: CreateConnection, response: { 201: Connection, ...errors(400, 404, 409, 502) } }), async (request, reply) => {
    const org = await loadOrg(pool, request.params.org);
    const row = await createConnection(deps, org, request.body, request.principal ? nameOf(request.principal) : null);
    return reply.code(201).send(connectionView(row));
  });

  app.get<{ Params: { org: string } }>('/orgs/:org/connections', documented({ tag: 'connections', summary: 'List an organization’s site connections', params: OrgParams, response: { 200: z.array(Connection), ...errors(404) } }), async (request) =>
    connectionsOf(pool, await loadOrg(pool, request.params.org)),
  );

  app.delete<{ Params: { org: string; connection: string } }>('/orgs/:org/connections/:connection', documented({ tag: 'connections', summary: 'Delete a site connection', description: 'Its repositories and their builds stay, and so do the webhooks and deploy keys at the site: deactivate a repository first to remove them.', params: ConnectionParams, response: { 204: NoBody, ...errors(404) } }), async (request, reply) => {
    await removeConnection(pool, await loadOrg(pool, request.params.org), request.params.connection);
    return reply.code(204).send();
  });

  app.put<{ Params: { org: string; connection: string } }>('/orgs/:org/connections/:connection/token', documented({ tag: 'connections', summary: 'Replace a connection’s token', description: 'When the old one expired or was revoked: the site must accept the new one as the same account. The repositories the connection activated post their commit statuses with it.', params: ConnectionParams, body: ReplaceToken, response: { 200: Connection, ...errors(400, 404, 409, 502) } }), async (request) => {
    const org = await loadOrg(pool, request.params.org);
    const c = await loadConnection(pool, org, request.params.connection);
    await replaceToken(deps, c, request.body);
    return connectionOf(pool, org, c.id);
  });

  app.get<{ Params: { org: string; connection: string } }>('/orgs/:org/connections/:connection/repos', documented({ tag: 'connections', summary: 'The site’s repositories the connection’s account can see', description: 'Each says whether the account administers it (only then can it be activated) and which Sluice repository was activated from it.', params: ConnectionParams, response: { 200: z.array(SiteRepository), ...errors(400, 404, 502) } }), async (request) => {
    const org = await loadOrg(pool, request.params.org);
    return siteReposOf(deps, await loadConnection(pool, org, request.params.connection));
  });

  app.post<{ Params: { org: string; connection: string } }>('/orgs/:org/connections/:connection/repos', documented({ tag: 'connections', summary: 'Activate a site’s repository', description: 'Makes the Sluice repository (or finds the one activated from it before), then at the site a webhook signed with a fresh secret and a read-only deploy key; commit statuses go back through the connection. What the site refuses is named; what was made stays, and repair finishes it.', params: ConnectionParams, body: ActivateRepo, response: { 201: Repo, ...errors(400, 403, 404, 409, 502) } }), async (request, reply) => {
    const org = await loadOrg(pool, request.params.org);
    const repo = await activateRepo(deps, org, await loadConnection(pool, org, request.params.connection), request.body);
    return reply.code(201).send(repoView(repo, deps.config));
  });

  app.get<{ Params: { repo: string } }>('/repos/:repo/connection', documented({ tag: 'connections', summary: 'A repository’s site connection and its health', description: 'Whether the webhook and deploy key are at the site now, when a hook last arrived, how many were refused for a bad signature, and the site’s own log of its last delivery where it keeps one.', params: RepoParams, response: { 200: RepoConnection, ...errors(404) } }), async (request) =>
    repoConnection(deps, await loadRepo(pool, request.params.repo)),
  );

  app.post<{ Params: { repo: string } }>('/repos/:repo/connection/repair', documented({ tag: 'connections', summary: 'Make again what is missing at the site', description: 'Idempotent: the webhook and deploy key are made where missing (a webhook with an old URL replaced), and a rename or transfer at the site is followed.', params: RepoParams, response: { 200: Repo, ...errors(400, 403, 404, 502) } }), async (request) =>
    repoView(await repairRepo(deps, await loadRepo(pool, request.params.repo)), deps.config),
  );

  app.delete<{ Params: { repo: string } }>('/repos/:repo/connection', documented({ tag: 'connections', summary: 'Deactivate: remove the webhook and deploy key at the site', description: 'The repository, its builds and its link stay; activating or repairing makes them again.', params: RepoParams, response: { 204: NoBody, ...errors(400, 403, 404, 502) } }), async (request, reply) => {
    await deactivateRepo(deps, await loadRepo(pool, request.params.repo));
    return reply.code(204).send();
  });
}
