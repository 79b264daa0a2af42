/**
 * What the fake hosting sites (fakeGitLab.ts, fakeGitea.ts) share: an HTTP server on loopback
 * that reads JSON bodies, keeps every request that differs from the site's documentation in
 * `problems` (a test asserts it empty), and delivers hooks as the site would.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SiteRequest {
  method: string;
  url: URL;
  headers: http.IncomingHttpHeaders;
  /** The parsed JSON body, or undefined. */
  body: unknown;
}

export interface SiteReply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export interface SiteServer {
  base: string;
  problems: string[];
  /** Every request, in order (method and path with query). */
  requests: string[];
  close(): Promise<void>;
}

export async function startSiteServer(handle: (req: SiteRequest, expect: (what: string, ok: boolean) => boolean) => SiteReply): Promise<SiteServer> {
  const problems: string[] = [];
  const requests: string[] = [];
  const expect = (what: string, ok: boolean) => {
    if (!ok) problems.push(what);
    return ok;
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url!, 'http://site.test');
      requests.push(`${req.method} ${url.pathname}${url.search}`);
      const text = Buffer.concat(chunks).toString('utf8');
      let body: unknown;
      if (text !== '') {
        expect(`${req.method} ${url.pathname}: content-type application/json`, (req.headers['content-type'] ?? '').startsWith('application/json'));
        try {
          body = JSON.parse(text);
        } catch {
          expect(`${req.method} ${url.pathname}: a JSON body`, false);
        }
      }
      let reply: SiteReply;
      try {
        reply = handle({ method: req.method!, url, headers: req.headers, body }, expect);
      } catch (err) {
        problems.push(`the fake failed: ${(err as Error).message}`);
        reply = { status: 500, body: { message: '500 Internal Server Error' } };
      }
      res.writeHead(reply.status, { ...(reply.body === undefined ? {} : { 'content-type': 'application/json' }), ...reply.headers });
      res.end(reply.body === undefined ? undefined : JSON.stringify(reply.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    problems,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Problems for the fields of `body` a documented request does not have, and for missing required ones. */
export function checkFields(expect: (what: string, ok: boolean) => boolean, where: string, body: unknown, allowed: readonly string[], required: readonly string[] = []): Record<string, unknown> {
  const b = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  for (const key of Object.keys(b)) expect(`${where}: undocumented field ${key}`, allowed.includes(key));
  for (const key of required) expect(`${where}: required field ${key}`, b[key] !== undefined);
  return b;
}

/** Problems for query parameters a documented request does not take. */
export function checkQuery(expect: (what: string, ok: boolean) => boolean, where: string, url: URL, allowed: readonly string[]): void {
  for (const key of url.searchParams.keys()) expect(`${where}: undocumented query parameter ${key}`, allowed.includes(key));
}

/** A page of `items` (1-based `page`, `perPage` each) with an RFC 8288 `Link: rel="next"` when more follow. */
export function paged<T>(url: URL, items: T[], perPage: number, page: number, linkBase: string): SiteReply {
  const slice = items.slice((page - 1) * perPage, page * perPage);
  const headers: Record<string, string> = { 'x-total-count': String(items.length) };
  if (page * perPage < items.length) {
    const next = new URL(`${linkBase}${url.pathname}${url.search}`);
    next.searchParams.set('page', String(page + 1));
    headers.link = `<${next.href}>; rel="next"`;
  }
  return { status: 200, body: slice, headers };
}

/** POSTs a hook as a site delivers one: the body, its headers; the status Sluice answered (null: no answer). */
export async function deliverHook(url: string, headers: Record<string, string>, body: string): Promise<number | null> {
  try {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
    await res.arrayBuffer();
    return res.status;
  } catch {
    return null;
  }
}
