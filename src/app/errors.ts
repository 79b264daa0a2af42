/**
 * What an operation of the application layer refuses, in the domain's words: a field that is
 * not right, something that is not there, a conflict with what is, a role that is not enough,
 * a dependency away, a trigger the rules no longer build, a hosting site that failed. The HTTP front ends (the JSON API,
 * the web pages) turn each kind into their status code and body (api/http.ts); nothing here
 * knows of HTTP.
 */
import type { z } from 'zod';
import { firstProblem } from '../core/issues';

/** `site`: a hosting site's API (src/sites/) failed or refused what Sluice asked of it. */
export type Refusal = 'invalid' | 'unauthorized' | 'not found' | 'conflict' | 'forbidden' | 'unavailable' | 'not rebuilt' | 'site';

export class AppError extends Error {
  constructor(
    readonly kind: Refusal,
    message: string,
    /** The field it is about, as the request named it (`body.name`, `branch`). */
    readonly field?: string,
    /** When trying again makes sense (a dependency away). */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }
}

export const notFound = (what: string): AppError => new AppError('not found', `no such ${what}`);

/** A numeric id as a path names it; anything else cannot name a row, so it is not found. */
export function parseId(value: string, what: string): number {
  if (!/^[1-9][0-9]{0,14}$/.test(value)) throw notFound(what);
  return Number(value);
}

export const conflict = (field: string, message: string): AppError => new AppError('conflict', message, field);

/** Parses input with zod; a failure is `invalid`, naming the first bad field. */
export function validate<S extends z.ZodType>(schema: S, value: unknown, root = 'body'): z.output<S> {
  const parsed = schema.safeParse(value, { reportInput: true });
  if (!parsed.success) {
    const { field, message } = firstProblem(parsed.error, root);
    throw new AppError('invalid', message, field);
  }
  return parsed.data;
}
