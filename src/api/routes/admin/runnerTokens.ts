/**
 * `/api/v1/runner-tokens`: the tokens runners that hold no keys authenticate with (issue 23).
 * `POST` makes one (`name`, and `org` for an organization's own runners) and answers the
 * token, once: only its sha256 is kept. `GET` lists them with what their runner last said (when,
 * which version, which queues) and how many jobs it is running now (`busy`, 0 is idle).
 * `DELETE /:id` revokes one: its runner's next call is refused and the jobs it was running are
 * failed at once, to be tried again on another runner. What each decides is the application's
 * (app/runners.ts): here only HTTP.
 */
import { parseId } from '../../../app/errors';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { CreateRunnerToken, createRunnerToken, revokeRunnerToken, RunnerToken, runnerTokens, runnerTokenView } from '../../../app/runners';
import type { ApiDeps } from '../../deps';
import { documented, errors, IdParams, NoBody } from '../../openapi/shapes';

// The runner protocol (routes/runnerApi.ts) still finds the hash here; its home is app/runners.ts.

export function registerRunnerTokenRoutes(app: FastifyInstance, { pool }: ApiDeps): void {
  app.post('/runner-tokens', documented({ tag: 'runners', summary: 'Make a runner token', description: 'The token is in this answer only; Sluice keeps its sha256.', body: CreateRunnerToken, response: { 201: RunnerToken.extend({ token: z.string() }), ...errors(400, 409) } }), async (request, reply) => {
    const { row, token } = await createRunnerToken(pool, request.body);
    return reply.code(201).send({ ...runnerTokenView(row), token });
  });

  app.get('/runner-tokens', documented({ tag: 'runners', summary: 'List runner tokens', response: { 200: z.object({ runner_tokens: z.array(RunnerToken) }) } }), async () => ({ runner_tokens: await runnerTokens(pool) }));

  app.delete<{ Params: { id: string } }>('/runner-tokens/:id', documented({ tag: 'runners', summary: 'Revoke a runner token', description: 'Its runner’s next call is refused; the jobs it was running fail at once, to be tried again elsewhere.', params: IdParams('runner token'), response: { 204: NoBody, ...errors(404) } }), async (request, reply) => {
    await revokeRunnerToken(pool, parseId(request.params.id, 'runner token'));
    return reply.code(204).send();
  });
}
