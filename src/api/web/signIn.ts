/**
 * Who is signed in to the web pages: a signed, httpOnly, SameSite=Strict cookie (Secure when
 * Sluice is served over HTTPS) holding the name given at sign-in and when it expires. Signed
 * with a key derived from the admin token, so rotating the token signs everyone out. The JSON
 * API does not read it: it keeps its Bearer token.
 */
import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../../config';

export const SESSION_COOKIE = 'sluice_session';
/** How long a sign-in lasts. */
export const SIGN_IN_TTL_MS = 12 * 60 * 60 * 1000;

export interface SignedIn {
  /** The name given at sign-in: who stopped a build, for example. */
  name: string;
}

/** The cookie plugin's signing key: never the admin token itself. */
export function cookieSecret(config: Config): string {
  return createHash('sha256').update(`sluice web cookies\0${config.adminToken}`).digest('hex');
}

export function cookieOptions(config: Config) {
  return { path: '/', httpOnly: true, sameSite: 'strict' as const, secure: config.baseUrl.startsWith('https:'), signed: true };
}

export function signIn(reply: FastifyReply, config: Config, name: string, now = Date.now()): void {
  const value = Buffer.from(JSON.stringify({ n: name, e: now + SIGN_IN_TTL_MS })).toString('base64url');
  void reply.setCookie(SESSION_COOKIE, value, { ...cookieOptions(config), maxAge: SIGN_IN_TTL_MS / 1000 });
}

export function signOut(reply: FastifyReply, config: Config): void {
  void reply.clearCookie(SESSION_COOKIE, cookieOptions(config));
}

/** Who the request's cookie says is signed in, or null (none, forged, or expired). */
export function signedIn(request: FastifyRequest, now = Date.now()): SignedIn | null {
  const raw = request.cookies[SESSION_COOKIE];
  if (!raw) return null;
  const unsigned = request.unsignCookie(raw);
  if (!unsigned.valid || unsigned.value === null) return null;
  try {
    const { n, e } = JSON.parse(Buffer.from(unsigned.value, 'base64url').toString('utf8')) as { n?: unknown; e?: unknown };
    if (typeof n !== 'string' || typeof e !== 'number' || e <= now) return null;
    return { name: n };
  } catch {
    return null;
  }
}
