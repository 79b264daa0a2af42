/**
 * A signed-in browser (issue 25): the cookie holds a random session id (signed, httpOnly,
 * SameSite=Lax, Secure when Sluice is served over HTTPS); the database keeps its sha256, who
 * it is and when it ends, so signing out ends it everywhere it was copied, and removing a person
 * ends all of theirs. The cookies are signed with a key derived from the admin token, so
 * rotating the token signs everyone out. The JSON API does not read it: it takes Bearer tokens.
 */
import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Pool } from 'pg';
import type { Config } from '../../config';
import type { Principal } from '../../core/access';
import { endWebSession, SESSION_COOKIE, startWebSession } from '../access/principal';

/** How long a sign-in lasts. */
export const SIGN_IN_TTL_MS = 12 * 60 * 60 * 1000;

/** Who is signed in, as the pages show them. */
export type SignedIn = Principal;

/** The cookie plugin's signing key: never the admin token itself. */
export function cookieSecret(config: Config): string {
  return createHash('sha256').update(`sluice web cookies\0${config.adminToken}`).digest('hex');
}

/**
 * Lax, not Strict: coming back from an identity provider is a navigation that starts on its
 * site, and a Strict cookie set then would not be sent on the redirect that follows. Forms are
 * still safe from other sites: Lax is never sent on their POSTs, and every form has a CSRF token.
 */
export function cookieOptions(config: Config) {
  return { path: '/', httpOnly: true, sameSite: 'lax' as const, secure: config.baseUrl.startsWith('https:'), signed: true };
}

export interface NewWebSession {
  /** null: signed in with the admin token, as `name`. */
  userId: number | null;
  name: string;
  provider?: string;
  /** The provider's refresh token, sealed; and when to use it. */
  refreshToken?: string;
  refreshAt?: Date;
}

/** The cookie of the CSRF tokens' secret (@fastify/csrf-protection). */
export const CSRF_COOKIE = 'sluice_csrf';

/**
 * Starts a browser's session and gives it the cookie. Whatever session and CSRF secret the
 * browser had before are dropped: nothing planted before the sign-in outlives it.
 */
export async function signIn(request: FastifyRequest, reply: FastifyReply, config: Config, pool: Pool, s: NewWebSession, now = Date.now()): Promise<void> {
  await signOut(request, reply, config, pool);
  void reply.clearCookie(CSRF_COOKIE, cookieOptions(config));
  const id = await startWebSession(pool, {
    userId: s.userId,
    name: s.name,
    provider: s.provider ?? null,
    refreshToken: s.refreshToken ?? null,
    refreshAt: s.refreshAt ?? null,
    expiresAt: new Date(now + SIGN_IN_TTL_MS),
    ip: request.ip,
  });
  void reply.setCookie(SESSION_COOKIE, id, { ...cookieOptions(config), maxAge: SIGN_IN_TTL_MS / 1000 });
}

/** Ends this browser's session (here and wherever its cookie was copied to). */
export async function signOut(request: FastifyRequest, reply: FastifyReply, config: Config, pool: Pool): Promise<void> {
  const raw = request.cookies[SESSION_COOKIE];
  const unsigned = raw ? request.unsignCookie(raw) : null;
  if (unsigned?.valid && unsigned.value) await endWebSession(pool, unsigned.value);
  void reply.clearCookie(SESSION_COOKIE, cookieOptions(config));
}

/** Who is signed in (api/access/guard.ts looked it up), or null. */
export function signedIn(request: FastifyRequest): SignedIn | null {
  return request.principal;
}
