/**
 * `POST /1/<provider>/<KEY>`: the keyed incoming webhook (spec §4, §5, §7).
 *
 * This scope drops Fastify's body parsers and keeps every body raw, whatever its content type:
 * the parser of the addressed path decides what the bytes mean, so a JSON syntax error or an
 * unexpected content type is its 400, in its words.
 *
 * - `builds`: the generic formats (core/trigger `parseTrigger`).
 * - every provider of the registry (src/providers): the body is read as JSON
 *   (`application/json`, `*+json`) or as a form (`application/x-www-form-urlencoded`; GitHub,
 *   Gitea and Gogs can post `payload=<json>`), and handed to the adapter with the lower-cased
 *   headers and `?branch=`. Its triggers become TriggerEvents (core/trigger
 *   `fromProviderTrigger`); `ignore` (a GitHub ping, a pull-request action Sluice does not build
 *   on) answers 200 `{status: 0, ignored: <why>}` and records nothing; an event Sluice does not
 *   act on answers 422 `{error: "hook misconfigured", field, message}`; a malformed one 400.
 *
 * A repository with a webhook secret (optional beyond the spec) first needs the trigger signed
 * with it (core/hookSignature): else 401.
 *
 * Then the commit-selection rules decide (acceptTrigger): 200 `{status, guid, status_uri}` for
 * a build or a skip (both recorded), 422 `DROPPED` when nothing is left (nothing recorded).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { checkHookSignature } from '../../core/hookSignature';
import { keyHash, sameDigest, unseal } from '../../crypto/sealed';
import { fromProviderTrigger, mediaType, parseTrigger } from '../../core/trigger';
import type { TriggerEvent } from '../../core/types';
import { getProvider } from '../../providers';
import type { ProviderAdapter } from '../../providers/types';
import { acceptTrigger, EnqueueFailed } from '../acceptTrigger';
import type { ApiDeps } from '../app';
import { HttpError } from '../http';
import { findRepoByKeyHash, type RepoRow } from '../../db/repos';

const GENERIC = 'builds';

export function registerTriggerRoutes(scope: FastifyInstance, deps: ApiDeps): void {
  scope.removeAllContentTypeParsers();
  scope.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));

  scope.post<{ Params: { provider: string; key: string } }>('/1/:provider/:key', async (request, reply) => {
    const { provider, key } = request.params;
    const adapter = provider === GENERIC ? undefined : getProvider(provider);
    if (provider !== GENERIC && !adapter) throw new HttpError(404, 'unknown provider', 'no such provider');

    // Look up by hash, then compare in constant time: neither step's timing depends on how
    // much of a guessed key was right. Stray whitespace (spec §5) is not part of a key.
    const hash = keyHash(key.trim());
    const repo = await findRepoByKeyHash(deps.pool, hash);
    if (!repo || !sameDigest(repo.key_hash, hash)) throw new HttpError(404, 'not found', 'unknown key');

    // Optional beyond the spec: with a webhook secret, the trigger must be signed with it.
    if (repo.webhook_secret_sealed !== null) {
      const check = checkHookSignature(unseal(deps.config.secretKey, repo.webhook_secret_sealed), lowerCaseHeaders(request), rawBody(request));
      if (!check.ok) throw new HttpError(401, 'unauthorized', check.message, check.field);
    }

    const parsed = adapter ? parseProviderHook(adapter, request, repo) : parseGeneric(request, repo);
    if ('ignored' in parsed) return reply.code(200).send({ status: 0, ignored: parsed.ignored });

    let accepted;
    try {
      accepted = await acceptTrigger(deps.pool, deps.enqueue, { repo, provider, events: parsed.events });
    } catch (err) {
      if (!(err instanceof EnqueueFailed)) throw err;
      request.log.error({ err: err.cause, repo: repo.id }, 'enqueue failed; trigger rolled back');
      throw new HttpError(503, 'unavailable', 'could not queue the build; nothing was accepted, try again');
    }
    if (!accepted.recorded) {
      // Spec §7: the bare text DROPPED; the reason goes to the log only.
      request.log.info({ repo: repo.id, reasons: accepted.reasons }, 'trigger dropped');
      return reply.code(422).type('text/plain; charset=utf-8').send('DROPPED');
    }
    const { guid } = accepted;
    if (accepted.decision === 'skip') request.log.info({ repo: repo.id, guid, reason: accepted.reason }, 'trigger skipped');
    return reply.code(200).send({ status: 0, guid, status_uri: `${deps.config.baseUrl}/ci_events/${guid}/guid` });
  });
}

type Parsed = { events: [TriggerEvent, ...TriggerEvent[]] } | { ignored: string };

function parseGeneric(request: FastifyRequest, repo: RepoRow): Parsed {
  const parsed = parseTrigger({
    provider: GENERIC,
    contentType: request.headers['content-type'],
    body: request.body as Buffer | undefined,
    query: request.query as Record<string, unknown>,
    repoScm: repo.scm,
  });
  if (!parsed.ok) throw new HttpError(parsed.status, 'invalid trigger', parsed.message, parsed.field);
  return { events: [parsed.event] };
}

function lowerCaseHeaders(request: FastifyRequest): Record<string, string | undefined> {
  const headers: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(request.headers)) {
    headers[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  }
  return headers;
}

function rawBody(request: FastifyRequest): Buffer {
  return Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
}

function parseProviderHook(adapter: ProviderAdapter, request: FastifyRequest, repo: RepoRow): Parsed {
  const headers = lowerCaseHeaders(request);
  const query = request.query as Record<string, unknown>;
  const result = adapter.parse({
    headers,
    body: readProviderBody(request.headers['content-type'], request.body as Buffer | undefined),
    // The adapter checks it: an array (`?branch=a&branch=b`) is its 400.
    query: { branch: query.branch as string | undefined },
  });
  if (!result.ok) {
    if (result.status === 422) throw new HttpError(422, 'hook misconfigured', result.message, result.field);
    throw new HttpError(400, 'invalid trigger', result.message, result.field);
  }
  if ('ignore' in result) return { ignored: result.ignore };

  const events: TriggerEvent[] = [];
  const ignored: string[] = [];
  for (const t of result.triggers) {
    const converted = fromProviderTrigger(adapter.name, t, repo.scm);
    if (!converted.ok) throw new HttpError(converted.status, 'invalid trigger', converted.message, converted.field);
    if ('ignore' in converted) ignored.push(converted.ignore);
    else events.push(converted.event);
  }
  const [first, ...rest] = events;
  return first ? { events: [first, ...rest] } : { ignored: ignored.join('; ') };
}

/**
 * A provider's body as the adapter takes it: parsed JSON, a form as an object of strings
 * (each field once), or undefined when there is none. Anything else is a 400 naming it.
 */
function readProviderBody(contentType: string | undefined, raw: Buffer | undefined): unknown {
  if (!raw || raw.length === 0) return undefined;
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(raw);
  } catch {
    throw new HttpError(400, 'invalid trigger', 'not valid UTF-8', 'body');
  }
  if (text.trim() === '') return undefined;
  const media = mediaType(contentType);
  if (media === 'application/json' || media.endsWith('+json')) {
    try {
      return JSON.parse(text) as unknown;
    } catch (err) {
      throw new HttpError(400, 'invalid trigger', `invalid JSON: ${(err as Error).message}`, 'body');
    }
  }
  if (media === 'application/x-www-form-urlencoded') {
    const form = new URLSearchParams(text);
    for (const name of new Set(form.keys())) {
      if (form.getAll(name).length > 1) throw new HttpError(400, 'invalid trigger', 'given more than once', name.slice(0, 100));
    }
    // fromEntries defines own properties: a field named `__proto__` stays a field.
    return Object.fromEntries(form);
  }
  throw new HttpError(
    400,
    'invalid trigger',
    `unsupported content type ${media === '' ? '(none)' : JSON.stringify(media.slice(0, 100))}; send application/json or application/x-www-form-urlencoded`,
    'content-type',
  );
}
