/**
 * Build secrets of a repository: `PUT /api/v1/repos/:repo/secrets/:name {value}`,
 * `GET /api/v1/repos/:repo/secrets`, `DELETE /api/v1/repos/:repo/secrets/:name`.
 *
 * A secret reaches the repository's test processes as the environment variable `name` (over
 * the trigger's `env` of the same name) and is masked as `****` in everything Sluice stores
 * (src/core/mask.ts). Its value is sealed with SLUICE_SECRET_KEY on the way in and never
 * leaves through this API: the list says names, times, and whether the value is long enough
 * (4 characters) to be masked.
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { isMaskable } from '../../../core/mask';
import { seal, unseal } from '../../../crypto/sealed';
import type { ApiDeps } from '../../deps';
import { HttpError } from '../../http';
import { notFound, validate } from '../../../app/errors';
import { withTransaction, type Db } from '../../../db/transaction';
import type { RepoRow } from '../../../db/repos';
import { countSecrets, deleteSecret, listSecrets, lockRepoSecrets, secretExists, upsertSecret, type SecretRow } from '../../../db/secrets';
import { loadRepo } from '../../../app/repos';
import { documented, errors, NoBody, RepoParams } from '../../openapi/shapes';

/**
 * Like an environment variable: letters, digits and `_`, not starting with a digit; at most
 * 100 characters (the longest path parameter the HTTP server takes).
 */
export const SECRET_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,99}$/;
/** Far below what one environment variable may hold (128 KiB on Linux). */
export const MAX_SECRET_BYTES = 32 * 1024;
export const MAX_SECRETS_PER_REPO = 100;

const PutSecret = z.strictObject({
  value: z
    .string()
    .min(1)
    .refine((v) => Buffer.byteLength(v, 'utf8') <= MAX_SECRET_BYTES, `must be at most ${MAX_SECRET_BYTES} bytes`)
    // An environment block cannot carry NUL.
    .refine((v) => !v.includes('\0'), 'must not contain NUL characters'),
}).meta({ examples: [{ value: 'correct horse battery staple' }] });

export const Secret = z.object({
  name: z.string(),
  masked: z.boolean().nullable().describe('whether the value is long enough (4 characters) to be masked in output; null: sealed under another key, set it again'),
  created_at: z.date(),
  updated_at: z.date(),
});
const SecretParams = RepoParams.extend({ name: z.string().describe('the environment variable the builds see it as: letters, digits and `_`, not starting with a digit') });

/** A secret as the API and the pages show it: never its value, only whether it can be masked. */
export function secretView(row: SecretRow, secretKey: Buffer): z.output<typeof Secret> {
  let masked: boolean | null;
  try {
    masked = isMaskable(unseal(secretKey, row.value_sealed));
  } catch {
    masked = null; // sealed under another key: unusable until set again
  }
  return { name: row.name, masked, created_at: row.created_at, updated_at: row.updated_at };
}

function checkName(name: string): void {
  if (!SECRET_NAME.test(name)) {
    throw new HttpError(400, 'invalid request', 'use letters, digits and "_", not starting with a digit, at most 100 characters', 'name');
  }
}

/**
 * Sets secret `name` of `repo` from a body of PUT /repos/:repo/secrets/:name (`{value}`),
 * sealed: whether it is new, and its row. A 400 naming a bad field, a 409 past the limit.
 */
export async function putSecret({ pool, config }: ApiDeps, repo: RepoRow, name: string, input: unknown): Promise<{ created: boolean; row: SecretRow }> {
  checkName(name);
  const { value } = validate(PutSecret, input);
  const sealed = seal(config.secretKey, value);
  return withTransaction(pool, async (client) => {
    // One writer per repository at a time, so the limit holds.
    await lockRepoSecrets(client, repo.id);
    if (!(await secretExists(client, repo.id, name)) && (await countSecrets(client, repo.id)) >= MAX_SECRETS_PER_REPO) {
      throw new HttpError(409, 'conflict', `a repository holds at most ${MAX_SECRETS_PER_REPO} secrets`, 'name');
    }
    return upsertSecret(client, repo.id, name, sealed);
  });
}

/** Deletes secret `name` of `repo`, or a 404 when it has none of that name. */
export async function removeSecret(pool: Db, repo: RepoRow, name: string): Promise<void> {
  if (!SECRET_NAME.test(name) || !(await deleteSecret(pool, repo.id, name))) throw notFound('secret');
}

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
    return (await listSecrets(pool, repo.id)).map((row) => secretView(row, config.secretKey));
  });

  app.delete<{ Params: { repo: string; name: string } }>('/repos/:repo/secrets/:name', documented({ tag: 'secrets', summary: 'Delete a build secret', params: SecretParams, response: { 204: NoBody, ...errors(404) } }), async (request, reply) => {
    await removeSecret(pool, await loadRepo(pool, request.params.repo), request.params.name);
    return reply.code(204).send();
  });
}
