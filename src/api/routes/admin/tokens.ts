/**
 * Personal API tokens (issue 25), for scripts and the CLI: `POST /api/v1/tokens {name,
 * read_only?, org?, expires_in_days?}` answers the token once (only its sha256 is kept); `GET`
 * lists the caller's own with when each was last used; `DELETE /:id` revokes one. A token acts as
 * its owner and no more: their roles, narrowed by its scope (read-only, one organization). What
 * each decides is the application's (app/tokens.ts): here only HTTP.
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { ApiToken, apiTokenView, CreateToken, createApiToken, ownTokens, revokeOwnToken } from '../../../app/tokens';
import type { ApiDeps } from '../../deps';
import { documented, errors, IdParams, NoBody } from '../../openapi/shapes';

export function registerTokenRoutes(app: FastifyInstance, { pool }: ApiDeps): void {
  app.post('/tokens', documented({ tag: 'people', summary: 'Make a personal API token', description: 'The token is in this answer only; Sluice keeps its sha256. It acts as you, within its scope.', body: CreateToken, response: { 201: ApiToken.extend({ token: z.string() }), ...errors(400, 409) } }), async (request, reply) => {
    const { row, token } = await createApiToken(pool, request.principal!, request.body ?? {});
    return reply.code(201).send({ ...apiTokenView(row), token });
  });

  app.get('/tokens', documented({ tag: 'people', summary: 'Your personal API tokens', response: { 200: z.array(ApiToken) } }), async (request) => ownTokens(pool, request.principal!));

  app.delete<{ Params: { id: string } }>('/tokens/:id', documented({ tag: 'people', summary: 'Revoke one of your tokens', params: IdParams('token'), response: { 204: NoBody, ...errors(404) } }), async (request, reply) => {
    await revokeOwnToken(pool, request.principal!, request.params.id);
    return reply.code(204).send();
  });
}
