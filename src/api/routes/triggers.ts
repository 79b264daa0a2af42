/**
 * `POST /1/<provider>/<KEY>`: the keyed incoming webhook (spec §4, §5, §7).
 *
 * This scope drops Fastify's body parsers and keeps every body raw, whatever its content type:
 * the provider's parser (pure, src/core) decides what the bytes mean, so a JSON syntax error or
 * an unexpected content type is its 400, in its words.
 */
import type { FastifyInstance } from 'fastify';
import { keyHash, sameDigest } from '../../crypto/sealed';
import { parseTrigger, type TriggerRequest, type TriggerResult } from '../../core/trigger';
import { acceptTrigger, EnqueueFailed } from '../acceptTrigger';
import type { ApiDeps } from '../app';
import { HttpError } from '../http';
import { findRepoByKeyHash } from '../store/repos';
import { findSuiteForBranch } from '../store/suites';

/** Provider path segment → its parser. Each provider folder adds one line here. */
const PROVIDERS: Readonly<Record<string, (req: TriggerRequest) => TriggerResult>> = {
  builds: parseTrigger,
};

export function registerTriggerRoutes(scope: FastifyInstance, deps: ApiDeps): void {
  scope.removeAllContentTypeParsers();
  scope.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));

  scope.post<{ Params: { provider: string; key: string } }>('/1/:provider/:key', async (request, reply) => {
    const { provider, key } = request.params;
    const parse = Object.hasOwn(PROVIDERS, provider) ? PROVIDERS[provider] : undefined;
    if (!parse) throw new HttpError(404, 'unknown provider', 'no such provider');

    // Look up by hash, then compare in constant time: neither step's timing depends on how
    // much of a guessed key was right. Stray whitespace (spec §5) is not part of a key.
    const hash = keyHash(key.trim());
    const repo = await findRepoByKeyHash(deps.pool, hash);
    if (!repo || !sameDigest(repo.key_hash, hash)) throw new HttpError(404, 'not found', 'unknown key');

    const parsed = parse({
      provider,
      contentType: request.headers['content-type'],
      body: request.body as Buffer | undefined,
      query: request.query as Record<string, unknown>,
      repoScm: repo.scm,
    });
    if (!parsed.ok) throw new HttpError(parsed.status, 'invalid trigger', parsed.message, parsed.field);
    const event = parsed.event;

    // Spec §7: no suite for the branch → 422 with the bare text DROPPED; nothing is recorded.
    const suite = await findSuiteForBranch(deps.pool, repo.id, event.branch);
    if (!suite) return reply.code(422).type('text/plain; charset=utf-8').send('DROPPED');

    try {
      const { guid } = await acceptTrigger(deps.pool, deps.enqueue, { repo, suite, event });
      return reply.code(200).send({ status: 0, guid, status_uri: `${deps.config.baseUrl}/ci_events/${guid}/guid` });
    } catch (err) {
      if (!(err instanceof EnqueueFailed)) throw err;
      request.log.error({ err: err.cause, suite: suite.id }, 'enqueue failed; trigger rolled back');
      throw new HttpError(503, 'unavailable', 'could not queue the build; nothing was accepted, try again');
    }
  });
}
