/**
 * Personal API tokens (issue 25), for scripts and the CLI: `POST /api/v1/tokens {name,
 * read_only?, org?, expires_in_days?}` answers the token once (only its sha256 is kept); `GET`
 * lists the caller's own with when each was last used; `DELETE /:id` revokes one. A token acts as
 * its owner and no more: their roles, narrowed by its scope (read-only, one organization).
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Principal } from '../../../core/access';
import { insertApiToken, listApiTokens, revokeApiToken, type ApiTokenRow } from '../../../db/apiTokens';
import { findOrg } from '../../../db/orgs';
import { uniqueViolation, type Db } from '../../../db/transaction';
import { keyHash } from '../../../crypto/sealed';
import { newApiToken } from '../../access/principal';
import type { ApiDeps } from '../../deps';
import { HttpError, parseId } from '../../http';
import { conflict, notFound, validate } from '../../../app/errors';
import { documented, errors, IdParams, NoBody } from '../../openapi/shapes';
import { requirePerson } from './people';

/** Longest a token may live, and how long it lives unless told. */
export const MAX_TOKEN_DAYS = 366;
export const DEFAULT_TOKEN_DAYS = 90;

const CreateToken = z
  .strictObject({
    name: z.string().trim().min(1).max(100),
    read_only: z.boolean().default(false),
    /** An organization's id or name: the token works there only. */
    org: z.union([z.string().min(1).max(100), z.number().int().positive()]).optional(),
    expires_in_days: z.number().int().min(1).max(MAX_TOKEN_DAYS).default(DEFAULT_TOKEN_DAYS),
  })
  .meta({ examples: [{ name: 'laptop cli' }, { name: 'dashboard', read_only: true, org: 'acme', expires_in_days: 30 }] });

const ApiToken = z.object({
  id: z.number().int(),
  name: z.string(),
  read_only: z.boolean(),
  org: z.object({ id: z.number().int(), name: z.string().nullable() }).nullable(),
  created_at: z.date(),
  expires_at: z.date().nullable(),
  last_used_at: z.date().nullable(),
  revoked_at: z.date().nullable(),
});

export const apiTokenView = (t: ApiTokenRow): z.output<typeof ApiToken> => ({
  id: t.id,
  name: t.name,
  read_only: t.read_only,
  org: t.org_id === null ? null : { id: t.org_id, name: t.org_name },
  created_at: t.created_at,
  expires_at: t.expires_at,
  last_used_at: t.last_used_at,
  revoked_at: t.revoked_at,
});

/** Makes a token for the signed-in person; the row and the token (shown once). */
export async function createApiToken(db: Db, principal: Principal, input: unknown, now = Date.now()): Promise<{ row: ApiTokenRow; token: string }> {
  const userId = tokenManager(principal);
  const body = validate(CreateToken, input);
  let orgId: number | null = null;
  if (body.org !== undefined) {
    const org = await findOrg(db, String(body.org));
    if (!org || !(principal.installationAdmin || principal.roles.has(org.id))) throw new HttpError(400, 'invalid request', 'no such organization of yours', 'org');
    orgId = org.id;
  }
  // A token made with a token lives no longer than it.
  const asked = new Date(now + body.expires_in_days * 86_400_000);
  const parent = principal.token?.expiresAt;
  const expiresAt = parent && parent < asked ? parent : asked;
  const token = newApiToken();
  try {
    const row = await insertApiToken(db, { userId, name: body.name, hash: keyHash(token), readOnly: body.read_only, orgId, expiresAt });
    return { row, token };
  } catch (err) {
    if (uniqueViolation(err) !== undefined) throw conflict('name', 'you have a token with this name');
    throw err;
  }
}

/**
 * Tokens are managed by a person signed in, or with a token of theirs as wide as they are: a
 * read-only token cannot write at all (the door), and one limited to an organization may not
 * make or revoke tokens wider than itself.
 */
function tokenManager(principal: Principal): number {
  const userId = requirePerson(principal);
  if (principal.token && principal.token.orgId !== null) throw new HttpError(403, 'forbidden', 'a token limited to one organization cannot make or revoke tokens');
  return userId;
}

export async function revokeOwnToken(db: Db, principal: Principal, id: string): Promise<ApiTokenRow> {
  const row = await revokeApiToken(db, tokenManager(principal), parseId(id, 'token'));
  if (!row) throw notFound('token');
  return row;
}

export function registerTokenRoutes(app: FastifyInstance, { pool }: ApiDeps): void {
  app.post('/tokens', documented({ tag: 'people', summary: 'Make a personal API token', description: 'The token is in this answer only; Sluice keeps its sha256. It acts as you, within its scope.', body: CreateToken, response: { 201: ApiToken.extend({ token: z.string() }), ...errors(400, 409) } }), async (request, reply) => {
    const { row, token } = await createApiToken(pool, request.principal!, request.body ?? {});
    return reply.code(201).send({ ...apiTokenView(row), token });
  });

  // The admin token owns none.
  app.get('/tokens', documented({ tag: 'people', summary: 'Your personal API tokens', response: { 200: z.array(ApiToken) } }), async (request) => {
    const userId = request.principal!.userId;
    return userId === null ? [] : (await listApiTokens(pool, userId)).map(apiTokenView);
  });

  app.delete<{ Params: { id: string } }>('/tokens/:id', documented({ tag: 'people', summary: 'Revoke one of your tokens', params: IdParams('token'), response: { 204: NoBody, ...errors(404) } }), async (request, reply) => {
    await revokeOwnToken(pool, request.principal!, request.params.id);
    return reply.code(204).send();
  });
}
