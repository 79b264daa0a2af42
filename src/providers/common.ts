import type { z } from 'zod';
import { firstProblem } from '../core/issues';
import { branchNameProblem, isHttpUrl } from '../core/names';
import type { Scm, TriggerKind } from '../core/types';
import type { ProviderAdapter, ProviderInput, ProviderPullRequest, ProviderResult, ProviderTrigger } from './types';

/**
 * The plumbing every adapter shares: turning "this input is wrong" into a 400/422 result,
 * reading the body with zod, and the checks on `?branch=`. Adapters throw a ProviderProblem
 * from anywhere in their parsing; `defineProvider` turns it into the result.
 */

export class ProviderProblem extends Error {
  constructor(
    readonly status: 400 | 422,
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

/** 400: the payload is not what the provider's format says. */
export function malformed(field: string, message: string): never {
  throw new ProviderProblem(400, field, message);
}

/** 422: the delivery is well-formed but not one Sluice acts on (spec §7: hook misconfigured). */
export function unsupported(field: string, message: string): never {
  throw new ProviderProblem(422, field, message);
}

/** What an adapter's own parser returns; `defineProvider` wraps it into a ProviderResult. */
export type Outcome = ProviderTrigger | ProviderTrigger[] | { ignore: string };

export interface ParseContext {
  headers: ProviderInput['headers'];
  /** The body, already known to be a JSON object. */
  body: Record<string, unknown>;
  /** `?branch=`, already checked; undefined when absent or empty. */
  queryBranch: string | undefined;
}

/** An adapter from its parser: problems thrown anywhere in it become the 400/422 result. */
export function defineAdapter(name: string, parse: (input: ProviderInput) => Outcome): ProviderAdapter {
  return {
    name,
    parse(input: ProviderInput): ProviderResult {
      try {
        const out = parse(input);
        if ('ignore' in out) return { ok: true, ignore: out.ignore };
        const triggers = Array.isArray(out) ? out : [out];
        const [first, ...rest] = triggers;
        if (first === undefined) return { ok: true, ignore: 'the delivery changed no branch or tag' };
        return { ok: true, triggers: [first, ...rest] };
      } catch (err) {
        if (err instanceof ProviderProblem) return { ok: false, status: err.status, field: err.field, message: err.message };
        // Anything else is a bug in the adapter: let it surface rather than answer a wrong 4xx.
        throw err;
      }
    },
  };
}

/** A hosting provider's adapter: its body is one JSON object (or `payload=<json>`), `?branch=` a checked branch name. */
export function defineProvider(name: string, parse: (ctx: ParseContext) => Outcome): ProviderAdapter {
  return defineAdapter(name, (input) =>
    parse({
      headers: input.headers,
      body: bodyObject(input),
      queryBranch: queryBranch(input.query),
    }),
  );
}

/**
 * GitHub, Gitea and Gogs hooks set to `application/x-www-form-urlencoded` post the JSON as
 * the one form field `payload`; read that as the body.
 */
function bodyObject(input: ProviderInput): Record<string, unknown> {
  let value = input.body;
  if (input.format === 'form' && isPlainObject(value)) {
    for (const [name, field] of Object.entries(value)) {
      if (Array.isArray(field)) malformed(name.slice(0, 100), 'given more than once');
    }
  }
  if (isPlainObject(value) && typeof value.payload === 'string' && Object.keys(value).length === 1) {
    try {
      value = JSON.parse(value.payload);
    } catch {
      malformed('payload', 'invalid JSON');
    }
  }
  if (!isPlainObject(value)) malformed('body', 'expected a JSON object');
  return value;
}

function queryBranch(query: ProviderInput['query'] | undefined): string | undefined {
  const value: unknown = query?.branch;
  if (value === undefined || value === null || value === '') return undefined;
  // `?branch=a&branch=b` arrives as an array: which one was meant is anyone's guess.
  if (typeof value !== 'string') malformed('query.branch', Array.isArray(value) ? 'given more than once' : 'expected string');
  return checkBranchName(value.startsWith('refs/heads/') ? value.slice('refs/heads/'.length) : value, 'query.branch');
}

/** Reads `value` with `schema`, or throws a 400 naming the first wrong field. */
export function read<S extends z.ZodType>(schema: S, value: unknown): z.output<S> {
  const parsed = schema.safeParse(value, { reportInput: true });
  if (parsed.success) return parsed.data;
  const { field, message } = firstProblem(parsed.error);
  malformed(field, message);
}

/** The header that names the event, or a 422: without it the hook came from elsewhere. */
export function eventHeader(ctx: ParseContext, names: readonly string[], provider: string): string {
  for (const name of names) {
    const value = ctx.headers[name];
    if (typeof value === 'string' && value.trim() !== '') return value.trim();
  }
  unsupported(
    `headers.${names[0]}`,
    `missing ${names.map(displayHeader).join(' or ')} header: is this a ${provider} webhook sent to the ${provider} path?`,
  );
}

/** `x-github-event` → `X-GitHub-Event`, for messages people compare with their hook settings. */
function displayHeader(name: string): string {
  const special: Record<string, string> = { github: 'GitHub', gitlab: 'Gitlab' };
  return name
    .split('-')
    .map((part) => special[part] ?? part.charAt(0).toUpperCase() + part.slice(1))
    .join('-');
}

export function checkBranchName(name: string, field: string): string {
  const problem = branchNameProblem(name);
  if (problem) malformed(field, `branch name ${problem}`);
  return name;
}

export function checkTagName(name: string, field: string): string {
  // Git applies the same rules to tag names as to branch names.
  const problem = branchNameProblem(name);
  if (problem) malformed(field, `tag name ${problem}`);
  return name;
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export type TriggerFields = Partial<Pick<ProviderTrigger, 'branch' | 'head' | 'ref' | 'commits'>> & {
  pullRequest?: Omit<ProviderPullRequest, 'url'> & { url?: string | null };
};

/** A ProviderTrigger with every field present (null or [] where the payload says nothing). */
export function makeTrigger(event: string, kind: TriggerKind, fields: TriggerFields, scm: Scm = 'git'): ProviderTrigger {
  const t: ProviderTrigger = {
    event,
    kind,
    branch: fields.branch ?? null,
    head: fields.head ?? null,
    ref: fields.ref ?? null,
    scm,
    commits: fields.commits ?? [],
  };
  if (fields.pullRequest) {
    const { url, ...pr } = fields.pullRequest;
    // Shown as a link on the report page: only http(s), and a bad link never fails a build.
    t.pullRequest = url && isHttpUrl(url) ? { ...pr, url } : pr;
  }
  return t;
}

/**
 * Whether two sides of a pull request name the same repository: both ids (or names) given and
 * equal. A side the payload leaves out (a deleted fork) is not the same: untrusted.
 */
export function sameRepository(source: string | number | null | undefined, target: string | number | null | undefined): boolean {
  return source !== null && source !== undefined && source !== '' && source === target;
}

/** `table[key]` for own keys only: an action named `constructor` must not find Object's. */
export function lookup<T>(table: Readonly<Record<string, T>>, key: string): T | undefined {
  return Object.hasOwn(table, key) ? table[key] : undefined;
}

/** Input echoed in a message, quoted and cut short: an answer never carries a huge or odd string back. */
export function quote(value: string): string {
  return JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value);
}
