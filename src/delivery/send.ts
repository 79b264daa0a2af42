/**
 * One outgoing webhook attempt: a single HTTP POST, and what its result means for retrying.
 * No database, no Temporal: the delivery activity (deliver.ts) wraps this with the log and
 * the retry decision. Retrying itself is Temporal's job, so nothing here loops.
 */
import type { ConnectionOptions } from 'node:tls';
import { Agent, request, type Dispatcher } from 'undici';
import { FRAMING_HEADERS } from './headers';
import { BLOCKED_CODE, guardedConnector } from './ssrf';
import { type Cidr } from '../ip/ranges';

export type AttemptKind = 'delivered' | 'retryable' | 'fatal';

/**
 * What kind of trouble an attempt met, for the delivery log: an HTTP answer that was not 2xx,
 * or a failure before any answer (time-out, connection, DNS, TLS, the SSRF guard, a request
 * that cannot be sent, or our own configuration).
 */
export type ErrorClass = 'http_status' | 'timeout' | 'connection' | 'dns' | 'tls' | 'blocked' | 'invalid_request' | 'configuration';

export interface AttemptResult {
  kind: AttemptKind;
  statusCode: number | null;
  /** Why it was not delivered; never contains the password or the Authorization header. */
  error: string | null;
  durationMs: number;
  /** What the receiver's `Retry-After` asked for, on a retryable answer. */
  retryAfterMs?: number;
  /** Null when delivered. */
  errorClass?: ErrorClass | null;
  /** The headers sent (or about to be, when it failed before), credentials redacted. */
  requestHeaders?: Record<string, string>;
  /** The receiver's answer, when there was one: its headers and the first few KiB of its body, redacted. */
  responseHeaders?: Record<string, string | string[]>;
  responseBody?: string;
}

export interface SendOptions {
  url: string;
  body: string;
  headers: Record<string, string>;
  username?: string | null;
  password?: string | null;
  /** Deadline for the whole attempt: connect, send, response headers and the response excerpt. */
  timeoutMs?: number;
  /**
   * Ranges the SSRF guard lets through despite being non-public (SLUICE_WEBHOOK_ALLOW, read by
   * the caller). Default none: only public addresses are reached.
   */
  allow?: readonly Cidr[];
  /**
   * Replaces the shared, guarded Agent, guard included: tests pass their own (for example one
   * that trusts a test CA; see newWebhookAgent to keep the guard).
   */
  dispatcher?: Dispatcher;
  /** More values to cut out of everything logged (a signature, say), besides the credentials. */
  redact?: readonly string[];
}

export const USER_AGENT = 'Sluice-Webhooks/1';
export const DEFAULT_TIMEOUT_MS = 10_000;

/** We keep this much of a response, to show in the delivery log. */
const EXCERPT_BYTES = 4 * 1024;
/** We read (and throw away) at most this much more, so the connection can be reused; past it we hang up. */
const DRAIN_BYTES = 64 * 1024;
/** How much of the response excerpt goes into an error string. */
const ERROR_EXCERPT_CHARS = 200;

/** Shared Agents, one per allow-list (in practice one per process), keyed by its ranges. */
const sharedAgents = new Map<string, Agent>();

/**
 * An Agent for webhooks: every connection passes the SSRF guard (ssrf.ts), and certificates
 * are always verified. That is set explicitly: Node would otherwise honour
 * NODE_TLS_REJECT_UNAUTHORIZED=0, and spec §5 says an HTTPS target with an untrusted
 * certificate is dropped, always. `tls` adds to the TLS options (a test CA, say).
 */
export function newWebhookAgent(opts: { allow?: readonly Cidr[]; tls?: ConnectionOptions } = {}): Agent {
  return new Agent({
    connect: guardedConnector(opts.allow ?? [], { ...opts.tls, rejectUnauthorized: true, timeout: 5_000 }),
    headersTimeout: DEFAULT_TIMEOUT_MS,
    bodyTimeout: DEFAULT_TIMEOUT_MS,
    keepAliveTimeout: 4_000,
  });
}

/** One Agent per process (and allow-list), so connections to a receiver are reused across events (and a hosting site's API, src/sites/, across calls). */
export function sharedWebhookAgent(allow: readonly Cidr[]): Agent {
  const key = allow.map((c) => c.text).join(',');
  let agent = sharedAgents.get(key);
  if (!agent) {
    agent = newWebhookAgent({ allow });
    sharedAgents.set(key, agent);
  }
  return agent;
}

/** Closes the shared Agents (worker shutdown, end of a test file). The next send makes new ones. */
export async function closeDefaultAgent(): Promise<void> {
  const agents = [...sharedAgents.values()];
  sharedAgents.clear();
  await Promise.all(agents.map((a) => a.close()));
}

export async function sendWebhook(opts: SendOptions): Promise<AttemptResult> {
  const started = performance.now();
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const secrets: string[] = [...(opts.redact ?? [])];
  let requestHeaders: Record<string, string> = {};
  const finish = (r: Omit<AttemptResult, 'durationMs'>): AttemptResult => ({
    ...r,
    error: r.error === null ? null : redact(r.error, secrets),
    durationMs: Math.round(performance.now() - started),
    requestHeaders: redactHeaders(requestHeaders, secrets),
  });

  const target = parseTarget(opts.url);
  if ('error' in target) return finish({ kind: 'fatal', statusCode: null, error: target.error, errorClass: 'invalid_request' });
  if (target.password) secrets.push(target.password);

  const headers = buildHeaders(opts, target, secrets);
  requestHeaders = headers;
  try {
    const res = await request(target.url, {
      method: 'POST',
      dispatcher: opts.dispatcher ?? sharedWebhookAgent(opts.allow ?? []),
      headers,
      body: opts.body,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      // The overall deadline: headersTimeout alone restarts on every byte a slow server trickles.
      signal: AbortSignal.timeout(timeoutMs),
    });
    // Redacted before classify() cuts it short, so no half of a secret survives the cut.
    const excerpt = redact(await readExcerpt(res.body), secrets);
    const classified = classify({ statusCode: res.statusCode, retryAfter: res.headers['retry-after'], excerpt });
    return finish({
      ...classified,
      errorClass: classified.kind === 'delivered' ? null : 'http_status',
      responseHeaders: redactResponseHeaders(res.headers, secrets),
      responseBody: excerpt,
    });
  } catch (err) {
    return finish({ ...classify({ error: err, timeoutMs }), errorClass: errorClassOf(err) });
  }
}

/**
 * Header names whose values are credentials (or, for the signature, as good as one to anyone
 * replaying the request): the log shows "[redacted]" in their place.
 */
const SENSITIVE_HEADER = /^(authorization|proxy-authorization|cookie|set-cookie|webhook-signature)$|token|secret|passw|api[-_]?key|signature/i;

export const REDACTED = '[redacted]';

/** The headers as the delivery log shows them: credentials and signatures replaced, secrets cut out of the rest. */
export function redactHeaders(headers: Record<string, string>, secrets: readonly string[] = []): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) out[name] = SENSITIVE_HEADER.test(name) ? REDACTED : redact(value, secrets);
  return out;
}

/** At most this many response headers, each value at most this long, go into the log. */
const MAX_LOGGED_RESPONSE_HEADERS = 64;
const MAX_LOGGED_HEADER_CHARS = 1024;

function redactResponseHeaders(headers: Dispatcher.ResponseData['headers'], secrets: readonly string[]): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  const clip = (v: string) => {
    const r = redact(v, secrets);
    return r.length > MAX_LOGGED_HEADER_CHARS ? r.slice(0, MAX_LOGGED_HEADER_CHARS) + '…' : r;
  };
  for (const [name, value] of Object.entries(headers).slice(0, MAX_LOGGED_RESPONSE_HEADERS)) {
    if (value === undefined) continue;
    if (SENSITIVE_HEADER.test(name)) out[name] = REDACTED;
    else out[name] = Array.isArray(value) ? value.map(clip) : clip(value);
  }
  return out;
}

interface Target {
  url: string;
  /** Credentials written into the URL itself (`https://user:pass@host/`). */
  username: string;
  password: string;
}

function parseTarget(raw: string): Target | { error: string } {
  let u: URL;
  try {
    // Spec §5: trailing whitespace in a configured URL is removed.
    u = new URL(raw.trim());
  } catch {
    return { error: 'invalid webhook URL' };
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return { error: `unsupported URL scheme ${u.protocol}` };
  const target = { username: safeDecode(u.username), password: safeDecode(u.password) };
  // Credentials never travel in the URL: they become the Authorization header (below) instead.
  u.username = '';
  u.password = '';
  return { ...target, url: u.toString() };
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s; // a stray '%' that is not an escape: take it literally
  }
}

function buildHeaders(opts: SendOptions, target: Target, secrets: string[]): Record<string, string> {
  const headers: Record<string, string> = { 'content-type': 'application/json', 'user-agent': USER_AGENT };
  for (const [name, value] of Object.entries(opts.headers)) {
    const lower = name.toLowerCase();
    if (!FRAMING_HEADERS.has(lower)) headers[lower] = value;
  }
  // The configured credentials win over both the URL's and any Authorization header a caller set.
  const username = opts.username ?? (target.username || null);
  const password = opts.username != null ? (opts.password ?? '') : target.password;
  if (username !== null) {
    headers.authorization = basicAuth(username, password);
  }
  if (password) secrets.push(password);
  if (headers.authorization) secrets.push(headers.authorization, headers.authorization.replace(/^\S+\s+/, ''));
  return headers;
}

export function basicAuth(username: string, password: string): string {
  return 'Basic ' + Buffer.from(`${username}:${password}`, 'utf8').toString('base64');
}

/** Keeps the first few KiB of a response for the log, drains a little more, then hangs up. */
async function readExcerpt(body: Dispatcher.ResponseData['body']): Promise<string> {
  const kept: Buffer[] = [];
  let keptBytes = 0;
  let seen = 0;
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      seen += chunk.length;
      if (keptBytes < EXCERPT_BYTES) {
        const part = chunk.subarray(0, EXCERPT_BYTES - keptBytes);
        kept.push(part);
        keptBytes += part.length;
      }
      if (seen >= DRAIN_BYTES) break; // leaving the loop destroys the stream and its connection
    }
  } catch {
    // The status line is what counts; a body that breaks off or times out changes nothing.
  }
  return Buffer.concat(kept).toString('utf8');
}

/** What one attempt produced: a response, or an error before one arrived. */
export type Observation =
  | { statusCode: number; retryAfter?: string | string[] | undefined; excerpt?: string }
  | { error: unknown; timeoutMs?: number };

/**
 * The retry decision for one attempt, as a pure function. 2xx delivered; 408, 429, 5xx and
 * network failures retryable; every other answer fatal, and so is a certificate that does not
 * verify (spec §5) or a request that can never be valid. 3xx is fatal because redirects are not
 * followed: a receiver that moved must be reconfigured.
 */
export function classify(obs: Observation, now: number = Date.now()): Omit<AttemptResult, 'durationMs'> {
  if ('error' in obs) return classifyError(obs.error, obs.timeoutMs);
  const { statusCode } = obs;
  if (statusCode >= 200 && statusCode < 300) return { kind: 'delivered', statusCode, error: null };
  const error = `HTTP ${statusCode}${excerptSuffix(obs.excerpt)}`;
  if (statusCode === 408 || statusCode === 429 || statusCode >= 500) {
    const header = Array.isArray(obs.retryAfter) ? obs.retryAfter[0] : obs.retryAfter;
    const retryAfterMs = parseRetryAfter(header, now);
    return retryAfterMs === undefined
      ? { kind: 'retryable', statusCode, error }
      : { kind: 'retryable', statusCode, error, retryAfterMs };
  }
  return { kind: 'fatal', statusCode, error };
}

/**
 * `Retry-After` (RFC 9110 §10.2.3): a number of seconds, or an HTTP-date. Undefined when absent
 * or unreadable; a date in the past means "now" (0).
 */
export function parseRetryAfter(value: string | undefined, now: number = Date.now()): number | undefined {
  if (value === undefined) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  // The HTTP-date forms all start with a weekday; this also keeps Date.parse away from
  // things like "-1" or "1.5", which it would happily read as years.
  if (!/^(mon|tue|wed|thu|fri|sat|sun)/i.test(v)) return undefined;
  const at = Date.parse(v);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now);
}

/** OpenSSL's verification failures, as Node reports them in `err.code`. */
const CERT_ERROR_CODES = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_DECRYPT_CERT_SIGNATURE',
  'UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY',
  'CERT_SIGNATURE_FAILURE',
  'CERT_NOT_YET_VALID',
  'CERT_HAS_EXPIRED',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'CERT_REVOKED',
  'INVALID_CA',
  'INVALID_PURPOSE',
  'PATH_LENGTH_EXCEEDED',
  'HOSTNAME_MISMATCH',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

const TIMEOUT_CODES = new Set([
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'ETIMEDOUT',
]);

/** A request undici refuses to send (bad header value, ...): retrying sends the same request. */
const INVALID_REQUEST_CODES = new Set(['UND_ERR_INVALID_ARG', 'ERR_INVALID_URL', 'ERR_INVALID_HTTP_TOKEN', 'ERR_INVALID_CHAR']);

function classifyError(err: unknown, timeoutMs?: number): Omit<AttemptResult, 'durationMs'> {
  // The SSRF guard said no: the address will not become public by itself, so this is final.
  const blocked = blockedMessage(err);
  if (blocked !== undefined) return { kind: 'fatal', statusCode: null, error: blocked };
  const code = errorCode(err);
  const message = errorMessage(err);
  if (code && CERT_ERROR_CODES.has(code)) {
    return { kind: 'fatal', statusCode: null, error: `TLS certificate not trusted (${code}): ${message}` };
  }
  if (code && INVALID_REQUEST_CODES.has(code)) {
    return { kind: 'fatal', statusCode: null, error: `invalid request (${code}): ${message}` };
  }
  if (isTimeout(err, code)) {
    const after = timeoutMs === undefined ? '' : ` after ${timeoutMs} ms`;
    return { kind: 'retryable', statusCode: null, error: `timeout${after}${code ? ` (${code})` : ''}` };
  }
  // Refused, reset, unreachable, DNS, TLS handshake trouble and the rest: possibly transient.
  return { kind: 'retryable', statusCode: null, error: code ? `${code}: ${message}` : message };
}

const DNS_CODES = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_FAIL', 'EAI_NONAME', 'EAI_NODATA']);

/** The class of a failure before any answer; mirrors classifyError's decisions. */
export function errorClassOf(err: unknown): ErrorClass {
  if (blockedMessage(err) !== undefined) return 'blocked';
  const code = errorCode(err);
  if (code && CERT_ERROR_CODES.has(code)) return 'tls';
  if (code && INVALID_REQUEST_CODES.has(code)) return 'invalid_request';
  if (isTimeout(err, code)) return 'timeout';
  if (code && (code.startsWith('ERR_SSL') || code.startsWith('ERR_TLS') || code === 'EPROTO')) return 'tls';
  if (code && DNS_CODES.has(code)) return 'dns';
  return 'connection';
}

function isTimeout(err: unknown, code: string | undefined): boolean {
  if (code && TIMEOUT_CODES.has(code)) return true;
  // AbortSignal.timeout() rejects with a DOMException named TimeoutError.
  const name = (err as { name?: unknown } | null)?.name;
  return name === 'TimeoutError';
}

/** Node nests the real cause in a few ways: `cause`, or the first of an AggregateError's `errors`. */
function errorCode(err: unknown): string | undefined {
  for (let e: unknown = err, depth = 0; e && typeof e === 'object' && depth < 4; depth++) {
    const { code, cause, errors } = e as { code?: unknown; cause?: unknown; errors?: unknown };
    if (typeof code === 'string' && code !== 'UND_ERR_ABORTED') return code;
    e = cause ?? (Array.isArray(errors) ? errors[0] : undefined);
  }
  return undefined;
}

/** The guard's own message ("blocked: 127.0.0.1 is a loopback address ..."), wherever undici put it. */
function blockedMessage(err: unknown): string | undefined {
  for (let e: unknown = err, depth = 0; e && typeof e === 'object' && depth < 4; depth++) {
    const { code, message, cause, errors } = e as { code?: unknown; message?: unknown; cause?: unknown; errors?: unknown };
    if (code === BLOCKED_CODE && typeof message === 'string') return message;
    e = cause ?? (Array.isArray(errors) ? errors[0] : undefined);
  }
  return undefined;
}

function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message || err.name;
  return String(err);
}

function excerptSuffix(excerpt: string | undefined): string {
  // Printable characters only: the log is shown in a UI and in terminals.
  const text = (excerpt ?? '').replace(/[^\x20-\x7e]+/g, ' ').trim();
  if (!text) return '';
  return ': ' + (text.length > ERROR_EXCERPT_CHARS ? text.slice(0, ERROR_EXCERPT_CHARS) + '…' : text);
}

/**
 * Replaces every secret in `text`. Errors can echo what we sent (a receiver that reflects its
 * request headers into a 401 body, say), and the delivery log is visible to every org admin.
 */
export function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  // Longest first, so a secret that contains another is replaced whole.
  for (const s of [...secrets].filter((s) => s.length > 0).sort((a, b) => b.length - a.length)) {
    out = out.split(s).join('[redacted]');
  }
  return out;
}
