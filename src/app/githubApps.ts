/**
 * Sluice as a GitHub App (issue 38), as the JSON API and the web pages both decide about it.
 *
 * - **Made** by an organization admin with GitHub's manifest flow: Sluice gives the manifest and
 *   a signed `state` (the organization, the GitHub, the webhook's path, an hour's life), the
 *   browser posts it to GitHub, GitHub sends it back with a `code`, and Sluice trades the code
 *   for the app's id and secrets (sealed, never shown again).
 * - **Followed** through its one webhook: `installation` and `installation_repositories` keep
 *   the installations and their repositories; pushes and pull requests of an activated
 *   repository go down the trigger path as a GitHub hook would.
 * - **Activating** one of the installations' repositories makes the Sluice repository, pulled
 *   over HTTPS with an installation token minted per checkout for that repository only
 *   (`checkoutTokens`), and reported through check runs (delivery/checkRuns.ts).
 */
import { createHmac, randomBytes } from 'node:crypto';
import { z } from 'zod';
import { sameSecret } from '../crypto/compare';
import { seal, unseal } from '../crypto/sealed';
import {
  addInstallationRepos,
  appCheckoutOfRepo,
  appLinkOfRepo,
  appLinkOfSiteRepo,
  deleteAppLink,
  deleteGitHubApp,
  deleteInstallation,
  findGitHubApp,
  findGitHubAppByHook,
  findInstallationRepo,
  insertGitHubApp,
  listGitHubApps,
  listInstallationRepos,
  listInstallations,
  removeInstallationRepos,
  renameAppLink,
  saveAppLink,
  saveInstallation,
  type GitHubAppRow,
  type GitHubAppWithSecrets,
} from '../db/githubApps';
import type { Config } from '../config';
import { hookHealthOf } from '../db/connections';
import { sluiceRepoName } from './connections';
import type { OrgRow } from '../db/orgs';
import type { RepoRow } from '../db/repos';
import { uniqueViolation, type Db } from '../db/transaction';
import { findTriggerTargetById, type TriggerTarget } from '../db/triggerKnowledge';
import {
  appLastDelivery,
  appManifest,
  convertManifest,
  GITHUB_COM,
  githubApiUrlOf,
  installationHttp,
  installUrl,
  manifestFormUrl,
  mintInstallationToken,
  type TokenPermissions,
} from '../sites/github/app';
import { SiteError } from '../sites/types';
import type { CheckoutTokens } from '../steps/records';
import type { AppDeps } from './deps';
import { AppError, conflict, notFound, parseId, validate } from './errors';
import { httpUrl, resourceName, withoutCredentials } from './fields';
import { createRepo, reloadRepo } from './repos';

type Deps = Pick<AppDeps, 'pool' | 'config'>;
/** What minting a token needs: the app's keys are unsealed with the secret key, GitHub asked through the guard. */
type TokenDeps = { pool: Db; config: Pick<Config, 'secretKey' | 'webhookAllow'> };

/** How long a manifest's state (and GitHub's code) is good for. */
const MANIFEST_TTL_MS = 60 * 60 * 1000;

export const StartManifest = z
  .strictObject({
    web_url: httpUrl
      .refine(withoutCredentials, 'must not contain credentials')
      .refine((s) => !/[?#]/.test(s), 'a base URL without query or fragment')
      .transform((s) => new URL(s).href.replace(/\/+$/, ''))
      .default(GITHUB_COM.webUrl)
      .describe('GitHub’s address: `https://github.com` (the default), or a GitHub Enterprise Server’s `https://ghe.example.com`'),
    owner: z
      .string()
      .regex(/^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$/, 'a GitHub organization’s login')
      .optional()
      .describe('the GitHub organization to own the app; default the signed-in person’s account at GitHub'),
    name: z.string().trim().min(1).max(34).optional().describe('the app’s name (unique on GitHub, at most 34 characters); default `Sluice <organization>`'),
  })
  .meta({ examples: [{}, { web_url: 'https://ghe.example.com', owner: 'acme' }] });

export const FinishManifest = z
  .strictObject({
    code: z.string().min(1).max(200).regex(/^[A-Za-z0-9_-]+$/, 'the code GitHub added to the redirect').describe('GitHub’s `code` from the redirect'),
    state: z.string().min(1).max(2000).describe('the `state` Sluice gave with the manifest, as GitHub sends it back'),
  })
  .meta({ examples: [{ code: 'a1b2c3d4e5f6', state: 'eyJvIjoxfQ.x' }] });

export const ActivateAppRepo = z
  .strictObject({
    site_repo_id: z.coerce.number().int().positive().max(Number.MAX_SAFE_INTEGER).describe('GitHub’s id of the repository, as the app’s list gives it'),
    name: resourceName.optional().describe('the Sluice repository’s name; default the GitHub repository’s name'),
  })
  .meta({ examples: [{ site_repo_id: 1296269 }] });

export const ManifestForm = z.object({
  form_url: z.string().describe('where the browser POSTs the manifest (a form with one field, `manifest`)'),
  manifest: z.record(z.string(), z.unknown()).describe('the app’s manifest, as the form’s `manifest` field (JSON)'),
  state: z.string().describe('binds GitHub’s redirect to this organization; good for an hour'),
  redirect_url: z.string(),
});

export const GitHubApp = z.object({
  id: z.number().int(),
  org_id: z.number().int(),
  web_url: z.string(),
  api_url: z.string(),
  app_id: z.number().int().describe('GitHub’s id of the app'),
  slug: z.string(),
  name: z.string(),
  owner: z.string().nullable(),
  html_url: z.string(),
  install_url: z.string().describe('where a person installs the app on an account’s repositories'),
  hook_url: z.string().describe('the app’s one webhook, for every installation'),
  created_by: z.string().nullable(),
  created_at: z.date(),
});

export const GitHubAppDetail = GitHubApp.extend({
  site_last_delivery: z
    .object({ at: z.date(), status: z.number().int().nullable(), ok: z.boolean(), event: z.string() })
    .nullable()
    .describe('GitHub’s own log of its last delivery of the app’s webhook (null: none yet)'),
  site_error: z.string().nullable().describe('why GitHub could not be asked, if it could not'),
  installations: z.array(z.object({ installation_id: z.number().int(), account: z.string(), suspended: z.boolean(), updated_at: z.date() })),
  repositories: z.array(
    z.object({
      installation_id: z.number().int(),
      site_repo_id: z.number().int(),
      full_name: z.string(),
      private: z.boolean(),
      repo: z.object({ id: z.number().int(), name: z.string() }).nullable().describe('the Sluice repository building it, if any'),
    }),
  ),
});

const hookUrlOf = (deps: Deps, hookToken: string) => `${deps.config.baseUrl}/api/v1/github-apps/hooks/${hookToken}`;

export const gitHubAppView = (deps: Deps, a: GitHubAppRow): z.output<typeof GitHubApp> => ({
  id: a.id,
  org_id: a.org_id,
  web_url: a.web_url,
  api_url: a.api_url,
  app_id: a.app_id,
  slug: a.slug,
  name: a.name,
  owner: a.owner,
  html_url: a.html_url,
  install_url: installUrl(a.web_url, a.slug),
  hook_url: hookUrlOf(deps, a.hook_token),
  created_by: a.created_by,
  created_at: a.created_at,
});

// --- the manifest flow -------------------------------------------------------------------------

interface ManifestState {
  /** The organization. */
  o: number;
  /** GitHub's web address. */
  w: string;
  /** The webhook's path token. */
  t: string;
  /** Expiry, epoch ms. */
  e: number;
}

const stateMac = (deps: Deps, payload: string) => createHmac('sha256', deps.config.secretKey).update(`github-app-manifest:${payload}`).digest('base64url');

function signState(deps: Deps, s: ManifestState): string {
  const payload = Buffer.from(JSON.stringify(s)).toString('base64url');
  return `${payload}.${stateMac(deps, payload)}`;
}

function readState(deps: Deps, org: OrgRow, state: string): ManifestState {
  const bad = (why: string) => new AppError('invalid', `${why}: start again from Sluice’s Hosting sites page`, 'state');
  const [payload = '', mac = ''] = state.split('.');
  if (!sameSecret(mac, stateMac(deps, payload))) throw bad('this state was not made by this Sluice');
  const s = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as ManifestState;
  if (s.o !== org.id) throw bad(`this state is another organization’s`);
  if (s.e < Date.now()) throw bad('this state has expired (GitHub’s code is good for an hour)');
  return s;
}

/** Where the browser goes back to after GitHub made the app (the web page finishes the flow). */
export const manifestRedirectPath = (org: OrgRow) => `/orgs/${encodeURIComponent(org.name)}/github-apps/created`;

/** The manifest and where to post it: the first step of the flow. */
export function startManifest(deps: Deps, org: OrgRow, input: unknown): z.output<typeof ManifestForm> {
  const body = validate(StartManifest, input ?? {});
  const hookToken = randomBytes(18).toString('base64url');
  const state = signState(deps, { o: org.id, w: body.web_url, t: hookToken, e: Date.now() + MANIFEST_TTL_MS });
  const redirectUrl = `${deps.config.baseUrl}${manifestRedirectPath(org)}`;
  const manifest = appManifest(body.name ?? `Sluice ${org.name}`.slice(0, 34), {
    baseUrl: deps.config.baseUrl,
    hookUrl: hookUrlOf(deps, hookToken),
    redirectUrl,
    setupUrl: `${deps.config.baseUrl}/orgs/${encodeURIComponent(org.name)}/connections`,
  });
  return { form_url: manifestFormUrl(body.web_url, body.owner ?? null, state), manifest, state, redirect_url: redirectUrl };
}

/** The flow's end: GitHub's code for the app's id and secrets, kept sealed. */
export async function finishManifest(deps: Deps, org: OrgRow, input: unknown, by: string | null): Promise<GitHubAppRow> {
  const body = validate(FinishManifest, input);
  const state = readState(deps, org, body.state);
  const apiUrl = githubApiUrlOf(state.w);
  let made;
  try {
    made = await convertManifest({ apiUrl, code: body.code, allow: deps.config.webhookAllow });
  } catch (err) {
    if (!(err instanceof SiteError)) throw err;
    if (err.status === 404 || err.status === 422) throw new AppError('invalid', `GitHub does not know this code (it is good for an hour, once): ${err.message}`, 'code');
    throw new AppError('site', `asking ${apiUrl} for the app: ${err.message}`, undefined, 30);
  }
  const key = deps.config.secretKey;
  try {
    return await insertGitHubApp(deps.pool, {
      org_id: org.id,
      web_url: state.w,
      api_url: apiUrl,
      app_id: made.id,
      slug: made.slug,
      name: made.name,
      owner: made.owner,
      html_url: made.htmlUrl,
      client_id: made.clientId,
      client_secret_sealed: seal(key, made.clientSecret),
      private_key_sealed: seal(key, made.pem),
      webhook_secret_sealed: seal(key, made.webhookSecret),
      hook_token: state.t,
      created_by: by,
    });
  } catch (err) {
    if (uniqueViolation(err)) throw conflict('code', 'this app is kept already');
    throw err;
  }
}

// --- reading and removing ----------------------------------------------------------------------

export async function loadGitHubApp(deps: Deps, org: OrgRow, id: string): Promise<GitHubAppWithSecrets> {
  const app = await findGitHubApp(deps.pool, parseId(id, 'GitHub App'), org.id);
  if (!app) throw notFound('GitHub App');
  return app;
}

export async function gitHubAppsOf(deps: Deps, org: OrgRow): Promise<z.output<typeof GitHubApp>[]> {
  return (await listGitHubApps(deps.pool, org.id)).map((a) => gitHubAppView(deps, a));
}

/** An app with its installations and their repositories, as its webhook last said. */
export async function gitHubAppDetail(deps: Deps, app: GitHubAppWithSecrets): Promise<z.output<typeof GitHubAppDetail>> {
  const [installations, repos, delivery] = await Promise.all([listInstallations(deps.pool, app.id), listInstallationRepos(deps.pool, app.id), lastDeliveryOf(deps, app)]);
  return {
    ...gitHubAppView(deps, app),
    ...delivery,
    installations,
    repositories: repos.map((r) => ({
      installation_id: r.installation_id,
      site_repo_id: r.site_repo_id,
      full_name: r.full_name,
      private: r.private,
      repo: r.repo_id === null ? null : { id: r.repo_id, name: r.repo_name ?? '' },
    })),
  };
}

/** How long the health look may ask GitHub: a page shows it. */
const HEALTH_DEADLINE_MS = 5_000;

/** GitHub's log of the app's last delivery, or why it could not be read. */
async function lastDeliveryOf(deps: Deps, app: GitHubAppWithSecrets): Promise<Pick<z.output<typeof GitHubAppDetail>, 'site_last_delivery' | 'site_error'>> {
  try {
    const privateKey = unseal(deps.config.secretKey, app.private_key_sealed);
    const last = await appLastDelivery({ app: { apiUrl: app.api_url, appId: app.app_id, privateKey }, allow: deps.config.webhookAllow, deadline: Date.now() + HEALTH_DEADLINE_MS });
    return { site_last_delivery: last, site_error: null };
  } catch (err) {
    if (err instanceof SiteError) return { site_last_delivery: null, site_error: err.message };
    if (err instanceof Error && /unseal|decrypt|auth/i.test(err.message)) return { site_last_delivery: null, site_error: 'cannot unseal the app’s private key (was SLUICE_SECRET_KEY changed?)' };
    throw err;
  }
}

/**
 * Forgets an app: its repositories stop building through it (their links go with it; the
 * repositories and builds stay). The app itself is GitHub's: delete it there too.
 */
export async function removeGitHubApp(deps: Deps, org: OrgRow, id: string): Promise<void> {
  if (!(await deleteGitHubApp(deps.pool, org.id, parseId(id, 'GitHub App')))) throw notFound('GitHub App');
}

// --- tokens ------------------------------------------------------------------------------------

interface AppRef {
  api_url: string;
  app_id: number;
  private_key_sealed: string;
}

/** An installation token for one repository with `permissions` only. */
export async function repoToken(deps: TokenDeps, app: AppRef, installationId: number, repositoryId: number, permissions: TokenPermissions): Promise<string> {
  let privateKey: string;
  try {
    privateKey = unseal(deps.config.secretKey, app.private_key_sealed);
  } catch {
    throw new AppError('invalid', 'cannot unseal the GitHub App’s private key (was SLUICE_SECRET_KEY changed?): make the app again');
  }
  const made = await mintInstallationToken({ app: { apiUrl: app.api_url, appId: app.app_id, privateKey }, installationId, repositoryId, permissions, allow: deps.config.webhookAllow });
  return made.token;
}

/**
 * The checkout tokens of the roles that hold Sluice's keys (the keyed runner, and the API for
 * token runners): a repository that builds through an app gets a read-only token for itself
 * alone, minted now, handed to this checkout and never stored; any other repository none.
 */
export function checkoutTokens(deps: TokenDeps): CheckoutTokens {
  return async (repoId) => {
    const row = await appCheckoutOfRepo(deps.pool, repoId);
    if (!row) return undefined;
    try {
      return await repoToken(deps, row, row.installation_id, row.site_repo_id, { contents: 'read' });
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      throw new Error(`could not get a token from the GitHub App to pull ${row.full_name} (is the app still installed on it?): ${why}`, { cause: err });
    }
  };
}

// --- activating --------------------------------------------------------------------------------

/**
 * Builds one of the installations' repositories: GitHub is asked for it with a token of the
 * installation for it alone (so GitHub, not the list, says the app may read it), then the Sluice
 * repository is made, pulled over HTTPS. Activating again gives the same repository.
 */
export async function activateAppRepo(deps: Deps, org: OrgRow, app: GitHubAppWithSecrets, input: unknown): Promise<RepoRow> {
  const body = validate(ActivateAppRepo, input);
  const listed = await findInstallationRepo(deps.pool, app.id, body.site_repo_id);
  if (!listed) throw new AppError('not found', 'no installation of this app covers such a repository: install the app on it at GitHub', 'site_repo_id');
  if (listed.repo_id !== null) return reloadRepo(deps.pool, listed.repo_id);
  if (listed.suspended) throw conflict('site_repo_id', 'the installation covering this repository is suspended at GitHub');

  let site: { clone_url: string; default_branch?: string; full_name: string; name: string };
  try {
    const token = await repoToken(deps, app, listed.installation_id, listed.site_repo_id, { metadata: 'read' });
    const http = installationHttp({ apiUrl: app.api_url, token, allow: deps.config.webhookAllow });
    site = await http.need('GET', `/repos/${listed.full_name.split('/').map(encodeURIComponent).join('/')}`);
  } catch (err) {
    if (!(err instanceof SiteError)) throw err;
    if (err.status === 404 || err.status === 422) throw new AppError('forbidden', `GitHub says the app may not read ${listed.full_name}: ${err.message}`);
    throw new AppError('site', `asking GitHub for ${listed.full_name}: ${err.message}`, undefined, 30);
  }
  const repo = await createRepo(deps, org, {
    name: body.name ?? sluiceRepoName(site.name),
    scm: 'git',
    pull_url: site.clone_url,
    default_branch: site.default_branch,
  });
  try {
    await saveAppLink(deps.pool, { repo_id: repo.id, app_id: app.id, installation_id: listed.installation_id, site_repo_id: listed.site_repo_id, full_name: site.full_name });
  } catch (err) {
    if (uniqueViolation(err)) throw conflict('site_repo_id', 'this repository was activated meanwhile');
    throw err;
  }
  return reloadRepo(deps.pool, repo.id);
}

/** The repository stops building through its app (no more tokens or check runs); it and its builds stay. */
export async function deactivateAppRepo(deps: Deps, repo: RepoRow): Promise<void> {
  if (!(await deleteAppLink(deps.pool, repo.id))) throw new AppError('not found', 'this repository does not build through a GitHub App');
}

/** Which app and installation a repository builds through, or null. */
export const RepoApp = z.object({
  app: GitHubApp,
  installation_id: z.number().int(),
  site_repo_id: z.number().int(),
  full_name: z.string().describe('the repository at GitHub, as its last event named it'),
  last_hook_at: z.date().nullable().describe('when the app’s webhook last brought one of its events (signature verified)'),
});

export async function appOfRepo(deps: Deps, repo: RepoRow): Promise<z.output<typeof RepoApp> | null> {
  const link = await appLinkOfRepo(deps.pool, repo.id);
  if (!link) return null;
  const [app, health] = await Promise.all([findGitHubApp(deps.pool, link.app_id), hookHealthOf(deps.pool, repo.id)]);
  return app ? { app: gitHubAppView(deps, app), installation_id: link.installation_id, site_repo_id: link.site_repo_id, full_name: link.full_name, last_hook_at: health.last_hook_at } : null;
}

// --- the app's webhook -------------------------------------------------------------------------

/** What the app's webhook did with a delivery: followed an installation, ignored it, or a repository's trigger to go down the trigger path. */
export type AppHookOutcome = { kind: 'followed' | 'ignored'; what: string } | { kind: 'trigger'; target: TriggerTarget };

interface RepoPayload {
  id?: unknown;
  full_name?: unknown;
  private?: unknown;
  clone_url?: unknown;
}

const repoOf = (r: RepoPayload) =>
  typeof r.id === 'number' && typeof r.full_name === 'string' ? [{ id: r.id, fullName: r.full_name, private: r.private !== false }] : [];
const reposOf = (list: unknown) => (Array.isArray(list) ? (list as RepoPayload[]).flatMap(repoOf) : []);

/**
 * One delivery of an app's webhook, its signature checked (`X-Hub-Signature-256` with the app's
 * webhook secret: 401 otherwise, naming the header). Installation events are followed; a push,
 * branch, tag or pull request of a repository Sluice builds is handed back as a trigger.
 */
export async function receiveAppHook(deps: Deps, hookToken: string, headers: Readonly<Record<string, string | undefined>>, body: Buffer): Promise<AppHookOutcome> {
  const app = /^[A-Za-z0-9_-]{10,100}$/.test(hookToken) ? await findGitHubAppByHook(deps.pool, hookToken) : undefined;
  if (!app) throw notFound('GitHub App');
  const signature = headers['x-hub-signature-256'];
  if (!signature) throw new AppError('unauthorized', 'the app’s hooks are signed: X-Hub-Signature-256 is missing', 'x-hub-signature-256');
  const expected = `sha256=${createHmac('sha256', unseal(deps.config.secretKey, app.webhook_secret_sealed)).update(body).digest('hex')}`;
  if (!sameSecret(signature.trim(), expected)) throw new AppError('unauthorized', 'the signature does not verify with the app’s webhook secret', 'x-hub-signature-256');

  const event = headers['x-github-event'] ?? '';
  let payload: Record<string, unknown>;
  try {
    payload = JSON.parse(body.toString('utf8')) as Record<string, unknown>;
  } catch {
    throw new AppError('invalid', 'the body is not JSON (the app’s webhook sends application/json)', 'body');
  }
  const action = typeof payload.action === 'string' ? payload.action : '';
  const installation = (payload.installation ?? {}) as { id?: unknown; account?: { login?: unknown }; suspended_at?: unknown };
  const installationId = typeof installation.id === 'number' ? installation.id : null;
  const account = typeof installation.account?.login === 'string' ? installation.account.login : '';

  if (event === 'ping') return { kind: 'ignored', what: 'ping: the app’s webhook is set up' };
  if (event === 'installation' || event === 'installation_repositories') {
    if (installationId === null) throw new AppError('invalid', 'an installation event without installation.id', 'installation.id');
    if (event === 'installation' && action === 'deleted') {
      await deleteInstallation(deps.pool, app.id, installationId);
      return { kind: 'followed', what: `installation ${installationId} removed` };
    }
    const suspended = event === 'installation' ? action === 'suspend' || (action !== 'unsuspend' && installation.suspended_at != null) : false;
    if (event === 'installation') {
      // `created` lists the repositories; other actions leave the list as it was.
      await saveInstallation(deps.pool, app.id, { installationId, account, suspended }, Array.isArray(payload.repositories) ? reposOf(payload.repositories) : undefined);
      return { kind: 'followed', what: `installation ${installationId} ${action}` };
    }
    await saveInstallation(deps.pool, app.id, { installationId, account, suspended: installation.suspended_at != null });
    await addInstallationRepos(deps.pool, app.id, installationId, reposOf(payload.repositories_added));
    await removeInstallationRepos(deps.pool, app.id, installationId, reposOf(payload.repositories_removed).map((r) => r.id));
    return { kind: 'followed', what: `installation ${installationId}: repositories ${action}` };
  }
  if (!['push', 'pull_request', 'create', 'delete'].includes(event)) return { kind: 'ignored', what: `${event || 'an event without X-GitHub-Event'}: not one Sluice builds on` };
  const repository = (payload.repository ?? {}) as RepoPayload;
  if (typeof repository.id !== 'number') throw new AppError('invalid', 'a repository event without repository.id', 'repository.id');
  const link = await appLinkOfSiteRepo(deps.pool, app.id, repository.id);
  if (!link) return { kind: 'ignored', what: `${String(repository.full_name)} is not built by Sluice: activate it on the app’s page` };
  // A rename or transfer: the repository is pulled by its name as it is now.
  if (typeof repository.full_name === 'string' && repository.full_name !== link.full_name && typeof repository.clone_url === 'string') {
    await renameAppLink(deps.pool, link.repo_id, repository.full_name, repository.clone_url);
  }
  const target = await findTriggerTargetById(deps.pool, link.repo_id);
  if (!target) return { kind: 'ignored', what: 'the repository was removed' };
  return { kind: 'trigger', target };
}
