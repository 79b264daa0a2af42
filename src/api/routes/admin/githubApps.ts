/**
 * Sluice as a GitHub App (issue 38): the manifest flow (`POST /api/v1/orgs/:org/github-apps/manifest`
 * gives the manifest and where to post it; `POST /api/v1/orgs/:org/github-apps {code, state}`
 * keeps the app GitHub made), the organization's apps with their installations and repositories,
 * activating one of those repositories, and a repository's app (`GET`/`DELETE
 * /api/v1/repos/:repo/github-app`). The rules are app/githubApps.ts's; this is their HTTP.
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import {
  ActivateAppRepo,
  activateAppRepo,
  appOfRepo,
  deactivateAppRepo,
  FinishManifest,
  finishManifest,
  GitHubApp,
  GitHubAppDetail,
  gitHubAppDetail,
  gitHubAppsOf,
  gitHubAppView,
  loadGitHubApp,
  ManifestForm,
  removeGitHubApp,
  RepoApp,
  StartManifest,
  startManifest,
} from '../../../app/githubApps';
import { notFound } from '../../../app/errors';
import { loadOrg } from '../../../app/orgs';
import { loadRepo, Repo, repoView } from '../../../app/repos';
import { nameOf } from '../../../core/access';
import type { ApiDeps } from '../../deps';
import { documented, errors, NoBody, OrgParams, RepoParams } from '../../openapi/shapes';

const AppParams = OrgParams.extend({ app: z.string().describe('Sluice’s id of the app') });

export function registerGitHubAppRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const { pool } = deps;
  const tag = 'github-apps';

  app.post<{ Params: { org: string } }>('/orgs/:org/github-apps/manifest', documented({ tag, summary: 'Start making a GitHub App', description: 'The manifest of Sluice’s app and where a browser posts it (a form with the one field `manifest`). GitHub shows the app to its owner, makes it, and sends the browser to `redirect_url` with a `code`, which `POST /orgs/:org/github-apps` trades for the app.', params: OrgParams, body: StartManifest, response: { 200: ManifestForm, ...errors(400, 404) } }), async (request) =>
    startManifest(deps, await loadOrg(pool, request.params.org), request.body),
  );

  app.post<{ Params: { org: string } }>('/orgs/:org/github-apps', documented({ tag, summary: 'Keep the GitHub App GitHub made', description: 'Trades the manifest flow’s `code` (good for an hour, once) for the app’s id, private key and webhook secret, kept sealed and never shown again.', params: OrgParams, body: FinishManifest, response: { 201: GitHubApp, ...errors(400, 404, 409, 502) } }), async (request, reply) => {
    const org = await loadOrg(pool, request.params.org);
    const made = await finishManifest(deps, org, request.body, request.principal ? nameOf(request.principal) : null);
    return reply.code(201).send(gitHubAppView(deps, made));
  });

  app.get<{ Params: { org: string } }>('/orgs/:org/github-apps', documented({ tag, summary: 'List an organization’s GitHub Apps', params: OrgParams, response: { 200: z.array(GitHubApp), ...errors(404) } }), async (request) =>
    gitHubAppsOf(deps, await loadOrg(pool, request.params.org)),
  );

  app.get<{ Params: { org: string; app: string } }>('/orgs/:org/github-apps/:app', documented({ tag, summary: 'A GitHub App, its installations and their repositories', description: 'As the app’s webhook last said (`installation`, `installation_repositories`); each repository with the Sluice repository building it.', params: AppParams, response: { 200: GitHubAppDetail, ...errors(404) } }), async (request) => {
    const org = await loadOrg(pool, request.params.org);
    return gitHubAppDetail(deps, await loadGitHubApp(deps, org, request.params.app));
  });

  app.delete<{ Params: { org: string; app: string } }>('/orgs/:org/github-apps/:app', documented({ tag, summary: 'Forget a GitHub App', description: 'Its repositories stop building through it (they and their builds stay). The app itself is GitHub’s: delete it there too.', params: AppParams, response: { 204: NoBody, ...errors(404) } }), async (request, reply) => {
    await removeGitHubApp(deps, await loadOrg(pool, request.params.org), request.params.app);
    return reply.code(204).send();
  });

  app.post<{ Params: { org: string; app: string } }>('/orgs/:org/github-apps/:app/repos', documented({ tag, summary: 'Build one of the app’s repositories', description: 'GitHub is asked for the repository with a token of the installation for it alone; the Sluice repository is made, pulled over HTTPS with a read-only token minted per checkout, and reported through check runs. Activating again gives the same repository.', params: AppParams, body: ActivateAppRepo, response: { 201: Repo, ...errors(400, 403, 404, 409, 502) } }), async (request, reply) => {
    const org = await loadOrg(pool, request.params.org);
    const repo = await activateAppRepo(deps, org, await loadGitHubApp(deps, org, request.params.app), request.body);
    return reply.code(201).send(repoView(repo, deps.config));
  });

  app.get<{ Params: { repo: string } }>('/repos/:repo/github-app', documented({ tag, summary: 'The GitHub App a repository builds through', params: RepoParams, response: { 200: RepoApp, ...errors(404) } }), async (request) => {
    const found = await appOfRepo(deps, await loadRepo(pool, request.params.repo));
    if (!found) throw notFound('GitHub App of this repository');
    return found;
  });

  app.delete<{ Params: { repo: string } }>('/repos/:repo/github-app', documented({ tag, summary: 'Stop building a repository through its GitHub App', description: 'No more installation tokens or check runs for it; the repository and its builds stay.', params: RepoParams, response: { 204: NoBody, ...errors(404) } }), async (request, reply) => {
    await deactivateAppRepo(deps, await loadRepo(pool, request.params.repo));
    return reply.code(204).send();
  });
}
