/**
 * `POST /api/v1/github-apps/hooks/:hook`: a GitHub App's one webhook (issue 38), for every
 * installation and repository. In the triggers' scope: the body stays raw, its signature is
 * checked over the bytes as sent (app/githubApps.ts receiveAppHook, with the app's webhook
 * secret). Installation events are followed; a push or pull request of a repository Sluice
 * builds goes down the trigger path as a GitHub hook would (triggers.ts buildFromDelivery).
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { receiveAppHook } from '../../app/githubApps';
import { getProvider } from '../../providers';
import { countTrigger } from '../../metrics/triggers';
import type { ApiDeps } from '../deps';
import { HttpError } from '../http';
import { documented, errors } from '../openapi/shapes';
import { buildFromDelivery, lowerCaseHeaders, rawBody } from './triggers';
import { AppError } from '../../app/errors';

const HookParams = z.object({ hook: z.string().describe('the last part of the app’s webhook URL, as Sluice put it in the manifest') });

const hookDoc = documented({
  tag: 'github-apps',
  summary: 'A GitHub App’s webhook',
  description:
    'GitHub delivers every event of the app’s installations here, signed with the app’s webhook secret (`X-Hub-Signature-256`; 401 otherwise). ' +
    '`installation` and `installation_repositories` keep the installations and their repositories; `push`, `create`, `delete` and `pull_request` ' +
    'of a repository Sluice builds are triggers, answered as `POST /1/github/<KEY>` answers them; anything else is answered 200 with what was done.',
  public: true,
  params: HookParams,
  consumes: ['application/json'],
  response: { 200: z.object({ status: z.literal(0) }).passthrough().describe('followed, ignored, or a trigger accepted'), ...errors(400, 401, 404, 503) },
});

export function registerGitHubAppHookRoutes(scope: FastifyInstance, deps: ApiDeps): void {
  scope.post<{ Params: { hook: string } }>('/api/v1/github-apps/hooks/:hook', hookDoc, async (request, reply) => {
    let outcome;
    try {
      outcome = await receiveAppHook(deps, request.params.hook, lowerCaseHeaders(request), rawBody(request));
    } catch (err) {
      if (err instanceof AppError) {
        if (err.kind === 'unauthorized') countTrigger('github', 'refused');
        throw err;
      }
      // The app and its repositories are read from PostgreSQL: away, the delivery is refused so
      // that GitHub's log shows it failed (and it can be redelivered), never taken and lost.
      request.log.error({ err }, 'GitHub App hook refused: its app or repository could not be read');
      countTrigger('github', 'unavailable');
      throw new HttpError(503, 'unavailable', 'Sluice cannot read its GitHub Apps now; nothing was accepted, redeliver it', undefined, { retryAfterSeconds: 5 });
    }
    if (outcome.kind !== 'trigger') return reply.code(200).send({ status: 0, [outcome.kind]: outcome.what });
    return buildFromDelivery(deps, request, reply, { provider: 'github', adapter: getProvider('github')!, target: outcome.target });
  });
}
