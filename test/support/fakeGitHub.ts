/**
 * GitHub's sign-in, as a local server that holds Sluice to GitHub's documented request shapes
 * (docs.github.com: "Authorizing OAuth apps", the REST API's users, emails, orgs and teams
 * endpoints). It cannot be the real GitHub (no internet here), so every request that differs
 * from what GitHub documents is kept in `problems` for the test to assert empty, and answered
 * as GitHub answers it (a refused code is a 200 with `error`; a bad token a 401).
 */
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface GitHubUser {
  id: number;
  login: string;
  name: string | null;
  emails: { email: string; primary: boolean; verified: boolean }[];
  orgs: string[];
  /** `org/team-slug` */
  teams: string[];
}

export interface FakeGitHub {
  /** Web and API base URLs (GitHub Enterprise Server's shape: the API under /api/v3). */
  webUrl: string;
  apiUrl: string;
  /** Who signs in at the next authorization (GitHub would ask them). */
  signInAs(login: string): void;
  /** The person revokes the app's access: their tokens stop working. */
  revoke(login: string): void;
  /** Requests that differ from GitHub's documentation. */
  problems: string[];
  close(): Promise<void>;
}

export async function startFakeGitHub(opts: { clientId: string; clientSecret: string; users: GitHubUser[] }): Promise<FakeGitHub> {
  const problems: string[] = [];
  const codes = new Map<string, { login: string; redirectUri: string; challenge: string }>();
  const tokens = new Map<string, string>();
  let next: string | undefined;
  const user = (login: string) => opts.users.find((u) => u.login === login)!;

  const json = (res: http.ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
    res.end(JSON.stringify(body));
  };
  const expect = (what: string, ok: boolean) => {
    if (!ok) problems.push(what);
    return ok;
  };

  const server = http.createServer((req, res) => {
    const url = new URL(req.url!, 'http://github.test');
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      // https://docs.github.com/en/apps/oauth-apps/building-oauth-apps/authorizing-oauth-apps#1-request-a-users-github-identity
      if (req.method === 'GET' && url.pathname === '/login/oauth/authorize') {
        const q = url.searchParams;
        expect('authorize: client_id', q.get('client_id') === opts.clientId);
        expect('authorize: state', (q.get('state') ?? '').length >= 16);
        expect('authorize: scope', (q.get('scope') ?? '').split(' ').includes('user:email'));
        expect('authorize: code_challenge_method S256', q.get('code_challenge_method') === 'S256');
        expect('authorize: code_challenge', /^[A-Za-z0-9_-]{43}$/.test(q.get('code_challenge') ?? ''));
        const redirectUri = q.get('redirect_uri') ?? '';
        if (!next) return json(res, 400, { error: 'no one signs in' });
        const code = randomBytes(10).toString('hex');
        codes.set(code, { login: next, redirectUri, challenge: q.get('code_challenge') ?? '' });
        const back = new URL(redirectUri);
        back.searchParams.set('code', code);
        back.searchParams.set('state', q.get('state') ?? '');
        res.writeHead(302, { location: back.href });
        return res.end();
      }
      // https://docs.github.com/en/apps/oauth-apps/building-oauth-apps/authorizing-oauth-apps#2-users-are-redirected-back-to-your-site-by-github
      if (req.method === 'POST' && url.pathname === '/login/oauth/access_token') {
        expect('access_token: Accept: application/json', req.headers.accept === 'application/json');
        expect('access_token: a form body', (req.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded'));
        const form = new URLSearchParams(body);
        const granted = codes.get(form.get('code') ?? '');
        codes.delete(form.get('code') ?? '');
        const verifier = form.get('code_verifier') ?? '';
        if (
          !expect('access_token: client_id and client_secret', form.get('client_id') === opts.clientId && form.get('client_secret') === opts.clientSecret) ||
          !granted ||
          !expect('access_token: the same redirect_uri', form.get('redirect_uri') === granted.redirectUri) ||
          !expect('access_token: code_verifier', createHash('sha256').update(verifier).digest('base64url') === granted.challenge)
        ) {
          return json(res, 200, { error: 'bad_verification_code', error_description: 'The code passed is incorrect or expired.' });
        }
        const token = `gho_${randomBytes(18).toString('hex')}`;
        tokens.set(token, granted.login);
        return json(res, 200, { access_token: token, token_type: 'bearer', scope: 'read:org,read:user,user:email' });
      }
      // https://docs.github.com/en/rest/users/users#get-the-authenticated-user (and emails, orgs, teams)
      if (req.method === 'GET' && url.pathname.startsWith('/api/v3/')) {
        expect(`${url.pathname}: Accept: application/vnd.github+json`, req.headers.accept === 'application/vnd.github+json');
        expect(`${url.pathname}: X-GitHub-Api-Version`, req.headers['x-github-api-version'] === '2022-11-28');
        // "All API requests must include a valid User-Agent header": GitHub refuses the rest.
        if (!expect(`${url.pathname}: User-Agent`, Boolean(req.headers['user-agent']))) return json(res, 403, { message: 'Request forbidden by administrative rules.' });
        const login = tokens.get(/^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '');
        if (!login) return json(res, 401, { message: 'Bad credentials', documentation_url: 'https://docs.github.com/rest' });
        const u = user(login);
        // Lists come a page at a time: `per_page` (default 30, at most 100) and `page`.
        const perPage = Number(url.searchParams.get('per_page') ?? 30);
        expect(`${url.pathname}: per_page at most 100`, perPage >= 1 && perPage <= 100);
        const page = Number(url.searchParams.get('page') ?? 1);
        const paged = <T>(items: T[]) => items.slice((page - 1) * perPage, page * perPage);
        switch (url.pathname.slice('/api/v3'.length)) {
          case '/user':
            return json(res, 200, { id: u.id, login: u.login, name: u.name, email: null, type: 'User' });
          case '/user/emails':
            return json(res, 200, paged(u.emails.map((e) => ({ ...e, visibility: e.primary ? 'private' : null }))));
          case '/user/orgs':
            return json(res, 200, paged(u.orgs.map((login) => ({ login, id: login.length }))));
          case '/user/teams':
            return json(res, 200, paged(u.teams.map((t) => ({ slug: t.split('/')[1], name: t, organization: { login: t.split('/')[0] } }))));
        }
      }
      json(res, 404, { message: 'Not Found' });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    webUrl: base,
    apiUrl: `${base}/api/v3`,
    signInAs: (login) => {
      next = login;
    },
    revoke: (login) => {
      for (const [token, who] of tokens) if (who === login) tokens.delete(token);
    },
    problems,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
