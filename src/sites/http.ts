/**
 * JSON over HTTP to a hosting site's API. The API's address is an organization admin's input,
 * so every request goes through the outgoing webhooks' guarded Agent (delivery/ssrf.ts: no
 * private or loopback address unless SLUICE_WEBHOOK_ALLOW names it, certificates verified, no
 * redirects), under a deadline, with a bounded answer. The token is cut out of every error.
 */
import { request, type Dispatcher } from 'undici';
import type { Cidr } from '../ip/ranges';
import { redact, sharedWebhookAgent } from '../delivery/send';
import { SiteError } from './types';

export interface SiteHttpOptions {
  /** The API's root, without a trailing slash: `https://gitlab.example.com/api/v4`. */
  apiUrl: string;
  /** The credential and content negotiation the site wants on every request. */
  headers: Record<string, string>;
  /** Values cut out of every error (the token). */
  secrets: readonly string[];
  allow: readonly Cidr[];
  /** Tests: replaces the guarded Agent. */
  dispatcher?: Dispatcher;
  timeoutMs?: number;
  /** When every request must have been answered (epoch ms); none by default. */
  deadline?: number;
}

export interface SiteResponse<T> {
  status: number;
  body: T;
  /** The next page's URL from a `Link: <…>; rel="next"` header, when the site sent one. */
  next: string | null;
  /** The answer's headers, names in lower case. */
  headers: Record<string, string | string[] | undefined>;
}

const DEFAULT_TIMEOUT_MS = 15_000;
/** More than any listing page or object the sites send; a larger answer is an error, not memory. */
const MAX_BODY_BYTES = 8 * 1024 * 1024;
/** Pages of a list read at most (100 a page: 5,000 repositories). */
export const MAX_PAGES = 50;

export interface SiteHttp {
  /** One request; any status is returned (the caller decides), a transport failure is a SiteError with status null. */
  call<T>(method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', pathOrUrl: string, body?: unknown): Promise<SiteResponse<T>>;
  /** A request that must succeed (2xx); else a SiteError naming the request and the site's message. */
  need<T>(method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', path: string, body?: unknown): Promise<T>;
  /** Every page of a list, following `rel="next"` links on the same API (at most MAX_PAGES). */
  all<T>(path: string): Promise<T[]>;
  /** Deletes what `path` names; gone already (404) is no error. */
  remove(path: string): Promise<void>;
}

export function siteHttp(o: SiteHttpOptions): SiteHttp {
  const root = new URL(`${o.apiUrl}/`);
  const timeoutMs = o.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const clean = (text: string) => redact(text, o.secrets);

  const call = async <T>(method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', pathOrUrl: string, body?: unknown): Promise<SiteResponse<T>> => {
    const url = /^https?:/.test(pathOrUrl) ? new URL(pathOrUrl) : new URL(pathOrUrl.replace(/^\//, ''), root);
    // A next-page link is the site's to give, but never to another host: the token goes with it.
    if (url.origin !== root.origin) throw new SiteError(null, `the site pointed to another host (${url.origin})`);
    const left = o.deadline === undefined ? timeoutMs : Math.min(timeoutMs, o.deadline - Date.now());
    if (left <= 0) throw new SiteError(null, `${method} ${url.pathname}: the site did not answer in time`);
    let res: Dispatcher.ResponseData;
    try {
      res = await request(url, {
        method,
        dispatcher: o.dispatcher ?? sharedWebhookAgent(o.allow),
        // The site's own headers last: GitHub, say, wants its own Accept.
        headers: { 'user-agent': 'Sluice', accept: 'application/json', ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...o.headers },
        body: body === undefined ? undefined : JSON.stringify(body),
        headersTimeout: left,
        bodyTimeout: left,
        signal: AbortSignal.timeout(left),
      });
    } catch (err) {
      throw new SiteError(null, clean(`${method} ${url.pathname} did not get an answer: ${(err as Error).message}`));
    }
    const text = await readCapped(res.body);
    let parsed: unknown = text;
    if (text !== '' && /json/.test(String(res.headers['content-type'] ?? ''))) {
      try {
        parsed = JSON.parse(text);
      } catch {
        throw new SiteError(res.statusCode, `${method} ${url.pathname}: the site's answer is not JSON`);
      }
    }
    return { status: res.statusCode, body: parsed as T, next: nextLink(res.headers.link), headers: res.headers };
  };

  const need = async <T>(method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', path: string, body?: unknown): Promise<T> => {
    const res = await call<T>(method, path, body);
    if (res.status < 200 || res.status >= 300) throw new SiteError(res.status, clean(`${method} ${path} answered ${res.status}${messageOf(res.body)}`));
    return res.body;
  };

  const all = async <T>(path: string): Promise<T[]> => {
    const items: T[] = [];
    let next: string | null = path;
    for (let page = 0; next !== null && page < MAX_PAGES; page++) {
      const res: SiteResponse<T[]> = await call<T[]>('GET', next);
      if (res.status !== 200 || !Array.isArray(res.body)) throw new SiteError(res.status, clean(`GET ${path} answered ${res.status}${messageOf(res.body)}`));
      items.push(...res.body);
      next = res.next;
    }
    return items;
  };

  const remove = async (path: string): Promise<void> => {
    const res = await call('DELETE', path);
    if (res.status !== 200 && res.status !== 204 && res.status !== 404) throw new SiteError(res.status, clean(`DELETE ${path} answered ${res.status}${messageOf(res.body)}`));
  };

  return { call, need, all, remove };
}

/** The site's own words for a refusal: GitLab's and Gitea's `message` (or `error`), short. */
function messageOf(body: unknown): string {
  if (typeof body === 'object' && body !== null) {
    const b = body as Record<string, unknown>;
    const m = b.message ?? b.error;
    if (m !== undefined) return `: ${(typeof m === 'string' ? m : JSON.stringify(m)).slice(0, 300)}`;
  }
  return typeof body === 'string' && body.trim() !== '' ? `: ${body.trim().slice(0, 300)}` : '';
}

/** The `rel="next"` URL of an RFC 8288 Link header (GitLab and Gitea both page this way). */
export function nextLink(header: string | string[] | undefined): string | null {
  const value = Array.isArray(header) ? header.join(',') : header;
  if (!value) return null;
  for (const part of value.split(',')) {
    const m = /^\s*<([^>]+)>\s*;(.*)$/.exec(part);
    if (m && /\brel="?next"?/.test(m[2]!)) return m[1]!;
  }
  return null;
}

async function readCapped(body: Dispatcher.ResponseData['body']): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) {
      body.destroy();
      throw new SiteError(null, `the site's answer is larger than ${MAX_BODY_BYTES} bytes`);
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}
