/**
 * The web pages as a browser without JavaScript uses them, over real HTTP: a cookie jar (as
 * `Set-Cookie` leaves it), pages fetched with it, and forms posted with the CSRF token of the
 * page they are on. For tests of the pages' rules; the look and the scripts are tried in a real
 * browser (test/e2e/web*.test.ts).
 */
import type { ApiHarness, Response } from './apiApp';

/** A browser's cookies. */
export class Jar {
  private cookies = new Map<string, string>();

  /** Starts with a cookie (`name=value`), as a browser signed in elsewhere would have it. */
  constructor(cookie?: string) {
    if (cookie) {
      const [name, ...rest] = cookie.split('=');
      this.cookies.set(name!, rest.join('='));
    }
  }

  take(res: Response): void {
    for (const line of res.headers['set-cookie'] ?? []) {
      const [pair, ...attrs] = line.split(';');
      const [name, ...rest] = pair!.split('=');
      const expired = attrs.some((a) => /^\s*expires=Thu, 01 Jan 1970/i.test(a) || /^\s*max-age=0/i.test(a));
      if (expired) this.cookies.delete(name!.trim());
      else this.cookies.set(name!.trim(), rest.join('='));
    }
  }

  header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
}

export function webForms(h: ApiHarness) {
  async function get(jar: Jar, url: string): Promise<Response> {
    const res = await h.request({ method: 'GET', url, headers: { cookie: jar.header() } });
    jar.take(res);
    return res;
  }

  /** Posts a form of the page at `from` (with its CSRF token) to `to`. */
  async function post(jar: Jar, from: string, to: string, fields: Record<string, string> = {}): Promise<Response> {
    const pageRes = await get(jar, from);
    const csrf = /name="_csrf" value="([^"]+)"/.exec(pageRes.body)?.[1];
    if (!csrf) throw new Error(`no form on ${from}: ${pageRes.statusCode}`);
    const res = await h.request({
      method: 'POST',
      url: to,
      headers: { cookie: jar.header(), 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ ...fields, _csrf: csrf }).toString(),
    });
    jar.take(res);
    return res;
  }

  return { get, post };
}
