/** Reading `Authorization: Bearer` (who a request is: api/access). */
import type { FastifyRequest } from 'fastify';

/** The token of the request's `Authorization: Bearer <token>`, if it has one. */
export function bearerToken(request: FastifyRequest): string | undefined {
  return /^Bearer[ ]+(\S+)\s*$/i.exec(request.headers.authorization ?? '')?.[1];
}
