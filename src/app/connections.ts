/**
 * Hosting-site connections (issue 38), as the JSON API and the web pages both decide about them.
 * An organization admin connects a site once with an access token (the site says whose it is);
 * the site's repositories that account administers are listed, and activating one makes the
 * Sluice repository and, at the site, a webhook signed with a fresh secret and a read-only
 * deploy key with the repository's public key, then commit statuses through the same token.
 * Deactivating removes the webhook and key at the site (the repository and its builds stay);
 * repairing makes again whatever is missing, and follows a rename or transfer (the link is by
 * the site's stable id). Rights are the site's to check: it refuses an account that does not
 * administer the repository, and Sluice asks it, never assumes.
 */
import { createHash, randomBytes } from 'node:crypto';
import { z } from 'zod';
import { seal, unseal } from '../crypto/sealed';
import {
  deleteConnection,
  findConnection,
  findLink,
  findLinkBySiteRepo,
  hookHealthOf,
  insertConnection,
  linksOf,
  replaceConnectionToken,
  listConnections,
  saveLink,
  type ConnectionRow,
  type ConnectionWithToken,
  type LinkRow,
} from '../db/connections';
import type { OrgRow } from '../db/orgs';
import { setWebhookSecret, updateRepoSettings, webhookSecretOf, type RepoRow } from '../db/repos';
import { uniqueViolation, type Db } from '../db/transaction';
import { siteClient, siteWiring } from '../sites';
import { SITES, SiteError, type SiteClient, type SiteDeployKey, type SiteHook, type SiteRepo } from '../sites/types';
import { storeStatusSettings } from './commitStatuses';
import type { AppDeps } from './deps';
import { AppError, conflict, notFound, parseId, validate } from './errors';
import { httpUrl, resourceName, withoutCredentials } from './fields';
import { createRepo, reloadRepo } from './repos';

type Deps = Pick<AppDeps, 'pool' | 'config'>;

export const CreateConnection = z
  .strictObject({
    site: z.enum(SITES).describe('`github` (GitHub.com or Enterprise Server), `gitlab` (GitLab.com or self-managed), `gitea` (Gitea or Forgejo), `bitbucket` (Bitbucket Cloud), `stash` (Bitbucket Server or Data Center)'),
    api_url: httpUrl
      .refine(withoutCredentials, 'must not contain credentials: give the token as `token`')
      .refine((s) => !/[?#]/.test(s), 'a base URL without query or fragment')
      .transform((s) => new URL(s).href.replace(/\/+$/, ''))
      .describe('the API’s root: `https://api.github.com`, `https://gitlab.com/api/v4`, `https://codeberg.org/api/v1`, `https://api.bitbucket.org/2.0`; Bitbucket Server’s own address (`https://bitbucket.example.com`)'),
    token: z
      .string()
      .min(8)
      .max(2048)
      .refine((s) => /^[\x21-\x7e]+$/.test(s), 'printable ASCII without spaces only')
      .describe('an access token of an account that administers the repositories (docs/sites/): sealed, never shown again'),
  })
  .meta({ examples: [{ site: 'gitlab', api_url: 'https://gitlab.example.com/api/v4', token: 'glpat-example-token-value' }] });

export const ReplaceToken = z
  .strictObject({ token: CreateConnection.shape.token })
  .meta({ examples: [{ token: 'glpat-the-new-token-value' }] });

export const Connection = z.object({
  id: z.number().int(),
  org_id: z.number().int(),
  site: z.enum(SITES),
  api_url: z.string(),
  account: z.string().describe('the site account the token belongs to, as the site said'),
  created_by: z.string().nullable(),
  created_at: z.date(),
  repos: z.number().int().describe('repositories activated through it'),
});

export const SiteRepository = z.object({
  site_repo_id: z.string().describe('the site’s stable id of the repository'),
  full_name: z.string(),
  web_url: z.string(),
  ssh_url: z.string(),
  default_branch: z.string().nullable(),
  admin: z.boolean().describe('whether the connection’s account administers it (only then can it be activated)'),
  repo: z.object({ id: z.number().int(), name: z.string(), active: z.boolean() }).nullable().describe('the Sluice repository activated from it, if any'),
});

export const ActivateRepo = z
  .strictObject({
    site_repo_id: z
      .string()
      .min(1)
      .max(200)
      .regex(/^[A-Za-z0-9{}_.:/-]+$/, 'the site’s id of the repository, as the list gives it')
      .refine((s) => !s.split('/').some((part) => part === '' || part === '.' || part === '..'), 'the site’s id of the repository, as the list gives it'),
    name: resourceName.optional().describe('the Sluice repository’s name; default the site’s repository name'),
  })
  .meta({ examples: [{ site_repo_id: '42' }, { site_repo_id: '42', name: 'web' }] });

export const RepoConnection = z.object({
  connection_id: z.number().int(),
  site: z.enum(SITES),
  api_url: z.string(),
  account: z.string(),
  site_repo_id: z.string(),
  site_name: z.string().describe('the repository’s name at the site, as last seen'),
  active: z.boolean().describe('whether Sluice keeps a webhook and deploy key there'),
  hook: z.enum(['present', 'missing', 'unknown']).describe('whether the webhook is there now (unknown: the site did not answer)'),
  deploy_key: z.enum(['present', 'missing', 'unknown']),
  last_hook_at: z.date().nullable().describe('when a hook last reached this repository (signature verified)'),
  refused_hooks: z.number().int().describe('hooks refused for a signature that did not verify'),
  last_refused_at: z.date().nullable(),
  site_last_delivery: z
    .object({ at: z.date(), status: z.number().int().nullable(), ok: z.boolean() })
    .nullable()
    .describe('the site’s own log of its last delivery of the hook (null: none logged, or the site keeps no log)'),
  site_error: z.string().nullable().describe('why the site could not be asked, if it could not'),
});

export const connectionView = (c: ConnectionRow & { repos?: number }): z.output<typeof Connection> => ({
  id: c.id,
  org_id: c.org_id,
  site: c.site,
  api_url: c.api_url,
  account: c.account,
  created_by: c.created_by,
  created_at: c.created_at,
  repos: c.repos ?? 0,
});

/** What a site refused or failed, as the application layer refuses it: the site's status and words. */
function siteRefusal(err: unknown, doing: string): AppError {
  if (!(err instanceof SiteError)) throw err;
  if (err.status === 401) return new AppError('invalid', `${doing}: the site refused the token (${err.message}); give the connection a valid one`, 'token');
  if (err.status === 403) return new AppError('forbidden', `${doing}: the site says the connection's account may not (${err.message})`);
  return new AppError('site', `${doing}: ${err.message}`, undefined, 30);
}

/** How long the health look may ask the site, all requests together: a page shows it. */
const HEALTH_DEADLINE_MS = 5_000;

function clientOf(deps: Deps, c: ConnectionWithToken, deadline?: number): SiteClient {
  let token: string;
  try {
    token = unseal(deps.config.secretKey, c.token_sealed);
  } catch {
    throw new AppError('invalid', 'cannot unseal the connection’s token (was SLUICE_SECRET_KEY changed?): connect again', 'token');
  }
  return siteClient(c.site, { apiUrl: c.api_url, token, allow: deps.config.webhookAllow, deadline });
}

export async function loadConnection(db: Db, org: OrgRow, id: string): Promise<ConnectionWithToken> {
  const c = await findConnection(db, org.id, parseId(id, 'connection'));
  if (!c) throw notFound('connection');
  return c;
}

/** Connects a site: the site must accept the token and say whose it is. */
export async function createConnection(deps: Deps, org: OrgRow, input: unknown, by: string | null): Promise<ConnectionRow> {
  const body = validate(CreateConnection, input);
  const client = siteClient(body.site, { apiUrl: body.api_url, token: body.token, allow: deps.config.webhookAllow });
  let account: string;
  try {
    account = await client.account();
  } catch (err) {
    throw siteRefusal(err, `asking ${body.api_url} whose token this is`);
  }
  try {
    return await insertConnection(deps.pool, { orgId: org.id, site: body.site, apiUrl: body.api_url, tokenSealed: seal(deps.config.secretKey, body.token), account, createdBy: by });
  } catch (err) {
    if (uniqueViolation(err)) throw conflict('token', `this organization is connected to ${body.api_url} as ${account} already`);
    throw err;
  }
}

/**
 * Replaces a connection's token (the old one expired or was revoked): the site must accept the
 * new one as the same account; the repositories it activated post their statuses with it.
 */
export async function replaceToken(deps: Deps, c: ConnectionWithToken, input: unknown): Promise<void> {
  const { token } = validate(ReplaceToken, input);
  let account: string;
  try {
    account = await siteClient(c.site, { apiUrl: c.api_url, token, allow: deps.config.webhookAllow }).account();
  } catch (err) {
    throw siteRefusal(err, `asking ${c.api_url} whose token this is`);
  }
  if (account !== c.account) throw conflict('token', `this token is ${account}'s, the connection is ${c.account}'s: connect ${account} as a connection of its own`);
  await replaceConnectionToken(deps.pool, c.id, seal(deps.config.secretKey, token));
}

export async function connectionsOf(db: Db, org: OrgRow): Promise<z.output<typeof Connection>[]> {
  return (await listConnections(db, org.id)).map(connectionView);
}

/** One connection as the API shows it (with its count of repositories), or a 404. */
export async function connectionOf(db: Db, org: OrgRow, id: number): Promise<z.output<typeof Connection>> {
  const found = (await connectionsOf(db, org)).find((c) => c.id === id);
  if (!found) throw notFound('connection');
  return found;
}

/**
 * Deletes a connection. Its repositories and their builds stay, and so do the webhooks and
 * deploy keys at the site (they keep building): deactivate a repository first to remove them.
 */
export async function removeConnection(db: Db, org: OrgRow, id: string): Promise<void> {
  if (!(await deleteConnection(db, org.id, parseId(id, 'connection')))) throw notFound('connection');
}

/** The site's repositories the connection's account can see, each with the Sluice repository activated from it. */
export async function siteReposOf(deps: Deps, c: ConnectionWithToken): Promise<z.output<typeof SiteRepository>[]> {
  let repos: SiteRepo[];
  try {
    repos = await clientOf(deps, c).listRepos();
  } catch (err) {
    throw siteRefusal(err, 'listing the site’s repositories');
  }
  const links = new Map((await linksOf(deps.pool, c.id)).map((l) => [l.site_repo_id, l]));
  return repos.map((r) => {
    const link = links.get(r.id);
    return {
      site_repo_id: r.id,
      full_name: r.fullName,
      web_url: r.webUrl,
      ssh_url: r.sshUrl,
      default_branch: r.defaultBranch,
      admin: r.admin,
      repo: link ? { id: link.repo_id, name: link.repo_name, active: link.hook_id !== null || link.deploy_key_id !== null } : null,
    };
  });
}

/** The site's repository, asked of the site (never trusted from the request): it must exist and be administered by the account. */
async function siteRepoFor(client: SiteClient, id: string, field: string): Promise<SiteRepo> {
  let repo: SiteRepo | null;
  try {
    repo = await client.repo(id);
  } catch (err) {
    throw siteRefusal(err, 'looking the repository up at the site');
  }
  if (!repo) throw new AppError('not found', 'the site has no such repository the connection’s account can see', field);
  if (!repo.admin) throw new AppError('forbidden', `the site says the connection’s account does not administer ${repo.fullName}: its webhooks and deploy keys are not the account’s to change`);
  return repo;
}

/**
 * Activates a site's repository: makes the Sluice repository (or finds the one activated from
 * it before), then its webhook and deploy key at the site. Whatever the site refuses is named;
 * what was made stays made and `repair` finishes it.
 */
export async function activateRepo(deps: Deps, org: OrgRow, c: ConnectionWithToken, input: unknown): Promise<RepoRow> {
  const body = validate(ActivateRepo, input);
  const client = clientOf(deps, c);
  const site = await siteRepoFor(client, body.site_repo_id, 'site_repo_id');
  const known = await findLinkBySiteRepo(deps.pool, c.id, site.id);
  let repo: RepoRow;
  if (known) {
    repo = await reloadRepo(deps.pool, known.repo_id);
  } else {
    const wiring = siteWiring(c.site);
    repo = await createRepo(deps, org, {
      name: body.name ?? repoNameOf(site),
      scm: 'git',
      pull_url: site.sshUrl,
      default_branch: site.defaultBranch ?? undefined,
      status_provider: wiring.statusProvider,
      status_api_url: c.api_url,
      status_repo: wiring.statusRepo(site),
      status_token: unseal(deps.config.secretKey, c.token_sealed),
    });
    try {
      await saveLink(deps.pool, { repo_id: repo.id, connection_id: c.id, site_repo_id: site.id, site_name: site.fullName, hook_id: null, hook_secret_sha256: null, deploy_key_id: null });
    } catch (err) {
      if (uniqueViolation(err)) throw conflict('site_repo_id', 'this repository was activated meanwhile');
      throw err;
    }
  }
  await ensureAtSite(deps, c, client, repo, site);
  return reloadRepo(deps.pool, repo.id);
}

/** A Sluice name from the site's: its last path segment, made to fit resourceName. */
function repoNameOf(site: SiteRepo): string {
  return sluiceRepoName(site.fullName.split('/').pop() ?? 'repo');
}

/** A site's repository name made to fit resourceName (also the GitHub App's: githubApps.ts). */
export function sluiceRepoName(siteName: string): string {
  const name = siteName.replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^[^A-Za-z0-9]+/, '').slice(0, 100) || 'repo';
  return /^[0-9]+$/.test(name) ? `r${name}` : name;
}

/** Sluice's own webhook and deploy key among the site's: by their URL and key; a stored one that no longer matches (a rotated trigger or SSH key) is stale. */
interface Ours {
  hookUrl: string;
  hook?: SiteHook;
  staleHook?: SiteHook;
  key?: SiteDeployKey;
  staleKey?: SiteDeployKey;
}

async function oursAtSite(deps: Deps, c: ConnectionRow, client: SiteClient, repo: RepoRow, site: SiteRepo, link: LinkRow | undefined): Promise<Ours> {
  const hookUrl = `${deps.config.baseUrl}/1/${siteWiring(c.site).triggerProvider}/${unseal(deps.config.secretKey, repo.key_sealed)}`;
  const publicKey = keyBody(repo.ssh_public_key);
  const [hooks, keys] = await Promise.all([client.hooks(site), client.deployKeys(site)]);
  const storedHook = hooks.find((h) => h.id === link?.hook_id);
  const storedKey = keys.find((k) => k.id === link?.deploy_key_id);
  return {
    hookUrl,
    hook: storedHook?.url === hookUrl ? storedHook : hooks.find((h) => h.url === hookUrl),
    staleHook: storedHook && storedHook.url !== hookUrl ? storedHook : undefined,
    key: storedKey && keyBody(storedKey.key) === publicKey ? storedKey : keys.find((k) => keyBody(k.key) === publicKey),
    staleKey: storedKey && keyBody(storedKey.key) !== publicKey ? storedKey : undefined,
  };
}

/**
 * What Sluice keeps at the site for `repo`, made again where missing: the webhook (signed with
 * the repository's secret, a fresh one when it has none) and the read-only deploy key; one left
 * from before a key rotation, or a hook made with a secret changed since, is replaced. Idempotent. The repository's pull URL, name at the
 * site and status settings follow the site's current word.
 */
async function ensureAtSite(deps: Deps, c: ConnectionWithToken, client: SiteClient, repo: RepoRow, site: SiteRepo): Promise<void> {
  const wiring = siteWiring(c.site);
  const link = (await findLink(deps.pool, repo.id))?.link;
  const parts = { hook_id: link?.hook_id ?? null, hook_secret_sha256: link?.hook_secret_sha256 ?? null, deploy_key_id: link?.deploy_key_id ?? null };
  const save = () => saveLink(deps.pool, { repo_id: repo.id, connection_id: c.id, site_repo_id: site.id, site_name: site.fullName, ...parts });

  // Renamed or moved at the site: pull from where it is now, post statuses to its new name.
  if (repo.pull_url !== site.sshUrl) await updateRepoSettings(deps.pool, repo.id, { pull_url: site.sshUrl });
  await storeStatusSettings(deps.pool, repo.id, {
    status_provider: wiring.statusProvider,
    status_api_url: c.api_url,
    status_repo: wiring.statusRepo(site),
    status_token_sealed: c.token_sealed,
  });

  try {
    const ours = await oursAtSite(deps, c, client, repo, site, link);
    const { secret, fresh } = await secretOf(deps, repo);
    const secretHash = createHash('sha256').update(secret).digest();
    // A hook signed with a secret the repository does not have would see every delivery refused:
    // one Sluice made with a secret changed since (by hand), or one found by its URL when the
    // repository's secret was made just now. Made again.
    const known = ours.hook !== undefined && ours.hook.id === link?.hook_id ? link.hook_secret_sha256 : null;
    const signedWrong = ours.hook !== undefined && (known !== null ? !known.equals(secretHash) : fresh);
    for (const stale of [ours.staleHook, signedWrong ? ours.hook : undefined]) {
      if (!stale) continue;
      await client.deleteHook(site, stale.id);
      parts.hook_id = null;
    }
    if (!ours.hook || signedWrong) {
      parts.hook_id = await client.createHook(site, { url: ours.hookUrl, secret });
      parts.hook_secret_sha256 = secretHash;
    } else {
      parts.hook_id = ours.hook.id;
    }
    await save();
    if (ours.staleKey) {
      await client.deleteDeployKey(site, ours.staleKey.id);
      parts.deploy_key_id = null;
    }
    parts.deploy_key_id = ours.key?.id ?? (await client.addDeployKey(site, { title: `Sluice ${repo.org_name}/${repo.name}`, key: repo.ssh_public_key }));
    await save();
  } catch (err) {
    await save();
    throw siteRefusal(err, `setting ${site.fullName} up at the site`);
  }
}

/** `ssh-ed25519 AAAA…` without its comment, as sites may store it without. */
const keyBody = (key: string): string => key.trim().split(/\s+/).slice(0, 2).join(' ');

/** The repository's webhook secret; a fresh one (32 random bytes, hex) stored sealed when it has none. */
async function secretOf(deps: Deps, repo: RepoRow): Promise<{ secret: string; fresh: boolean }> {
  const sealed = await webhookSecretOf(deps.pool, repo.id);
  if (sealed !== null) return { secret: unseal(deps.config.secretKey, sealed), fresh: false };
  const secret = randomBytes(32).toString('hex');
  await setWebhookSecret(deps.pool, repo.id, seal(deps.config.secretKey, secret));
  return { secret, fresh: true };
}

/** The repository's link, or a 404 for a repository not activated from a site. */
async function linkOf(db: Db, repo: RepoRow): Promise<{ link: LinkRow; connection: ConnectionWithToken }> {
  const found = await findLink(db, repo.id);
  if (!found) throw new AppError('not found', `${repo.org_name}/${repo.name} was not activated from a hosting site`);
  return found;
}

/** Makes again whatever Sluice keeps at the site for the repository and is missing; follows a rename. */
export async function repairRepo(deps: Deps, repo: RepoRow): Promise<RepoRow> {
  const { link, connection } = await linkOf(deps.pool, repo);
  const client = clientOf(deps, connection);
  const site = await siteRepoFor(client, link.site_repo_id, 'site_repo_id');
  await ensureAtSite(deps, connection, client, repo, site);
  return reloadRepo(deps.pool, repo.id);
}

/** Removes the webhook and deploy key at the site; the repository, its builds and its link stay (activate or repair makes them again). */
export async function deactivateRepo(deps: Deps, repo: RepoRow): Promise<void> {
  const { link, connection } = await linkOf(deps.pool, repo);
  const client = clientOf(deps, connection);
  let site: SiteRepo | null;
  try {
    site = await client.repo(link.site_repo_id);
  } catch (err) {
    throw siteRefusal(err, 'looking the repository up at the site');
  }
  if (site) {
    try {
      const ours = await oursAtSite(deps, connection, client, repo, site, link);
      for (const hook of [ours.hook, ours.staleHook]) if (hook) await client.deleteHook(site, hook.id);
      for (const key of [ours.key, ours.staleKey]) if (key) await client.deleteDeployKey(site, key.id);
    } catch (err) {
      throw siteRefusal(err, `removing Sluice's webhook and deploy key from ${site.fullName}`);
    }
  }
  // A repository gone from the site took its webhook and key with it.
  await saveLink(deps.pool, { ...link, site_name: site?.fullName ?? link.site_name, hook_id: null, hook_secret_sha256: null, deploy_key_id: null });
}

/** The repository's connection and how healthy it is: what is at the site now, and when hooks last arrived. */
export async function repoConnection(deps: Deps, repo: RepoRow): Promise<z.output<typeof RepoConnection>> {
  const { link, connection } = await linkOf(deps.pool, repo);
  const health = await hookHealthOf(deps.pool, repo.id);
  const view: z.output<typeof RepoConnection> = {
    connection_id: connection.id,
    site: connection.site,
    api_url: connection.api_url,
    account: connection.account,
    site_repo_id: link.site_repo_id,
    site_name: link.site_name,
    active: link.hook_id !== null || link.deploy_key_id !== null,
    hook: 'unknown',
    deploy_key: 'unknown',
    last_hook_at: health.last_hook_at,
    refused_hooks: health.refused,
    last_refused_at: health.last_refused_at,
    site_last_delivery: null,
    site_error: null,
  };
  try {
    const client = clientOf(deps, connection, Date.now() + HEALTH_DEADLINE_MS);
    const site = await client.repo(link.site_repo_id);
    if (!site) {
      view.hook = view.deploy_key = 'missing';
      view.site_error = 'the site has no such repository the connection’s account can see (deleted, or access lost)';
      return view;
    }
    view.site_name = site.fullName;
    // Present: Sluice's, as it is now (a hook with an old URL, a key rotated since, is missing).
    const ours = await oursAtSite(deps, connection, client, repo, site, link);
    view.hook = ours.hook ? 'present' : 'missing';
    view.deploy_key = ours.key ? 'present' : 'missing';
    if (ours.hook) view.site_last_delivery = (await client.lastDelivery(site, ours.hook.id)) ?? null;
  } catch (err) {
    if (!(err instanceof SiteError) && !(err instanceof AppError)) throw err;
    view.site_error = err.message;
  }
  return view;
}
