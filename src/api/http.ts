/**
 * How the API answers when something is wrong: every 4xx and 5xx body is JSON
 * `{error, field?, message}` (the one exception, spec §7's plain `DROPPED`, is sent by the
 * trigger route itself). Route code throws HttpError; the handlers installed here turn it, and
 * Fastify's own errors, into that shape.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, type Refusal } from '../app/errors';
import { foreignKeyViolation } from '../db/transaction';

export interface ErrorBody {
  error: string;
  field?: string;
  message: string;
}

export class HttpError extends Error {
  constructor(
    readonly statusCode: number,
    readonly error: string,
    message: string,
    readonly field?: string,
    /** A 503's `Retry-After`: when trying again makes sense. */
    readonly options: { retryAfterSeconds?: number } = {},
  ) {
    super(message);
  }

  body(): ErrorBody {
    return this.field === undefined ? { error: this.error, message: this.message } : { error: this.error, field: this.field, message: this.message };
  }
}

/** How each refusal of the application layer (app/errors.ts) is answered. */
const REFUSALS: Record<Refusal, { status: number; error: string }> = {
  invalid: { status: 400, error: 'invalid request' },
  unauthorized: { status: 401, error: 'unauthorized' },
  forbidden: { status: 403, error: 'forbidden' },
  'not found': { status: 404, error: 'not found' },
  conflict: { status: 409, error: 'conflict' },
  'not rebuilt': { status: 422, error: 'not rebuilt' },
  unavailable: { status: 503, error: 'unavailable' },
  site: { status: 502, error: 'hosting site failed' },
};

/** `err` as the API answers it, when it is one of ours (an HttpError, or a refusal of the application layer); else undefined. */
export function asHttpError(err: unknown): HttpError | undefined {
  if (err instanceof HttpError) return err;
  if (!(err instanceof AppError)) return undefined;
  const { status, error } = REFUSALS[err.kind];
  return new HttpError(status, error, err.message, err.field, err.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: err.retryAfterSeconds });
}

/**
 * What the database refused as an HttpError, or undefined: a foreign-key violation is a request
 * that raced a DELETE of what it refers to (an insert under a repository deleted meanwhile), so
 * a 404, whose message names no table, constraint or SQL.
 */
export function databaseHttpError(err: unknown): HttpError | undefined {
  return foreignKeyViolation(err) ? new HttpError(404, 'not found', 'what this refers to no longer exists (deleted meanwhile)') : undefined;
}

/**
 * Whether `err` says PostgreSQL is away (refused, restarting, shut down, the connection lost)
 * rather than that the request was wrong or Sluice has a bug.
 */
export function databaseAway(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  const code = typeof e?.code === 'string' ? e.code : '';
  if (['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND', 'EPIPE'].includes(code)) return true;
  // SQLSTATE 08 connection exceptions; 57P01-57P03 admin or crash shutdown, cannot connect now.
  if (/^08...$/.test(code) || ['57P01', '57P02', '57P03'].includes(code)) return true;
  const message = typeof e?.message === 'string' ? e.message : '';
  return /^Connection terminated|connection timeout|timeout exceeded when trying to connect/i.test(message);
}

/** Fastify's own 4xx errors, named in our vocabulary. */
const FASTIFY_ERRORS: Record<string, { error: string; field?: string }> = {
  FST_ERR_CTP_BODY_TOO_LARGE: { error: 'payload too large' },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { error: 'unsupported media type', field: 'content-type' },
  FST_ERR_CTP_EMPTY_JSON_BODY: { error: 'invalid request', field: 'body' },
  FST_ERR_CTP_INVALID_JSON_BODY: { error: 'invalid request', field: 'body' },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { error: 'invalid request', field: 'body' },
};

/**
 * `notFoundPage` answers a request no route has when it should see a page instead of JSON (a
 * browser's: api/web/pages.ts); undefined lets the JSON answer go.
 */
export function installErrorHandlers(app: FastifyInstance, notFoundPage?: (request: FastifyRequest, reply: FastifyReply) => FastifyReply | undefined): void {
  app.setErrorHandler((err: FastifyError, request, reply) => {
    const ours = asHttpError(err);
    if (ours) {
      if (ours.options.retryAfterSeconds !== undefined) reply.header('retry-after', String(ours.options.retryAfterSeconds));
      return reply.code(ours.statusCode).send(ours.body());
    }
    // A dependency away is no server error: the caller may try again (issue 26).
    if (databaseAway(err)) {
      request.log.warn({ err }, 'PostgreSQL does not answer');
      return reply.code(503).header('retry-after', '5').send({ error: 'unavailable', message: 'the database does not answer; try again shortly' });
    }
    const refused = databaseHttpError(err);
    if (refused) return reply.code(refused.statusCode).send(refused.body());
    const status = err.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      const known = FASTIFY_ERRORS[err.code] ?? { error: 'bad request' };
      const message = err.message;
      return reply.code(status).send(known.field ? { error: known.error, field: known.field, message } : { error: known.error, message });
    }
    request.log.error({ err }, 'request failed');
    return reply.code(500).send({ error: 'internal', message: 'internal error' });
  });

  // Our own 404 handler also keeps Fastify's "Route POST:/1/x/<KEY> not found" log line, which
  // would carry a repository key, out of the logs.
  app.setNotFoundHandler((request, reply) => {
    return notFoundPage?.(request, reply) ?? reply.code(404).send({ error: 'not found', message: 'no such route' });
  });
}
