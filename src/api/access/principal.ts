/**
 * Who a request acts as (issue 25): the admin token or a person's API token in
 * `Authorization: Bearer`, or a signed-in browser's session cookie. Only hashes are looked up:
 * tokens and session ids are never stored.
 */
import { randomBytes } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { Pool } from 'pg';
import type { Principal, Role } from '../../core/access';
import { useApiToken } from '../../db/apiTokens';
import { findUser, rolesOf, type UserRow } from '../../db/people';
import { claimRefresh, deleteWebSession, deleteWebSessionsOf, findWebSession, insertWebSession, type NewWebSessionRow, type WebSessionRow } from '../../db/webSessions';
import { keyHash } from '../../crypto/sealed';
import { sameSecret } from '../../crypto/compare';
import { isApiToken } from '../../app/tokens';
import { bearerToken } from '../auth';

/** The cookie of a signed-in browser: a random id, its sha256 the key of its row. */
export const SESSION_COOKIE = 'sluice_session';
export const newSessionId = (): string => randomBytes(32).toString('base64url');

/** The admin token's principal; signed in with it in a browser, `as` is the name typed then. */
export function adminTokenPrincipal(as?: string): Principal {
  return { kind: 'admin-token', name: as ?? 'admin token', userId: null, email: null, installationAdmin: true, roles: new Map() };
}

export function userPrincipal(user: UserRow, roles: Map<number, Role>, token?: Principal['token']): Principal {
  return { kind: 'user', name: user.name, userId: user.id, email: user.email, installationAdmin: user.installation_admin, roles, token };
}

/**
 * The principal of a request's Bearer token: undefined when it sends none, null when the token
 * is no good (unknown, revoked, expired, or its owner removed).
 */
export async function bearerPrincipal(pool: Pool, adminToken: string, request: FastifyRequest): Promise<Principal | null | undefined> {
  const given = bearerToken(request);
  if (given === undefined) return undefined;
  if (adminToken.length > 0 && sameSecret(given, adminToken)) return adminTokenPrincipal();
  if (!isApiToken(given)) return null;
  const token = await useApiToken(pool, keyHash(given));
  const user = token && (await findUser(pool, token.user_id));
  if (!token || !user) return null;
  return userPrincipal(user, await rolesOf(pool, user.id), { id: token.id, readOnly: token.read_only, orgId: token.org_id, expiresAt: token.expires_at });
}

/**
 * Asks the identity provider again whether a signed-in person is still theirs (api/identity):
 * true to go on, false to end the session. Absent: sessions are never asked again.
 */
export type RefreshSession = (session: WebSessionRow, idHash: Buffer) => Promise<boolean>;

/** How long a session's turn to ask its provider lasts: until then no other request asks again. */
const REFRESH_GRACE_MS = 60_000;

/** The principal of a browser's session id, or null: none, expired, ended, or its person removed. */
export async function sessionPrincipal(pool: Pool, sessionId: string, refresh?: RefreshSession, now = new Date()): Promise<Principal | null> {
  const idHash = keyHash(sessionId);
  const row = await findWebSession(pool, idHash);
  if (!row) return null;
  if (row.user_id === null) return adminTokenPrincipal(row.name);
  if (row.refresh_at && row.refresh_at <= now && refresh) {
    const claimed = await claimRefresh(pool, idHash, REFRESH_GRACE_MS);
    if (claimed && !(await refresh({ ...row, refresh_token: claimed.refresh_token }, idHash))) {
      await deleteWebSession(pool, idHash);
      return null;
    }
  }
  const user = await findUser(pool, row.user_id);
  return user ? userPrincipal(user, await rolesOf(pool, user.id)) : null;
}

/** Starts a browser's session (web/signIn.ts gives it its cookie); its id, whose sha256 keys the row. */
export async function startWebSession(pool: Pool, session: NewWebSessionRow): Promise<string> {
  const id = newSessionId();
  await insertWebSession(pool, { ...session, idHash: keyHash(id) });
  return id;
}

/** Ends a browser's session, wherever its cookie was copied to. */
export const endWebSession = (pool: Pool, sessionId: string): Promise<void> => deleteWebSession(pool, keyHash(sessionId));

/** Ends every session of a person: signed out everywhere. */
export const endWebSessionsOf = (pool: Pool, userId: number): Promise<number> => deleteWebSessionsOf(pool, userId);
