/**
 * Build secrets of a repository, as the JSON API and the web pages both decide about them.
 *
 * A secret reaches the repository's test processes as the environment variable `name` (over
 * the trigger's `env` of the same name) and is masked as `****` in everything Sluice stores
 * (src/core/mask.ts). Its value is sealed with SLUICE_SECRET_KEY on the way in and never
 * comes out: a view says names, times, and whether the value is long enough (4 characters) to
 * be masked.
 */
import { z } from 'zod';
import { isMaskable } from '../core/mask';
import { seal, unseal } from '../crypto/sealed';
import type { RepoRow } from '../db/repos';
import { countSecrets, deleteSecret, listSecrets, lockRepoSecrets, secretExists, upsertSecret, type SecretRow } from '../db/secrets';
import { withTransaction, type Db } from '../db/transaction';
import type { AppDeps } from './deps';
import { AppError, conflict, notFound, validate } from './errors';

/**
 * Like an environment variable: letters, digits and `_`, not starting with a digit; at most
 * 100 characters (the longest path parameter the HTTP server takes).
 */
export const SECRET_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,99}$/;
/** Far below what one environment variable may hold (128 KiB on Linux). */
export const MAX_SECRET_BYTES = 32 * 1024;
export const MAX_SECRETS_PER_REPO = 100;

export const PutSecret = z.strictObject({
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

/** A repository's secrets as the API and the pages show them (names, never values), by name. */
export async function secretsOf({ pool, config }: Pick<AppDeps, 'pool' | 'config'>, repo: RepoRow): Promise<z.output<typeof Secret>[]> {
  return (await listSecrets(pool, repo.id)).map((row) => secretView(row, config.secretKey));
}

function checkName(name: string): void {
  if (!SECRET_NAME.test(name)) {
    throw new AppError('invalid', 'use letters, digits and "_", not starting with a digit, at most 100 characters', 'name');
  }
}

/**
 * Sets secret `name` of `repo` from a body of PUT /repos/:repo/secrets/:name (`{value}`),
 * sealed: whether it is new, and its row. Invalid naming a bad field, a conflict past the limit.
 */
export async function putSecret({ pool, config }: Pick<AppDeps, 'pool' | 'config'>, repo: RepoRow, name: string, input: unknown): Promise<{ created: boolean; row: SecretRow }> {
  checkName(name);
  const { value } = validate(PutSecret, input);
  const sealed = seal(config.secretKey, value);
  return withTransaction(pool, async (client) => {
    // One writer per repository at a time, so the limit holds.
    await lockRepoSecrets(client, repo.id);
    if (!(await secretExists(client, repo.id, name)) && (await countSecrets(client, repo.id)) >= MAX_SECRETS_PER_REPO) {
      throw conflict('name', `a repository holds at most ${MAX_SECRETS_PER_REPO} secrets`);
    }
    return upsertSecret(client, repo.id, name, sealed);
  });
}

/** Deletes secret `name` of `repo`, or not found when it has none of that name. */
export async function removeSecret(pool: Db, repo: RepoRow, name: string): Promise<void> {
  if (!SECRET_NAME.test(name) || !(await deleteSecret(pool, repo.id, name))) throw notFound('secret');
}
