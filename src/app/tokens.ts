/**
 * Personal API tokens (issue 25), as the JSON API and the web pages both decide about them: a
 * person makes one (shown once; only its sha256 is kept), lists their own, revokes one. A token
 * acts as its owner and no more: their roles, narrowed by its scope (read-only, one
 * organization), and it lives no longer than the token that made it.
 */
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { Principal } from '../core/access';
import { keyHash } from '../crypto/sealed';
import { insertApiToken, listApiTokens, revokeApiToken, type ApiTokenRow } from '../db/apiTokens';
import { findOrg } from '../db/orgs';
import { uniqueViolation, type Db } from '../db/transaction';
import { AppError, conflict, notFound, parseId, validate } from './errors';
import { requirePerson } from './people';

/** A personal API token: a prefix secret scanners can key on, then 256 random bits. */
export const newApiToken = (): string => `sluice_pt_${randomBytes(32).toString('base64url')}`;
export const isApiToken = (text: string): boolean => /^sluice_pt_[A-Za-z0-9_-]{43}$/.test(text);

/** Longest a token may live, and how long it lives unless told. */
export const MAX_TOKEN_DAYS = 366;
export const DEFAULT_TOKEN_DAYS = 90;

export const CreateToken = z
  .strictObject({
    name: z.string().trim().min(1).max(100),
    read_only: z.boolean().default(false),
    /** An organization's id or name: the token works there only. */
    org: z.union([z.string().min(1).max(100), z.number().int().positive()]).optional(),
    expires_in_days: z.number().int().min(1).max(MAX_TOKEN_DAYS).default(DEFAULT_TOKEN_DAYS),
  })
  .meta({ examples: [{ name: 'laptop cli' }, { name: 'dashboard', read_only: true, org: 'acme', expires_in_days: 30 }] });

export const ApiToken = z.object({
  id: z.number().int(),
  name: z.string(),
  read_only: z.boolean(),
  org: z.object({ id: z.number().int(), name: z.string().nullable() }).nullable(),
  created_at: z.date(),
  expires_at: z.date().nullable(),
  last_used_at: z.date().nullable(),
  revoked_at: z.date().nullable(),
});

export type ApiTokenView = z.output<typeof ApiToken>;

export const apiTokenView = (t: ApiTokenRow): ApiTokenView => ({
  id: t.id,
  name: t.name,
  read_only: t.read_only,
  org: t.org_id === null ? null : { id: t.org_id, name: t.org_name },
  created_at: t.created_at,
  expires_at: t.expires_at,
  last_used_at: t.last_used_at,
  revoked_at: t.revoked_at,
});

/**
 * Tokens are managed by a person signed in, or with a token of theirs as wide as they are: a
 * read-only token cannot write at all (the door), and one limited to an organization may not
 * make or revoke tokens wider than itself.
 */
function tokenManager(principal: Principal): number {
  const userId = requirePerson(principal);
  if (principal.token && principal.token.orgId !== null) throw new AppError('forbidden', 'a token limited to one organization cannot make or revoke tokens');
  return userId;
}

/** Makes a token for the signed-in person; the row and the token (shown once). */
export async function createApiToken(db: Db, principal: Principal, input: unknown, now = Date.now()): Promise<{ row: ApiTokenRow; token: string }> {
  const userId = tokenManager(principal);
  const body = validate(CreateToken, input);
  let orgId: number | null = null;
  if (body.org !== undefined) {
    const org = await findOrg(db, String(body.org));
    if (!org || !(principal.installationAdmin || principal.roles.has(org.id))) throw new AppError('invalid', 'no such organization of yours', 'org');
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

/** The caller's own tokens, with when each was last used; the admin token owns none. */
export async function ownTokens(db: Db, principal: Principal): Promise<ApiTokenView[]> {
  return principal.userId === null ? [] : (await listApiTokens(db, principal.userId)).map(apiTokenView);
}

/** Revokes one of the caller's own tokens: not found when they have no such one. */
export async function revokeOwnToken(db: Db, principal: Principal, ref: string): Promise<ApiTokenRow> {
  const userId = tokenManager(principal);
  const row = await revokeApiToken(db, userId, parseId(ref, 'token'));
  if (!row) throw notFound('token');
  return row;
}
