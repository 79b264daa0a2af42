/**
 * Registry logins of a repository (issue 35): `PUT /api/v1/repos/:repo/registries/:host
 * {username, password}`, `GET /api/v1/repos/:repo/registries`, `DELETE
 * /api/v1/repos/:repo/registries/:host`. One login per registry host, used to pull the images its
 * builds name (`image:`) by the builds that may have the repository's secrets (never an untrusted
 * pull request, core/trust.ts). The password is sealed with SLUICE_SECRET_KEY and never shown
 * again; a `DOCKER_AUTH_CONFIG` secret (a Docker config.json) works too, these win over it.
 * The rules are app/registries.ts's; this is their HTTP.
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { ApiDeps } from '../../deps';
import { putRegistryLogin, PutLogin, RegistryLogin, registryLoginsOf, registryLoginView, removeRegistryLogin } from '../../../app/registries';
import { loadRepo } from '../../../app/repos';
import { documented, errors, NoBody, RepoParams } from '../../openapi/shapes';

const LoginParams = RepoParams.extend({ host: z.string().describe('the registry host, e.g. ghcr.io or registry.example.com:5000 (docker.io for Docker Hub)') });

export function registerRegistryRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const { pool } = deps;

  app.put<{ Params: { repo: string; host: string } }>('/repos/:repo/registries/:host', documented({ tag: 'registries', summary: 'Set a registry login', description: 'Builds that may have the repository’s secrets pull the images they name from this registry with it.', params: LoginParams, body: PutLogin, response: { 201: RegistryLogin.describe('a new login (never its password)'), 204: NoBody.describe('an existing login replaced'), ...errors(400, 404) } }), async (request, reply) => {
    const repo = await loadRepo(pool, request.params.repo);
    const result = await putRegistryLogin(deps, repo, request.params.host, request.body);
    if (!result.created) return reply.code(204).send();
    return reply.code(201).send(registryLoginView(result.row));
  });

  app.get<{ Params: { repo: string } }>('/repos/:repo/registries', documented({ tag: 'registries', summary: 'List a repository’s registry logins (hosts and users, never passwords)', params: RepoParams, response: { 200: z.array(RegistryLogin), ...errors(404) } }), async (request) => {
    const repo = await loadRepo(pool, request.params.repo);
    return registryLoginsOf(pool, repo);
  });

  app.delete<{ Params: { repo: string; host: string } }>('/repos/:repo/registries/:host', documented({ tag: 'registries', summary: 'Delete a registry login', params: LoginParams, response: { 204: NoBody, ...errors(404) } }), async (request, reply) => {
    await removeRegistryLogin(pool, await loadRepo(pool, request.params.repo), request.params.host);
    return reply.code(204).send();
  });
}
