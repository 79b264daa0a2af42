/**
 * Repositories, as the JSON API and the web pages both decide about them: finding one by id or
 * `<org>/<name>`, and again after a change; making one, changing its settings, showing it,
 * rotating its keys, deleting it.
 *
 * On creation the repository gets a fresh key (kept as a SHA-256 for lookups and sealed so the
 * URL can be shown again) and its own ed25519 key pair, whose private half is sealed and never
 * shown again: the view carries only the public half.
 */
import { z } from 'zod';
import type { Config } from '../config';
import { STATUS_PROVIDERS } from '../core/commitStatus';
import { keyHash, newRepoKey, seal, unseal } from '../crypto/sealed';
import type { OrgRow } from '../db/orgs';
import { replaceRepoKey, replaceRepoSshKey } from '../db/repoKeys';
import { findRepoById, findRepoByRef, insertRepo, listRepos, setKnownHosts, setWebhookSecret, updateRepoSettings, type RepoRow } from '../db/repos';
import { uniqueViolation, type Db } from '../db/transaction';
import { generateRepoKeyPair } from '../ssh/keys';
import { checkStatusSettings, statusSettingFields, statusSettingsView, storeStatusSettings } from './commitStatuses';
import type { AppDeps } from './deps';
import { conflict, notFound, validate } from './errors';
import { branchName, httpUrl, plainText, resourceName, scmUrl } from './fields';
import type { RemoveBy } from './orgs';
import { stopAndRemove, type RemoveDeps } from './remove';

/** The repository a `:repo` parameter names, or a 404. */
export async function loadRepo(db: Db, ref: string): Promise<RepoRow> {
  const repo = await findRepoByRef(db, ref);
  if (!repo) throw notFound('repository');
  return repo;
}

/** The repository again after a change: a 404 when a DELETE racing the request removed it meanwhile. */
export async function reloadRepo(db: Db, id: number): Promise<RepoRow> {
  const repo = await findRepoById(db, id);
  if (!repo) throw notFound('repository');
  return repo;
}

/** An organization's repositories, oldest first. */
export const reposOf = (db: Db, org: OrgRow): Promise<RepoRow[]> => listRepos(db, org.id);

const settings = {
  pull_url: scmUrl,
  ci_push_url: scmUrl.nullish(),
  pull_request_only: z.boolean().optional(),
  // Pull requests from this repository's own branches (never a fork's) get its secrets.
  trust_same_repo_pull_requests: z.boolean().optional(),
  ci_squash: z.boolean().optional(),
  // Branch names or glob patterns, as the spec's "by name or pattern".
  branch_blacklist: z.array(plainText(255)).max(100).optional(),
  chat_url: httpUrl.nullish(),
  // The branch whose dependency caches the other branches may read (default master, the spec's).
  default_branch: branchName.optional(),
  // Commit statuses on the hosting site (app/commitStatuses.ts; the token write-only).
  ...statusSettingFields,
};

export const CreateRepo = z.strictObject({ name: resourceName, scm: z.enum(['git', 'hg']), ...settings }).meta({
  examples: [
    { name: 'web', scm: 'git', pull_url: 'git@git.example.com:acme/web.git' },
    {
      name: 'api',
      scm: 'git',
      pull_url: 'ssh://git@git.example.com/acme/api.git',
      ci_squash: true,
      branch_blacklist: ['wip/*'],
      chat_url: 'https://chat.example.com/hooks/ci',
      status_provider: 'github',
      status_repo: 'acme/api',
      status_token: 'example-status-token',
    },
  ],
});
export const PatchRepo = z.strictObject({
  ...settings,
  pull_url: scmUrl.optional(),
  // Optional beyond the spec: triggers must then be signed with it (api/webhookSignature.ts).
  // null removes it. Never shown again: the view says only whether one is set.
  webhook_secret: z
    .string()
    .min(16, 'must be at least 16 characters')
    .max(256)
    .refine((s) => /^[\x21-\x7e]+$/.test(s), 'printable ASCII without spaces only')
    .nullish(),
  // SSH host keys trusted for this repository's servers, known_hosts lines (learned on first
  // use when unset); null forgets them, so the next connection learns them again.
  ssh_known_hosts: z
    .string()
    .max(16 * 1024)
    .refine((s) => /^[\x20-\x7e\n]*$/.test(s), 'known_hosts lines: printable ASCII and newlines only')
    .nullish(),
}).meta({ examples: [{ ci_squash: false, branch_blacklist: [] }, { webhook_secret: 'a-long-random-shared-secret' }] });

/** A repository as the API shows it: never its private SSH key, webhook secret or status token. */
export const Repo = z.object({
  id: z.number().int(),
  org_id: z.number().int(),
  org_name: z.string(),
  name: z.string(),
  scm: z.enum(['git', 'hg']),
  pull_url: z.string(),
  ci_push_url: z.string().nullable(),
  pull_request_only: z.boolean(),
  trust_same_repo_pull_requests: z.boolean(),
  ci_squash: z.boolean(),
  branch_blacklist: z.array(z.string()),
  chat_url: z.string().nullable(),
  default_branch: z.string(),
  key: z.string().nullable().describe('the trigger key: anyone with it can trigger builds (null for a viewer: it is a maintainer’s)'),
  webhook_url: z.string().nullable().describe('where the repository’s hosting sends triggers (`/1/builds/<key>`; null for a viewer)'),
  ssh_public_key: z.string().describe('give it read access to the repository (and write for `ci_push_url`)'),
  webhook_secret_set: z.boolean(),
  ssh_known_hosts: z.string().nullable(),
  status_provider: z.enum(STATUS_PROVIDERS).nullable(),
  status_api_url: z.string().nullable(),
  status_repo: z.string().nullable(),
  status_token_set: z.boolean(),
  created_at: z.date(),
});

/** A repository as the API shows it; its trigger key (a credential) only to whom `withKey` (maintainers up). */
export function repoView(r: RepoRow, config: Config, withKey = true): z.output<typeof Repo> {
  const key = withKey ? unseal(config.secretKey, r.key_sealed) : null;
  return {
    id: r.id,
    org_id: r.org_id,
    org_name: r.org_name,
    name: r.name,
    scm: r.scm,
    pull_url: r.pull_url,
    ci_push_url: r.ci_push_url,
    pull_request_only: r.pull_request_only,
    trust_same_repo_pull_requests: r.trust_same_repo_pull_requests,
    ci_squash: r.ci_squash,
    branch_blacklist: r.branch_blacklist,
    chat_url: r.chat_url,
    default_branch: r.default_branch,
    key,
    webhook_url: key === null ? null : `${config.baseUrl}/1/builds/${key}`,
    ssh_public_key: r.ssh_public_key,
    webhook_secret_set: r.webhook_secret_set,
    ssh_known_hosts: r.ssh_known_hosts,
    ...statusSettingsView(r),
    created_at: r.created_at,
  };
}

/**
 * Creates a repository of `org` from a body of POST /orgs/:org/repos, with a fresh key and
 * SSH key pair: invalid naming a bad field, a conflict for a name the organization has already.
 */
export async function createRepo({ pool, config }: Pick<AppDeps, 'pool' | 'config'>, org: OrgRow, input: unknown): Promise<RepoRow> {
  const { status_provider, status_api_url, status_repo, status_token, ...body } = validate(CreateRepo, input);
  const statusChange = checkStatusSettings({ status_provider, status_api_url, status_repo, status_token, pull_url: body.pull_url }, undefined, config.secretKey);
  const key = newRepoKey();
  const pair = generateRepoKeyPair(`sluice:${org.name}/${body.name}`);
  let id: number;
  try {
    id = await insertRepo(pool, {
      org_id: org.id,
      name: body.name,
      scm: body.scm,
      pull_url: body.pull_url,
      ci_push_url: body.ci_push_url ?? null,
      pull_request_only: body.pull_request_only ?? false,
      trust_same_repo_pull_requests: body.trust_same_repo_pull_requests ?? false,
      ci_squash: body.ci_squash ?? false,
      branch_blacklist: body.branch_blacklist ?? [],
      chat_url: body.chat_url ?? null,
      default_branch: body.default_branch ?? 'master',
      key_hash: keyHash(key),
      key_sealed: seal(config.secretKey, key),
      ssh_public_key: pair.publicKey,
      ssh_private_key_sealed: seal(config.secretKey, pair.privateKey),
    });
  } catch (err) {
    if (uniqueViolation(err) === 'repos_org_id_name_key') throw conflict('name', 'this organization has a repository with this name');
    throw err;
  }
  await storeStatusSettings(pool, id, statusChange);
  return reloadRepo(pool, id);
}

/**
 * Changes a repository's settings from a body of PATCH /repos/:repo (absent fields unchanged;
 * the webhook secret sealed, empty known hosts forgotten): invalid naming a bad field.
 */
export async function updateRepo({ pool, config }: Pick<AppDeps, 'pool' | 'config'>, repo: RepoRow, input: unknown): Promise<RepoRow> {
  const { webhook_secret: secret, ssh_known_hosts: knownHosts, status_provider, status_api_url, status_repo, status_token, ...body } = validate(PatchRepo, input);
  const statusChange = checkStatusSettings({ status_provider, status_api_url, status_repo, status_token, pull_url: body.pull_url }, repo, config.secretKey);
  await updateRepoSettings(pool, repo.id, body);
  await storeStatusSettings(pool, repo.id, statusChange);
  if (secret !== undefined) await setWebhookSecret(pool, repo.id, secret === null ? null : seal(config.secretKey, secret));
  if (knownHosts !== undefined) await setKnownHosts(pool, repo.id, knownHosts === null || knownHosts.trim() === '' ? null : knownHosts);
  return reloadRepo(pool, repo.id);
}

/** Deletes a repository with its suites, secrets, branches and builds, those under way stopped first. */
export async function removeRepo(deps: RemoveDeps, repo: RepoRow, by: RemoveBy): Promise<void> {
  if (!(await stopAndRemove(deps, { repo: repo.id }, { ...by, what: `repository ${repo.org_name}/${repo.name}` }))) throw notFound('repository');
}

/** A new trigger key: the webhook URLs with the old one answer 404 from now on. */
export async function rotateRepoKey({ pool, config }: Pick<AppDeps, 'pool' | 'config'>, repo: RepoRow): Promise<RepoRow> {
  const key = newRepoKey();
  if (!(await replaceRepoKey(pool, repo.id, keyHash(key), seal(config.secretKey, key)))) throw notFound('repository');
  return reloadRepo(pool, repo.id);
}

/** A new SSH key pair, its private half sealed: every fetch and push from now on uses it. */
export async function rotateRepoSshKey({ pool, config }: Pick<AppDeps, 'pool' | 'config'>, repo: RepoRow): Promise<RepoRow> {
  const pair = generateRepoKeyPair(`sluice:${repo.org_name}/${repo.name}`);
  if (!(await replaceRepoSshKey(pool, repo.id, pair.publicKey, seal(config.secretKey, pair.privateKey)))) throw notFound('repository');
  return reloadRepo(pool, repo.id);
}
