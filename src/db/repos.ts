/** SQL for repositories. Sealed secrets are read only where they are needed. */
import type { StatusProvider } from '../core/commitStatus';
import type { Scm } from '../core/types';
import type { Db } from './transaction';

export interface RepoSettings {
  pull_url: string;
  ci_push_url: string | null;
  pull_request_only: boolean;
  /** Pull requests from a branch of this repository (not a fork) get its secrets (core/trust.ts). */
  trust_same_repo_pull_requests: boolean;
  ci_squash: boolean;
  branch_blacklist: string[];
  chat_url: string | null;
  /** The branch whose cache entries the repository's other branches may read (migration 016). */
  default_branch: string;
}

export interface RepoRow extends RepoSettings {
  id: number;
  org_id: number;
  org_name: string;
  name: string;
  scm: Scm;
  key_sealed: string;
  ssh_public_key: string;
  /** Whether a webhook secret is set (its value is read only where triggers are checked). */
  webhook_secret_set: boolean;
  /** The SSH host keys the repository trusts (known_hosts format), learned on first use; null: none yet. */
  ssh_known_hosts: string | null;
  /** Commit statuses on the hosting site (db/commitStatuses.ts): whose API, where, for which repository. */
  status_provider: StatusProvider | null;
  status_api_url: string | null;
  status_repo: string | null;
  /** Whether a status token is set (its value is read only where statuses are posted). */
  status_token_set: boolean;
  created_at: Date;
}

export interface NewRepo extends RepoSettings {
  org_id: number;
  name: string;
  scm: Scm;
  key_hash: Buffer;
  key_sealed: string;
  ssh_public_key: string;
  ssh_private_key_sealed: string;
}

// Never the private key: nothing in the API needs it.
const COLUMNS = `r.id, r.org_id, o.name AS org_name, r.name, r.scm, r.pull_url, r.ci_push_url, r.pull_request_only,
  r.trust_same_repo_pull_requests, r.ci_squash, r.branch_blacklist, r.chat_url, r.default_branch, r.key_sealed, r.ssh_public_key,
  (r.webhook_secret_sealed IS NOT NULL) AS webhook_secret_set, r.ssh_known_hosts, r.created_at,
  r.status_provider, r.status_api_url, r.status_repo, (r.status_token_sealed IS NOT NULL) AS status_token_set`;
const FROM = 'FROM repos r JOIN orgs o ON o.id = r.org_id';

export async function insertRepo(db: Db, repo: NewRepo): Promise<number> {
  const { rows } = await db.query<{ id: number }>(
    `INSERT INTO repos (org_id, name, scm, pull_url, ci_push_url, pull_request_only, ci_squash, branch_blacklist, chat_url,
                        key_hash, key_sealed, ssh_public_key, ssh_private_key_sealed, trust_same_repo_pull_requests, default_branch)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) RETURNING id`,
    [
      repo.org_id, repo.name, repo.scm, repo.pull_url, repo.ci_push_url, repo.pull_request_only, repo.ci_squash,
      repo.branch_blacklist, repo.chat_url, repo.key_hash, repo.key_sealed, repo.ssh_public_key, repo.ssh_private_key_sealed,
      repo.trust_same_repo_pull_requests,
      repo.default_branch,
    ],
  );
  return rows[0]!.id;
}

export async function findRepoById(db: Db, id: number): Promise<RepoRow | undefined> {
  return (await db.query<RepoRow>(`SELECT ${COLUMNS} ${FROM} WHERE r.id = $1`, [id])).rows[0];
}

export async function findRepoByName(db: Db, orgName: string, name: string): Promise<RepoRow | undefined> {
  return (await db.query<RepoRow>(`SELECT ${COLUMNS} ${FROM} WHERE o.name = $1 AND r.name = $2`, [orgName, name])).rows[0];
}

/** A repository by a reference as paths give it: its id, or `<org>/<name>`; undefined for anything else. */
export async function findRepoByRef(db: Db, ref: string): Promise<RepoRow | undefined> {
  if (/^[0-9]{1,15}$/.test(ref)) return findRepoById(db, Number(ref));
  const [org, name, ...rest] = ref.split('/');
  return org && name && rest.length === 0 ? findRepoByName(db, org, name) : undefined;
}

export async function listRepos(db: Db, orgId: number): Promise<RepoRow[]> {
  return (await db.query<RepoRow>(`SELECT ${COLUMNS} ${FROM} WHERE r.org_id = $1 ORDER BY r.id`, [orgId])).rows;
}

export type TriggerRepoRow = RepoRow & { key_hash: Buffer; webhook_secret_sealed: string | null };

/** The repository a trigger key hash names, with the stored hash for the constant-time check and its sealed webhook secret. */
export async function findRepoByKeyHash(db: Db, hash: Buffer): Promise<TriggerRepoRow | undefined> {
  return (await db.query<TriggerRepoRow>(`SELECT ${COLUMNS}, r.key_hash, r.webhook_secret_sealed ${FROM} WHERE r.key_hash = $1`, [hash])).rows[0];
}

/** The repository's sealed webhook secret; null when it has none. */
export async function webhookSecretOf(db: Db, id: number): Promise<string | null> {
  return (await db.query<{ webhook_secret_sealed: string | null }>('SELECT webhook_secret_sealed FROM repos WHERE id = $1', [id])).rows[0]?.webhook_secret_sealed ?? null;
}

/** Sets (sealed) or removes (null) the repository's webhook secret. */
export async function setWebhookSecret(db: Db, id: number, sealed: string | null): Promise<void> {
  await db.query('UPDATE repos SET webhook_secret_sealed = $2 WHERE id = $1', [id, sealed]);
}

const SETTINGS: readonly (keyof RepoSettings)[] = [
  'pull_url',
  'ci_push_url',
  'pull_request_only',
  'trust_same_repo_pull_requests',
  'ci_squash',
  'branch_blacklist',
  'chat_url',
  'default_branch',
];

/** Sets the given settings; the column names come from the fixed list above, never from input. */
export async function updateRepoSettings(db: Db, id: number, patch: Partial<RepoSettings>): Promise<void> {
  const columns = SETTINGS.filter((c) => patch[c] !== undefined);
  if (columns.length === 0) return;
  const sets = columns.map((c, i) => `${c} = $${i + 2}`).join(', ');
  await db.query(`UPDATE repos SET ${sets} WHERE id = $1`, [id, ...columns.map((c) => patch[c])]);
}

export interface PushTarget {
  scm: 'git' | 'hg';
  ciPushUrl: string | null;
  /** Where the branch's tip is checked before a push. */
  pullUrl: string;
  sshPrivateKeySealed: string;
  sshKnownHosts: string | null;
}

/** Where and how the post-build push goes (the sealed key stays in the database until used). */
export async function loadPushTarget(db: Db, repoId: number): Promise<PushTarget | undefined> {
  const { rows } = await db.query<{
    scm: 'git' | 'hg';
    ci_push_url: string | null;
    pull_url: string;
    ssh_private_key_sealed: string;
    ssh_known_hosts: string | null;
  }>('SELECT scm, ci_push_url, pull_url, ssh_private_key_sealed, ssh_known_hosts FROM repos WHERE id = $1', [repoId]);
  const row = rows[0];
  return row
    ? {
        scm: row.scm,
        ciPushUrl: row.ci_push_url,
        pullUrl: row.pull_url,
        sshPrivateKeySealed: row.ssh_private_key_sealed,
        sshKnownHosts: row.ssh_known_hosts,
      }
    : undefined;
}

/** Sets (an operator's known_hosts lines) or resets (null: learn again on first use) the trusted host keys. */
export async function setKnownHosts(db: Db, id: number, knownHosts: string | null): Promise<void> {
  await db.query('UPDATE repos SET ssh_known_hosts = $2 WHERE id = $1', [id, knownHosts]);
}

/**
 * Stores the host keys ssh learned for a repository (trust on first use): only adds to what
 * was there (ssh appends a host it meets for the first time, and refuses a changed one), so
 * when `was` no longer matches, another checkout stored first, and its list is as good.
 */
export async function recordKnownHosts(db: Db, repoId: number, was: string | null, now: string): Promise<void> {
  await db.query('UPDATE repos SET ssh_known_hosts = $3 WHERE id = $1 AND ssh_known_hosts IS NOT DISTINCT FROM $2', [repoId, was, now]);
}

/** What a checkout needs of a repository: its SCM, where to pull from, its sealed key, the host keys it trusts. */
export async function loadPullSource(
  db: Db,
  repoId: number,
): Promise<{ scm: Scm; pull_url: string; ssh_private_key_sealed: string; ssh_known_hosts: string | null } | undefined> {
  const { rows } = await db.query<{ scm: Scm; pull_url: string; ssh_private_key_sealed: string; ssh_known_hosts: string | null }>(
    'SELECT scm, pull_url, ssh_private_key_sealed, ssh_known_hosts FROM repos WHERE id = $1',
    [repoId],
  );
  return rows[0];
}
