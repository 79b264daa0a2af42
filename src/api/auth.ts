/**
 * Comparing credentials and reading `Authorization: Bearer` (who a request is: api/access).
 * Both sides are hashed before the constant-time comparison, so neither the token's content
 * nor its length shows in the response time.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';

const sha256 = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();

/** Whether two secrets are equal, in time that tells nothing of either. */
export function sameSecret(given: string, expected: string): boolean {
  return timingSafeEqual(sha256(given), sha256(expected));
}

/** The token of the request's `Authorization: Bearer <token>`, if it has one. */
export function bearerToken(request: FastifyRequest): string | undefined {
  return /^Bearer[ ]+(\S+)\s*$/i.exec(request.headers.authorization ?? '')?.[1];
}
