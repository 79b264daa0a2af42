/**
 * The management API over HTTP, as the command-line client calls it: JSON in and out with the
 * admin token, each answer checked against the shape the command reads (schemas.ts) before it
 * is used. An error answer becomes an ApiError with the API's own message and field; the token
 * never goes into an error.
 */
import type { z } from 'zod';
import { ApiError, CliError } from './errors';

/** How long one request may take; following output (follow.ts) has no such bound. */
const REQUEST_TIMEOUT_MS = 60_000;
/** How much of a non-JSON error body an error message quotes. */
const QUOTED_BODY_CHARS = 200;

export interface Answer<T> {
  /** The answer checked against its schema. */
  data: T;
  /** The answer as the API sent it: what `--json` prints. */
  raw: unknown;
}

export class ApiClient {
  constructor(
    readonly baseUrl: string,
    private readonly token: string | undefined,
  ) {}

  /** `method path` with an optional JSON body; the answer checked against `schema`. */
  async call<S extends z.ZodType>(method: string, path: string, schema: S, body?: unknown): Promise<Answer<z.output<S>>> {
    const res = await this.send(method, path, {
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    const text = await res.text();
    if (!res.ok) throw errorOf(res.status, text);
    return this.check(method, path, schema, text === '' ? null : parseJson(text, method, path));
  }

  /** Sends a request with the token; the raw response, whatever its status (for streams and the trigger). */
  async send(method: string, path: string, init: { headers?: Record<string, string>; body?: string; signal?: AbortSignal } = {}): Promise<Response> {
    const headers: Record<string, string> = { accept: 'application/json', ...init.headers };
    if (this.token !== undefined) headers.authorization = `Bearer ${this.token}`;
    try {
      return await fetch(`${this.baseUrl}${path}`, { method, headers, body: init.body, signal: init.signal });
    } catch (err) {
      throw unreachable(this.baseUrl, err);
    }
  }

  check<S extends z.ZodType>(method: string, path: string, schema: S, raw: unknown): Answer<z.output<S>> {
    const parsed = schema.safeParse(raw);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new CliError(`${method} ${path} answered something this client does not understand (${issue?.path.join('.') || 'root'}: ${issue?.message}); is the server a newer Sluice?`);
    }
    return { data: parsed.data, raw };
  }
}

function parseJson(text: string, method: string, path: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new CliError(`${method} ${path} answered something that is not JSON`);
  }
}

/** An error answer: the API's `{error, field?, message}`, else its text (the trigger's bare DROPPED). */
export function errorOf(status: number, text: string): ApiError {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  const b = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  const error = typeof b.error === 'string' ? b.error : `HTTP ${status}`;
  const field = typeof b.field === 'string' ? b.field : undefined;
  let message = typeof b.message === 'string' ? b.message : text.trim().slice(0, QUOTED_BODY_CHARS) || `HTTP ${status}`;
  if (status === 401) message = `the server refused the token (${message}); sign in again with \`sluice login\``;
  return new ApiError(status, error, message, field);
}

function unreachable(baseUrl: string, err: unknown): CliError {
  const e = err as Error & { cause?: { code?: string; message?: string } };
  if (e.name === 'TimeoutError') return new CliError(`${baseUrl} did not answer within ${REQUEST_TIMEOUT_MS / 1000} s`);
  return new CliError(`cannot reach ${baseUrl}: ${e.cause?.code ?? e.cause?.message ?? e.message}`);
}
