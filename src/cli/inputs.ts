/**
 * What a user types, checked before anything is sent: the base URL, the admin token, ids and
 * names. Each parser throws commander's InvalidArgumentError, which commander reports as a
 * usage error naming the argument.
 */
import { InvalidArgumentError } from 'commander';
import { z } from 'zod';

/** An http(s) URL without credentials (they would show in every error that names it), no trailing slash. */
export const baseUrl = z
  .string()
  .trim()
  .max(2048)
  .refine((s) => URL.canParse(s) && ['http:', 'https:'].includes(new URL(s).protocol), 'expected an http or https URL')
  .refine((s) => !URL.canParse(s) || (new URL(s).username === '' && new URL(s).password === ''), 'must not contain a user or password')
  .transform((s) => s.replace(/\/+$/, ''));

/** What may go in an `Authorization: Bearer` header: printable ASCII without spaces. */
export const adminToken = z
  .string()
  .min(1, 'is empty')
  .max(1024)
  .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces');

/** A commander argument parser from a zod schema; the message never repeats the value (a token could be one). */
export function parseWith<S extends z.ZodType>(schema: S): (value: string) => z.output<S> {
  return (value) => {
    const parsed = schema.safeParse(value);
    if (!parsed.success) throw new InvalidArgumentError(parsed.error.issues[0]?.message ?? 'invalid');
    return parsed.data;
  };
}

export const positiveId = parseWith(z.string().regex(/^[1-9][0-9]{0,14}$/, 'expected a positive whole number').transform(Number));

/** A repository: its id or `<org>/<name>`. */
export const repoRef = parseWith(z.string().regex(/^([1-9][0-9]{0,14}|[A-Za-z0-9][A-Za-z0-9._-]*\/[A-Za-z0-9][A-Za-z0-9._-]*)$/, 'expected <org>/<name> or a repository id'));

/** An organization: its id or name. */
export const orgRef = parseWith(z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/, 'expected an organization name or id'));

/** `NAME=value` of `--env`, collected into one object. */
export function envPair(value: string, previous: Record<string, string> = {}): Record<string, string> {
  const eq = value.indexOf('=');
  if (eq <= 0) throw new InvalidArgumentError('expected NAME=value');
  return { ...previous, [value.slice(0, eq)]: value.slice(eq + 1) };
}

export function oneOf<T extends string>(values: readonly T[]): (value: string) => T {
  return (value) => {
    if (!(values as readonly string[]).includes(value)) throw new InvalidArgumentError(`expected one of ${values.join(', ')}`);
    return value as T;
  };
}
