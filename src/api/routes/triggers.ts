/**
 * `POST /1/<provider>/<KEY>`: the keyed incoming webhook (spec §4, §5, §7).
 *
 * This scope drops Fastify's body parsers and keeps every body raw, whatever its content type:
 * a signature is checked over the bytes as sent, and providers/parse reads them by content
 * type the same way for every path, so a JSON syntax error or an unexpected content type is a
 * 400 in the trigger's words.
 *
 * Every path is an adapter of the registry (src/providers): `builds` for the generic formats,
 * then the hosting providers. One way through for all: find the adapter (else 404) and the
 * repository by key (else 404), check the signature when the repository has a webhook secret
 * (optional beyond the spec: else 401; and then no `?branch=`, which the signature does not
 * cover: 400), parse the delivery (providers `parseDelivery`). Its
 * `ignore` (a GitHub ping, a pull-request action Sluice does not build on) answers 200
 * `{status: 0, ignored: <why>}` and records nothing; an event Sluice does not act on answers
 * 422 `{error: "hook misconfigured", field, message}`; a malformed one 400.
 *
 * Then the commit-selection rules decide (acceptTrigger): 200 `{status, guid, status_uri}` for
 * a build or a skip (both recorded, a moment later, by the workflow Temporal hands them to),
 * 422 `DROPPED` when nothing is left (nothing recorded). The repository and its suites come from
 * what the API knows (api/triggerKnowledge.ts): PostgreSQL may be away; only an API that has
 * never read them answers 503, with Retry-After, as it does when Temporal cannot take the trigger.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TriggerTarget } from '../../db/triggerKnowledge';
import type { ProviderAdapter } from '../../providers/types';
import { checkHookSignature } from '../../core/hookSignature';
import { sameDigest } from '../../crypto/compare';
import { keyHash, unseal } from '../../crypto/sealed';
import { z } from 'zod';
import { getProvider, parseDelivery, providers } from '../../providers';
import { JsonTrigger } from '../../providers/generic/json';
import { acceptTrigger, EnqueueFailed } from '../acceptTrigger';
import type { ApiDeps } from '../deps';
import { HttpError } from '../http';
import { documented, ErrorBody, errors } from '../openapi/shapes';
import { countTrigger } from '../../metrics/triggers';
import { TRIGGER_GUID } from '../../tracing/attributes';
import { annotateActiveSpan } from '../../tracing/spans';
import { KnowledgeUnavailable } from '../triggerKnowledge';

const TriggerParams = z.object({
  provider: z.enum(Object.keys(providers) as [string, ...string[]]).describe('`builds` for the generic formats, else the hosting provider whose webhook this is'),
  key: z.string().describe('the repository’s key, from its `webhook_url`'),
});

const Accepted = z.union([
  z
    .object({ status: z.literal(0), guid: z.uuid(), status_uri: z.url().describe('GET it to see what became of the trigger') })
    .describe('accepted: a build or a skip, recorded'),
  z.object({ status: z.literal(0), ignored: z.string() }).describe('an event Sluice does not build on (a ping, say): nothing recorded'),
]);

const triggerDoc = documented({
  tag: 'triggers',
  summary: 'Trigger a build',
  description:
    'The keyed incoming webhook (spec §4, §7). `builds` takes an empty body, the generic JSON shown here (also sent by the Mercurial changegroup hook) ' +
    'or the same fields form-encoded; `?branch=` names the branch too. The other providers take their own webhook payloads as they send them. ' +
    'With a webhook secret set on the repository, the body must be signed with it (401 otherwise).',
  public: true,
  params: TriggerParams,
  body: JsonTrigger,
  consumes: ['application/json', 'application/x-www-form-urlencoded'],
  response: {
    200: Accepted.describe('accepted or ignored'),
    ...errors(400, 401, 404, 503),
    422: ErrorBody.describe('nothing to build: the plain text `DROPPED` (no suite for the branch, branch off, ...), or JSON for a hook misconfigured'),
  },
});

export function registerTriggerRoutes(scope: FastifyInstance, deps: ApiDeps): void {
  scope.removeAllContentTypeParsers();
  scope.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));

  scope.post<{ Params: { provider: string; key: string } }>('/1/:provider/:key', triggerDoc, async (request, reply) => {
    const { provider, key } = request.params;
    const adapter = getProvider(provider);
    if (!adapter) throw new HttpError(404, 'unknown provider', 'no such provider');

    // Look up by hash, then compare in constant time: neither step's timing depends on how
    // much of a guessed key was right. Stray whitespace (spec §5) is not part of a key.
    const hash = keyHash(key.trim());
    let target;
    try {
      target = await deps.knowledge.target(hash);
    } catch (err) {
      if (!(err instanceof KnowledgeUnavailable)) throw err;
      request.log.error({ err: err.cause }, 'trigger refused: PostgreSQL away and the repositories not read yet');
      countTrigger(provider, 'unavailable');
      throw new HttpError(503, 'unavailable', 'Sluice cannot read its repositories yet; nothing was accepted, try again', undefined, { retryAfterSeconds: 5 });
    }
    if (!target || !sameDigest(target.repo.key_hash, hash)) throw new HttpError(404, 'not found', 'unknown key');
    const { repo } = target;

    // Optional beyond the spec: with a webhook secret, the trigger must be signed with it.
    if (repo.webhook_secret_sealed !== null) {
      const check = checkHookSignature(unseal(deps.config.secretKey, repo.webhook_secret_sealed), lowerCaseHeaders(request), rawBody(request));
      if (!check.ok) {
        deps.hookHealth?.refused(repo.id);
        countTrigger(provider, 'refused');
        throw new HttpError(401, 'unauthorized', check.message, check.field);
      }
      // The signature covers the body only: a captured signed trigger must not be replayable
      // for another branch by adding ?branch=.
      if ((request.query as Record<string, unknown>).branch !== undefined) {
        throw new HttpError(400, 'invalid trigger', 'with a webhook secret, name the branch in the signed body: ?branch= is not covered by the signature', 'branch');
      }
    }

    return buildFromDelivery(deps, request, reply, { provider, adapter, target });
  });
}

/**
 * A delivery whose repository is known and whose signature (if any) verified: parsed by its
 * provider, decided by the commit-selection rules, answered as the trigger path answers (the
 * keyed trigger route and a GitHub App's webhook both end here).
 */
export async function buildFromDelivery(
  deps: ApiDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  { provider, adapter, target }: { provider: string; adapter: ProviderAdapter; target: TriggerTarget },
): Promise<FastifyReply> {
  const { repo } = target;
  deps.hookHealth?.arrived(repo.id);
  const parsed = parseDelivery(adapter, {
    contentType: request.headers['content-type'],
    body: request.body as Buffer | undefined,
    headers: lowerCaseHeaders(request),
    query: request.query as Record<string, unknown>,
    repoScm: repo.scm,
  });
  if (!parsed.ok) throw new HttpError(parsed.status, parsed.status === 422 ? 'hook misconfigured' : 'invalid trigger', parsed.message, parsed.field);
  if ('ignore' in parsed) {
    countTrigger(provider, 'ignore');
    return reply.code(200).send({ status: 0, ignored: parsed.ignore });
  }

  let accepted;
  try {
    accepted = await acceptTrigger(deps, { target, provider, events: parsed.events });
  } catch (err) {
    if (!(err instanceof EnqueueFailed) && !(err instanceof KnowledgeUnavailable)) throw err;
    request.log.error({ err: err.cause, repo: repo.id }, 'trigger refused: it could not be handed to Temporal');
    countTrigger(provider, 'unavailable');
    throw new HttpError(503, 'unavailable', 'could not queue the build; nothing was accepted, try again', undefined, { retryAfterSeconds: 5 });
  }
  countTrigger(provider, accepted.decision, accepted.recorded ? accepted.reason : (accepted.reasons[0] ?? null));
  if (!accepted.recorded) {
    // Spec §7: the bare text DROPPED; the reason goes to the log only.
    request.log.info({ repo: repo.id, reasons: accepted.reasons }, 'trigger dropped');
    return reply.code(422).type('text/plain; charset=utf-8').send('DROPPED');
  }
  const { guid } = accepted;
  if (accepted.decision === 'skip') request.log.info({ repo: repo.id, guid, reason: accepted.reason }, 'trigger skipped');
  annotateActiveSpan({ [TRIGGER_GUID]: guid });
  deps.pending?.remember(guid, { repo: repo.id, provider, decision: accepted.decision, reason: accepted.reason, branch: parsed.events[0].branch });
  return reply.code(200).send({ status: 0, guid, status_uri: `${deps.config.baseUrl}/ci_events/${guid}/guid` });
}

export function lowerCaseHeaders(request: FastifyRequest): Record<string, string | undefined> {
  const headers: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(request.headers)) {
    headers[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  }
  return headers;
}

export function rawBody(request: FastifyRequest): Buffer {
  return Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
}
