/**
 * Build secrets of a repository: `PUT /api/v1/repos/:repo/secrets/:name {value}`,
 * `GET /api/v1/repos/:repo/secrets`, `DELETE /api/v1/repos/:repo/secrets/:name`.
 *
 * A secret reaches the repository's test processes as the environment variable `name` (over
 * the trigger's `env` of the same name) and is masked as `****` in everything Sluice stores
 * (src/core/mask.ts). Its value is sealed with SLUICE_SECRET_KEY on the way in and never
 * leaves through this API: the list says names, times, and whether the value is long enough
 * (4 characters) to be masked. The rules are app/secrets.ts's; this is their HTTP.
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { ApiDeps } from '../../deps';
import { loadRepo } from '../../../app/repos';
import { putSecret, PutSecret, removeSecret, Secret, secretsOf, secretView } from '../../../app/secrets';
import { documented, errors, NoBody, RepoParams } from '../../openapi/shapes';

const SecretParams = RepoParams.extend({ name: z.string().describe('the environment variable the builds see it as: letters, digits and `_`, not starting with a digit') });

export function registerSecretRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const { pool, config } = deps;

  app.put<{ Params: { repo: string; name: string } }>('/repos/:repo/secrets/:name', documented({ tag: 'secrets', summary: 'Set a build secret', params: SecretParams, body: PutSecret, response: { 201: Secret.describe('a new secret (never its value)'), 204: NoBody.describe('an existing secret replaced'), ...errors(400, 404, 409) } }), async (request, reply) => {
    const repo = await loadRepo(pool, request.params.repo);
    const result = await putSecret(deps, repo, request.params.name, request.body);
    // 201 with the new secret (never its value); 204 when an existing one was replaced.
    if (!result.created) return reply.code(204).send();
    return reply.code(201).send(secretView(result.row, config.secretKey));
  });

  app.get<{ Params: { repo: string } }>('/repos/:repo/secrets', documented({ tag: 'secrets', summary: 'List a repository’s secrets (names, never values)', params: RepoParams, response: { 200: z.array(Secret), ...errors(404) } }), async (request) => {
    const repo = await loadRepo(pool, request.params.repo);
    return secretsOf(deps, repo);
  });

  app.delete<{ Params: { repo: string; name: string } }>('/repos/:repo/secrets/:name', documented({ tag: 'secrets', summary: 'Delete a build secret', params: SecretParams, response: { 204: NoBody, ...errors(404) } }), async (request, reply) => {
    await removeSecret(pool, await loadRepo(pool, request.params.repo), request.params.name);
    return reply.code(204).send();
  });
}
