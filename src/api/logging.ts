/**
 * Request logging that never writes a secret. The repository key is a path segment
 * (`/1/<provider>/<KEY>`: possession of the URL authorizes a build, spec §5), so request URLs
 * are logged with that segment replaced; Authorization and Cookie headers are censored should
 * anything ever log headers.
 */
import type { FastifyInstance, FastifyRequest, FastifyServerOptions } from 'fastify';

export interface ApiLogOptions {
  /** pino level; default `info`. */
  level?: string;
  /** Where log lines go (one JSON object per line); default stdout. */
  stream?: { write(line: string): unknown };
}

export const REDACTED = '[redacted]';

/** Fastify logger options for `buildApp`; no options means no logging (tests, embedding). */
export function loggerOptions(log: ApiLogOptions | undefined): FastifyServerOptions['logger'] {
  if (!log) return false;
  return {
    level: log.level ?? 'info',
    ...(log.stream ? { stream: log.stream } : {}),
    serializers: { req: serializeRequest },
    redact: {
      paths: ['req.headers.authorization', 'req.headers.cookie', 'headers.authorization', 'headers.cookie'],
      censor: REDACTED,
    },
  };
}

/**
 * One line per request, when it has answered: its method, redacted URL, address, status and
 * time. Fastify's own request logging (off in buildApp) writes two, the first as the request
 * arrives: in a CPU profile of the API under `npm run bench -- events`, the log's writes were its
 * largest frame after module loading and GC (1.1 s of 23.6 s busy, beside 0.5 s for writing the
 * HTTP answers themselves).
 */
export function logRequests(app: FastifyInstance): void {
  app.addHook('onResponse', async (request, reply) => {
    request.log.info({ req: request, res: reply, responseTime: reply.elapsedTime }, 'request completed');
  });
}

function serializeRequest(request: FastifyRequest): Record<string, unknown> {
  return { method: request.method, url: redactUrl(request.url), remoteAddress: request.ip };
}

/**
 * The URL as it may be logged. Under `/1/` everything after the first segment (the provider)
 * is replaced, whether or not the route exists (a mistyped path still carries a real key);
 * report pages, `/1/reports/<number>`, keep theirs. Elsewhere any segment that looks like a
 * key (24+ URL-safe characters, as newRepoKey makes 32) is replaced too; so are the values of
 * the query parameters `token` (the one that opens a report page), `code` and `state` (an
 * identity provider's answer).
 */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  const query = q === -1 ? '' : url.slice(q).replace(/([?&](?:token|code|state)=)[^&#]*/gi, `$1${REDACTED}`);
  const segments = path.split('/').filter((s) => s !== '');
  if (segments[0] === '1') {
    if (segments[1] === 'reports' && segments.length === 3 && /^\d+$/.test(segments[2]!)) return `${path}${query}`;
    const kept = segments.length >= 3 ? segments.slice(0, 2) : segments.slice(0, 1);
    const redacted = segments.length > kept.length ? [REDACTED] : [];
    return `/${[...kept, ...redacted].join('/')}${query}`;
  }
  if (!segments.some(looksLikeKey)) return `${path}${query}`;
  return `/${segments.map((s) => (looksLikeKey(s) ? REDACTED : s)).join('/')}${query}`;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function looksLikeKey(segment: string): boolean {
  let s = segment;
  try {
    s = decodeURIComponent(segment);
  } catch {
    // Malformed escapes: judge the raw text.
  }
  return !UUID.test(s) && /^[A-Za-z0-9_-]{24,}$/.test(s);
}
