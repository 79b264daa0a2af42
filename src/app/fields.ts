/**
 * Field rules the application layer's operations share (and the JSON routes' documents show):
 * names, SCM and HTTP URLs, branch names, test globs, plain text. Names are restricted to a
 * URL-safe alphabet and are never all digits, so `/orgs/:org` can take an id or a name without
 * ambiguity.
 */
import { z } from 'zod';
import { branchNameProblem, isHttpUrl } from '../core/names';

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

export const resourceName = z
  .string()
  .min(1)
  .max(100)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'use letters, digits, ".", "_" and "-", starting with a letter or digit')
  .refine((s) => !/^[0-9]+$/.test(s), 'must not be all digits (ids are)');

/** An SCM address handed to git or hg: `git@host:x.git`, `ssh://…`, a path. Never an option. */
export const scmUrl = z
  .string()
  .min(1)
  .max(2048)
  .refine((s) => !CONTROL.test(s) && !/\s/.test(s), 'must not contain whitespace or control characters')
  .refine((s) => !s.startsWith('-'), 'must not start with "-"');

export const httpUrl = z
  .string()
  .trim()
  .max(2048)
  .refine(isHttpUrl, 'expected an http or https URL');

/**
 * Whether a URL carries no user or password as WHATWG URL (what fetch uses) reads it: a regex
 * misses `https:u:p@host` and `https:/u:p@host`. zod runs refinements even after httpUrl's
 * failed, so an unparsable string passes here (httpUrl has refused it).
 */
export const withoutCredentials = (s: string): boolean => !URL.canParse(s) || (new URL(s).username === '' && new URL(s).password === '');

export const branchName = z
  .string()
  .transform((s) => (s.startsWith('refs/heads/') ? s.slice('refs/heads/'.length) : s))
  .superRefine((s, ctx) => {
    const problem = branchNameProblem(s);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  });

/** A glob relative to the repository root: never absolute, never climbing out with `..`. */
export const testPattern = z
  .string()
  .min(1)
  .max(1000)
  .refine((s) => !CONTROL.test(s), 'must not contain control characters')
  .refine((s) => !s.startsWith('/'), 'must be relative to the repository root')
  .refine((s) => !s.split('/').includes('..'), 'must not contain ".." segments');

export const plainText = (max: number) =>
  z
    .string()
    .min(1)
    .max(max)
    .refine((s) => !CONTROL.test(s), 'must not contain control characters');
