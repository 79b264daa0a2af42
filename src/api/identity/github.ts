/**
 * Signing in with GitHub (or GitHub Enterprise Server), which speaks OAuth 2 but not OpenID
 * Connect: the person comes from its REST API (`/user`, `/user/emails`), their groups from the
 * organizations and teams they belong to (`acme`, `acme/ci-admins`). Its tokens do not expire,
 * so asking again is asking `/user` with the token: GitHub says no (401) once the person revoked
 * Sluice's access or the app was removed.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { SignInProvider } from '../../config';
import { SignInError, type Identity, type SignInClient } from './types';

type GitHubProvider = Extract<SignInProvider, { kind: 'github' }>;

/** What Sluice asks for: who you are, your addresses, and your organizations and teams. */
export const GITHUB_SCOPES = 'read:user user:email read:org';

const TIMEOUT_MS = 10_000;
/** Pages of organizations or teams read at most: 1,000 of each. */
const MAX_PAGES = 10;

export function githubClient(p: GitHubProvider): SignInClient {
  const api = async <T>(path: string, token: string): Promise<{ status: number; body: T }> => {
    const res = await fetch(`${p.apiUrl}${path}`, {
      headers: { authorization: `Bearer ${token}`, accept: 'application/vnd.github+json', 'x-github-api-version': '2022-11-28', 'user-agent': 'sluice' },
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
    return { status: res.status, body: (res.ok ? await res.json() : await res.text()) as T };
  };
  const need = async <T>(path: string, token: string): Promise<T> => {
    const res = await api<T>(path, token);
    if (res.status !== 200) throw new SignInError(`${p.name} did not answer ${path} (${res.status})`);
    return res.body;
  };
  /** Every page of a list (100 a page, GitHub's most; at most MAX_PAGES of them). */
  const all = async <T>(path: string, token: string): Promise<T[]> => {
    const items: T[] = [];
    for (let page = 1; page <= MAX_PAGES; page++) {
      const batch = await need<T[]>(`${path}?per_page=100&page=${page}`, token);
      items.push(...batch);
      if (batch.length < 100) break;
    }
    return items;
  };

  return {
    async start(redirectUri) {
      const verifier = randomBytes(32).toString('base64url');
      const state = randomBytes(16).toString('base64url');
      const url = new URL(`${p.webUrl}/login/oauth/authorize`);
      url.search = new URLSearchParams({
        client_id: p.clientId,
        redirect_uri: redirectUri,
        scope: GITHUB_SCOPES,
        state,
        code_challenge: createHash('sha256').update(verifier).digest('base64url'),
        code_challenge_method: 'S256',
        allow_signup: 'false',
      }).toString();
      return { url: url.href, pending: { state, verifier } };
    },

    async finish(callbackUrl, pending, redirectUri) {
      const q = callbackUrl.searchParams;
      if (q.get('error')) throw new SignInError(`${p.name} did not sign you in: ${q.get('error_description') ?? q.get('error')}`);
      if (q.get('state') !== pending.state) throw new SignInError('the answer does not belong to this sign-in (state): start again');
      const code = q.get('code');
      if (!code) throw new SignInError(`${p.name} sent no code`);
      const res = await fetch(`${p.webUrl}/login/oauth/access_token`, {
        method: 'POST',
        headers: { accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded', 'user-agent': 'sluice' },
        body: new URLSearchParams({ client_id: p.clientId, client_secret: p.clientSecret, code, redirect_uri: redirectUri, code_verifier: pending.verifier }).toString(),
        signal: AbortSignal.timeout(TIMEOUT_MS),
      });
      // GitHub answers a refused code with 200 and an `error` field.
      const token = (await res.json().catch(() => ({}))) as { access_token?: string; error?: string; error_description?: string };
      if (!res.ok || !token.access_token) throw new SignInError(`${p.name} did not sign you in: ${token.error_description ?? token.error ?? `HTTP ${res.status}`}`);
      const access = token.access_token;
      const user = await need<{ id: number; login: string; name: string | null }>('/user', access);
      const emails = await all<{ email: string; primary: boolean; verified: boolean }>('/user/emails', access);
      const orgs = await all<{ login: string }>('/user/orgs', access);
      const teams = await all<{ slug: string; organization: { login: string } }>('/user/teams', access);
      const primary = emails.find((e) => e.primary && e.verified) ?? emails.find((e) => e.verified);
      return {
        subject: String(user.id),
        name: user.name || user.login,
        // Someone with no verified address is known by GitHub's private one for them.
        email: primary?.email ?? `${user.id}+${user.login}@users.noreply.github.com`,
        emailVerified: primary !== undefined,
        groups: [...orgs.map((o) => o.login), ...teams.map((t) => `${t.organization.login}/${t.slug}`)],
        renewal: access,
      } satisfies Identity;
    },

    async renew(renewal) {
      const res = await api('/user', renewal);
      if (res.status === 401) return null;
      if (res.status !== 200) throw new Error(`${p.name} answered /user with ${res.status}`);
      return { renewal };
    },
  };
}
