/**
 * Sluice as a GitHub App (issue 38): made with GitHub's manifest flow, installed once on an
 * account, one webhook for all its repositories, clones with an installation token minted for one
 * repository at a time, results as check runs. GitHub.com (`https://github.com`, API
 * `https://api.github.com`) or GitHub Enterprise Server (`https://ghe.example`, API
 * `https://ghe.example/api/v3`).
 *
 * docs.github.com: "Registering a GitHub App from a manifest", "Generating a JSON Web Token (JWT)
 * for a GitHub App" (RS256, `iat` 60 s in the past, `exp` at most 10 minutes on), REST "Apps"
 * (`POST /app-manifests/{code}/conversions`, `POST /app/installations/{id}/access_tokens`,
 * `GET /installation/repositories`) and "Check runs".
 */
import { createSign } from 'node:crypto';
import type { Dispatcher } from 'undici';
import type { Cidr } from '../../ip/ranges';
import { siteHttp, type SiteHttp } from '../http';
import { SiteError } from '../types';

const GITHUB_HEADERS = { accept: 'application/vnd.github+json', 'x-github-api-version': '2022-11-28' };

/** GitHub.com's web and API roots; an Enterprise Server's API is `<web>/api/v3`. */
export const GITHUB_COM = { webUrl: 'https://github.com', apiUrl: 'https://api.github.com' } as const;

/** The API root of the GitHub at `webUrl`. */
export function githubApiUrlOf(webUrl: string): string {
  const web = webUrl.replace(/\/+$/, '');
  return web === GITHUB_COM.webUrl ? GITHUB_COM.apiUrl : `${web}/api/v3`;
}

/** The permissions Sluice's app asks for, and why (docs/sites/github.md says the same). */
export const APP_PERMISSIONS = {
  // Clone the repositories it builds (each token is read-only and for one repository).
  contents: 'read',
  // Required of every app; names and ids of the installation's repositories.
  metadata: 'read',
  // Check runs: one per suite, with annotations at failing tests.
  checks: 'write',
  // Pull request events.
  pull_requests: 'read',
} as const;

/** The events the app's one webhook gets (installation events come to every app unasked). */
export const APP_EVENTS = ['push', 'pull_request', 'create', 'delete'] as const;

export interface ManifestUrls {
  /** Sluice's public address (the app's homepage). */
  baseUrl: string;
  /** Where GitHub delivers the app's webhook. */
  hookUrl: string;
  /** Where GitHub sends the browser back with the manifest's `code`. */
  redirectUrl: string;
  /** Where GitHub sends the browser after an installation. */
  setupUrl: string;
}

/** The app's manifest: a private app with the permissions and events above. */
export function appManifest(name: string, urls: ManifestUrls): Record<string, unknown> {
  return {
    name,
    url: urls.baseUrl,
    description: 'Builds and tests pushes and pull requests with Sluice CI.',
    hook_attributes: { url: urls.hookUrl, active: true },
    redirect_url: urls.redirectUrl,
    setup_url: urls.setupUrl,
    setup_on_update: true,
    public: false,
    default_permissions: APP_PERMISSIONS,
    default_events: APP_EVENTS,
  };
}

/** Where the browser posts the manifest: a person's account, or an organization's (`owner`). */
export function manifestFormUrl(webUrl: string, owner: string | null, state: string): string {
  const web = webUrl.replace(/\/+$/, '');
  const path = owner ? `/organizations/${encodeURIComponent(owner)}/settings/apps/new` : '/settings/apps/new';
  return `${web}${path}?state=${encodeURIComponent(state)}`;
}

/** Where a person installs the app on their accounts' repositories. */
export const installUrl = (webUrl: string, slug: string): string => `${webUrl.replace(/\/+$/, '')}/apps/${encodeURIComponent(slug)}/installations/new`;

/** What GitHub gives for a manifest's code, once: the app and its secrets. */
export interface ConvertedApp {
  id: number;
  slug: string;
  name: string;
  owner: string | null;
  htmlUrl: string;
  clientId: string;
  clientSecret: string;
  webhookSecret: string;
  pem: string;
}

interface Options {
  apiUrl: string;
  allow: readonly Cidr[];
  dispatcher?: Dispatcher;
  deadline?: number;
}

/** `POST /app-manifests/{code}/conversions`: the code is the credential (one use, an hour). */
export async function convertManifest(o: Options & { code: string }): Promise<ConvertedApp> {
  const http = siteHttp({ apiUrl: o.apiUrl, headers: GITHUB_HEADERS, secrets: [o.code], allow: o.allow, dispatcher: o.dispatcher, deadline: o.deadline });
  const a = await http.need<{
    id: number;
    slug: string;
    name: string;
    owner?: { login?: string } | null;
    html_url: string;
    client_id: string;
    client_secret: string;
    webhook_secret: string | null;
    pem: string;
  }>('POST', `/app-manifests/${encodeURIComponent(o.code)}/conversions`);
  if (!a.webhook_secret || !a.pem || typeof a.id !== 'number') throw new SiteError(502, 'GitHub made an app without a webhook secret or private key');
  return { id: a.id, slug: a.slug, name: a.name, owner: a.owner?.login ?? null, htmlUrl: a.html_url, clientId: a.client_id, clientSecret: a.client_secret, webhookSecret: a.webhook_secret, pem: a.pem };
}

const base64url = (data: Buffer | string) => Buffer.from(data).toString('base64url');

/** The app's JSON Web Token (RS256): `iat` a minute back for clock drift, `exp` nine minutes on. */
export function appJwt(appId: number, privateKeyPem: string, now: number = Date.now()): string {
  const iat = Math.floor(now / 1000) - 60;
  const head = base64url(JSON.stringify({ alg: 'RS256', typ: 'JWT' }));
  const body = base64url(JSON.stringify({ iat, exp: iat + 600 - 60, iss: String(appId) }));
  const signature = createSign('RSA-SHA256').update(`${head}.${body}`).sign(privateKeyPem);
  return `${head}.${body}.${base64url(signature)}`;
}

/** The app's keys: who it is and the private key it signs its JWTs with. */
export interface AppCredentials {
  apiUrl: string;
  appId: number;
  privateKey: string;
}

/** What a token may do, as GitHub's permission names say it. */
export type TokenPermissions = Partial<Record<keyof typeof APP_PERMISSIONS, 'read' | 'write'>>;

export interface InstallationToken {
  token: string;
  expiresAt: Date;
}

/**
 * An installation token for one repository only, with only `permissions`: the clone's is
 * `{contents: 'read'}`, the check runs' `{checks: 'write'}`. A repository the installation does
 * not cover is GitHub's 422; an installation gone, 404.
 */
export async function mintInstallationToken(
  o: Omit<Options, 'apiUrl'> & { app: AppCredentials; installationId: number; repositoryId: number; permissions: TokenPermissions },
): Promise<InstallationToken> {
  const jwt = appJwt(o.app.appId, o.app.privateKey);
  const http = siteHttp({ apiUrl: o.app.apiUrl, headers: { ...GITHUB_HEADERS, authorization: `Bearer ${jwt}` }, secrets: [jwt], allow: o.allow, dispatcher: o.dispatcher, deadline: o.deadline });
  const made = await http.need<{ token: string; expires_at: string }>('POST', `/app/installations/${o.installationId}/access_tokens`, {
    repository_ids: [o.repositoryId],
    permissions: o.permissions,
  });
  if (typeof made.token !== 'string' || made.token === '') throw new SiteError(502, 'GitHub answered without a token');
  return { token: made.token, expiresAt: new Date(made.expires_at) };
}

/** GitHub's own log of its last delivery of the app's webhook (`GET /app/hook/deliveries`), or null when it has delivered none. */
export async function appLastDelivery(o: Omit<Options, 'apiUrl'> & { app: AppCredentials }): Promise<{ at: Date; status: number | null; ok: boolean; event: string } | null> {
  const jwt = appJwt(o.app.appId, o.app.privateKey);
  const http = siteHttp({ apiUrl: o.app.apiUrl, headers: { ...GITHUB_HEADERS, authorization: `Bearer ${jwt}` }, secrets: [jwt], allow: o.allow, dispatcher: o.dispatcher, deadline: o.deadline });
  const list = await http.need<{ delivered_at: string; status_code: number; event: string }[]>('GET', '/app/hook/deliveries?per_page=1');
  const last = Array.isArray(list) ? list[0] : undefined;
  if (!last) return null;
  // 0: GitHub got no answer.
  const status = last.status_code > 0 ? last.status_code : null;
  return { at: new Date(last.delivered_at), status, ok: status !== null && status >= 200 && status < 300, event: last.event };
}

/** Requests as the installation, with a token of its own (check runs). */
export function installationHttp(o: Omit<Options, 'apiUrl'> & { apiUrl: string; token: string }): SiteHttp {
  return siteHttp({ apiUrl: o.apiUrl, headers: { ...GITHUB_HEADERS, authorization: `Bearer ${o.token}` }, secrets: [o.token], allow: o.allow, dispatcher: o.dispatcher, deadline: o.deadline });
}
