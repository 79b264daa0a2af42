/**
 * What the OpenAPI document says that the routes' own zod schemas do not: the error body,
 * path parameters, the answers' shapes and each route's summary. Route modules attach these,
 * with their request schemas, as Fastify `schema` (openapi/register.ts turns them into the
 * document); the routes still validate their input themselves (api/http.ts `validate`).
 */
import type { FastifySchema } from 'fastify';
import { z } from 'zod';

export const ErrorBody = z
  .object({
    error: z.string().describe('what went wrong, in a few words: `invalid request`, `not found`, `conflict`, ...'),
    field: z.string().optional().describe('the request field at fault, a dotted path in the body or query (`name`, `profiles.0.name`, `limit`)'),
    message: z.string(),
  })
  .meta({ examples: [{ error: 'invalid request', field: 'name', message: 'must be at least 1 character' }] });

/** Tags group the operations in the document and its page, in this order. */
export const TAGS = [
  { name: 'triggers', description: 'The keyed incoming webhook and what became of a trigger (spec §4, §7)' },
  { name: 'reports', description: 'A session’s report, opened by its token or a Bearer token that may see its build' },
  { name: 'orgs', description: 'Organizations own repositories and webhooks' },
  { name: 'repos', description: 'Repositories, their keys, branches and commit statuses' },
  { name: 'connections', description: 'Hosting sites connected once; their repositories activated with their webhooks and deploy keys made by Sluice' },
  { name: 'github-apps', description: 'Sluice as a GitHub App: made with GitHub’s manifest flow, installed once, its repositories activated with a click; clones with installation tokens, check runs' },
  { name: 'suites', description: 'A suite is one repository + one branch, the unit that builds' },
  { name: 'secrets', description: 'Build secrets; values go in and never come out' },
  { name: 'registries', description: 'Registry logins builds pull their images with; passwords go in and never come out' },
  { name: 'webhooks', description: 'Outgoing webhooks and their delivery log' },
  { name: 'sessions', description: 'Builds: list, show, follow, stop, rebuild' },
  { name: 'runners', description: 'Runners up now and the tokens keyless runners use' },
  { name: 'people', description: 'Who is signed in, members and their roles, personal API tokens, the audit trail' },
  { name: 'operations', description: 'Health and this document' },
] as const;

type Tag = (typeof TAGS)[number]['name'];

const NOT_FOUND = 'no such thing (or not yours to see)';
/** The error answers a route can give, each `ErrorBody`. */
export const errors = (...codes: (400 | 401 | 403 | 404 | 409 | 413 | 415 | 422 | 502 | 503)[]) => {
  const says: Record<number, string> = {
    400: 'a field is malformed; `field` names it',
    401: 'no or wrong credential',
    403: 'the credential’s role is not enough; `message` says why',
    404: NOT_FOUND,
    409: 'conflicts with what is there; `field` names what',
    413: 'the body is over 1 MiB',
    415: 'the body is not JSON',
    422: 'understood but not acted on',
    502: 'the hosting site failed or refused what Sluice asked of it; `message` has its words',
    503: 'a service Sluice needs did not answer',
  };
  return Object.fromEntries(codes.map((c) => [c, ErrorBody.describe(says[c]!)]));
};

/** The errors every admin route can give besides its own. */
const ADMIN_ERRORS = errors(401, 403);

/** Where `documented` keeps a request body's examples for the document (openapi/register.ts). */
export const BODY_EXAMPLES = 'x-body-examples';

export interface RouteDoc {
  tag: Tag;
  summary: string;
  description?: string;
  params?: z.ZodType;
  querystring?: z.ZodType;
  body?: z.ZodType;
  /** Answers by status code; zod schemas (`z.undefined()` for no body). */
  response: Record<number, z.ZodType>;
  /** Public routes: no admin token needed. Default: the admin token. */
  public?: boolean;
  /** Where the report's token opens it too. */
  security?: Record<string, string[]>[];
  consumes?: string[];
  produces?: string[];
}

/** Route options that put a route in the OpenAPI document (openapi/register.ts). */
export function documented(doc: RouteDoc): { schema: FastifySchema } {
  const schema: Record<string, unknown> = {
    tags: [doc.tag],
    summary: doc.summary,
    response: doc.public || doc.security ? doc.response : { ...ADMIN_ERRORS, ...doc.response },
  };
  if (doc.description) schema.description = doc.description;
  if (doc.params) schema.params = doc.params;
  if (doc.querystring) schema.querystring = doc.querystring;
  if (doc.body) {
    schema.body = doc.body;
    // zod leaves `examples` out of the input JSON Schema of one with a transform inside
    // (branch names, URLs): carried beside it, openapi/register.ts puts them back.
    const examples = z.globalRegistry.get(doc.body)?.examples;
    if (Array.isArray(examples)) schema[BODY_EXAMPLES] = examples;
  }
  if (doc.consumes) schema.consumes = doc.consumes;
  if (doc.produces) schema.produces = doc.produces;
  if (doc.security) schema.security = doc.security;
  else if (doc.public) schema.security = [];
  return { schema: schema as FastifySchema };
}

// ---- path parameters ----

const orgRef = z.string().describe('the organization’s id or name');
const repoRef = z.string().describe('the repository’s id, or `<org>/<name>` with the slash percent-encoded (`acme%2Fweb`)');
const numericId = (what: string) => z.string().regex(/^[1-9][0-9]*$/).describe(`the ${what}’s id`);

export const OrgParams = z.object({ org: orgRef });
export const RepoParams = z.object({ repo: repoRef });
export const SuiteParams = RepoParams.extend({ suite: numericId('suite') });
export const IdParams = (what: string) => z.object({ id: numericId(what) });
export const SessionParams = z.object({ session: numericId('session').describe('the session number') });

// ---- answers that are not modelled field by field ----

/** An object answer described in words, its fields not modelled here. */
export const described = (what: string) => z.looseObject({}).describe(what);
export const NoBody = z.undefined().describe('no body');
