/**
 * SQL of GitHub Apps (migration 033): the apps organizations made, their installations and
 * repositories as GitHub's events said, the Sluice repositories that build through one, and the
 * check run each session made. Sealed secrets are read only where GitHub is called.
 */
import type { Db } from './transaction';

export interface GitHubAppRow {
  id: number;
  org_id: number;
  web_url: string;
  api_url: string;
  app_id: number;
  slug: string;
  name: string;
  owner: string | null;
  html_url: string;
  client_id: string;
  /** The last part of its webhook's URL. */
  hook_token: string;
  created_by: string | null;
  created_at: Date;
}

export type GitHubAppWithSecrets = GitHubAppRow & { private_key_sealed: string; webhook_secret_sealed: string };

const APP = 'a.id, a.org_id, a.web_url, a.api_url, a.app_id, a.slug, a.name, a.owner, a.html_url, a.client_id, a.hook_token, a.created_by, a.created_at';
const SECRETS = 'a.private_key_sealed, a.webhook_secret_sealed';

export async function insertGitHubApp(
  db: Db,
  a: Omit<GitHubAppRow, 'id' | 'created_at'> & { client_secret_sealed: string; private_key_sealed: string; webhook_secret_sealed: string },
): Promise<GitHubAppRow> {
  const { rows } = await db.query<GitHubAppRow>(
    `INSERT INTO github_apps AS a (org_id, web_url, api_url, app_id, slug, name, owner, html_url, client_id, client_secret_sealed, private_key_sealed, webhook_secret_sealed, hook_token, created_by)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) RETURNING ${APP}`,
    [a.org_id, a.web_url, a.api_url, a.app_id, a.slug, a.name, a.owner, a.html_url, a.client_id, a.client_secret_sealed, a.private_key_sealed, a.webhook_secret_sealed, a.hook_token, a.created_by],
  );
  return rows[0]!;
}

export async function listGitHubApps(db: Db, orgId: number): Promise<GitHubAppRow[]> {
  return (await db.query<GitHubAppRow>(`SELECT ${APP} FROM github_apps a WHERE a.org_id = $1 ORDER BY a.id`, [orgId])).rows;
}

/** An app by Sluice's id, for its webhook (any organization's) or an organization's page. */
export async function findGitHubApp(db: Db, id: number, orgId?: number): Promise<GitHubAppWithSecrets | undefined> {
  const { rows } = await db.query<GitHubAppWithSecrets>(`SELECT ${APP}, ${SECRETS} FROM github_apps a WHERE a.id = $1 AND ($2::bigint IS NULL OR a.org_id = $2)`, [id, orgId ?? null]);
  return rows[0];
}

/** The app whose webhook URL ends in `hookToken`. */
export async function findGitHubAppByHook(db: Db, hookToken: string): Promise<GitHubAppWithSecrets | undefined> {
  return (await db.query<GitHubAppWithSecrets>(`SELECT ${APP}, ${SECRETS} FROM github_apps a WHERE a.hook_token = $1`, [hookToken])).rows[0];
}

export async function deleteGitHubApp(db: Db, orgId: number, id: number): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM github_apps WHERE org_id = $1 AND id = $2', [orgId, id]);
  return (rowCount ?? 0) > 0;
}

export interface InstallationRow {
  installation_id: number;
  account: string;
  suspended: boolean;
  updated_at: Date;
}

export interface InstallationRepoRow {
  installation_id: number;
  site_repo_id: number;
  full_name: string;
  private: boolean;
  /** The Sluice repository building it, if any. */
  repo_id: number | null;
  repo_name: string | null;
}

/** An installation as an `installation` event says it is now; `repos` (when given) replaces its list. */
export async function saveInstallation(
  db: Db,
  appId: number,
  i: { installationId: number; account: string; suspended: boolean },
  repos?: { id: number; fullName: string; private: boolean }[],
): Promise<void> {
  await db.query(
    `INSERT INTO github_installations (app_id, installation_id, account, suspended) VALUES ($1, $2, $3, $4)
     ON CONFLICT (app_id, installation_id) DO UPDATE SET account = EXCLUDED.account, suspended = EXCLUDED.suspended, updated_at = now()`,
    [appId, i.installationId, i.account, i.suspended],
  );
  if (repos) {
    await db.query('DELETE FROM github_installation_repos WHERE app_id = $1 AND installation_id = $2 AND NOT (site_repo_id = ANY($3::bigint[]))', [appId, i.installationId, repos.map((r) => r.id)]);
    await addInstallationRepos(db, appId, i.installationId, repos);
  }
}

export async function addInstallationRepos(db: Db, appId: number, installationId: number, repos: { id: number; fullName: string; private: boolean }[]): Promise<void> {
  if (repos.length === 0) return;
  await db.query(
    `INSERT INTO github_installation_repos (app_id, installation_id, site_repo_id, full_name, private)
     SELECT $1, $2, * FROM unnest($3::bigint[], $4::text[], $5::boolean[])
     ON CONFLICT (app_id, installation_id, site_repo_id) DO UPDATE SET full_name = EXCLUDED.full_name, private = EXCLUDED.private`,
    [appId, installationId, repos.map((r) => r.id), repos.map((r) => r.fullName), repos.map((r) => r.private)],
  );
}

export async function removeInstallationRepos(db: Db, appId: number, installationId: number, ids: number[]): Promise<void> {
  await db.query('DELETE FROM github_installation_repos WHERE app_id = $1 AND installation_id = $2 AND site_repo_id = ANY($3::bigint[])', [appId, installationId, ids]);
}

export async function deleteInstallation(db: Db, appId: number, installationId: number): Promise<void> {
  await db.query('DELETE FROM github_installations WHERE app_id = $1 AND installation_id = $2', [appId, installationId]);
}

export async function listInstallations(db: Db, appId: number): Promise<InstallationRow[]> {
  return (
    await db.query<InstallationRow>('SELECT installation_id, account, suspended, updated_at FROM github_installations WHERE app_id = $1 ORDER BY account', [appId])
  ).rows;
}

/** The repositories of the app's installations, each with the Sluice repository building it. */
export async function listInstallationRepos(db: Db, appId: number): Promise<InstallationRepoRow[]> {
  const { rows } = await db.query<InstallationRepoRow>(
    `SELECT r.installation_id, r.site_repo_id, r.full_name, r.private, l.repo_id, s.name AS repo_name
     FROM github_installation_repos r
     LEFT JOIN repo_app_links l ON l.app_id = r.app_id AND l.site_repo_id = r.site_repo_id
     LEFT JOIN repos s ON s.id = l.repo_id
     WHERE r.app_id = $1 ORDER BY r.full_name`,
    [appId],
  );
  return rows;
}

export async function findInstallationRepo(db: Db, appId: number, siteRepoId: number): Promise<(InstallationRepoRow & { suspended: boolean }) | undefined> {
  const { rows } = await db.query<InstallationRepoRow & { suspended: boolean }>(
    `SELECT r.installation_id, r.site_repo_id, r.full_name, r.private, l.repo_id, s.name AS repo_name, i.suspended
     FROM github_installation_repos r
     JOIN github_installations i USING (app_id, installation_id)
     LEFT JOIN repo_app_links l ON l.app_id = r.app_id AND l.site_repo_id = r.site_repo_id
     LEFT JOIN repos s ON s.id = l.repo_id
     WHERE r.app_id = $1 AND r.site_repo_id = $2 LIMIT 1`,
    [appId, siteRepoId],
  );
  return rows[0];
}

export interface AppLinkRow {
  repo_id: number;
  app_id: number;
  installation_id: number;
  site_repo_id: number;
  full_name: string;
}

const LINK = 'l.repo_id, l.app_id, l.installation_id, l.site_repo_id, l.full_name';

export async function saveAppLink(db: Db, l: AppLinkRow): Promise<void> {
  await db.query(
    `INSERT INTO repo_app_links (repo_id, app_id, installation_id, site_repo_id, full_name) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (repo_id) DO UPDATE SET app_id = EXCLUDED.app_id, installation_id = EXCLUDED.installation_id, site_repo_id = EXCLUDED.site_repo_id, full_name = EXCLUDED.full_name`,
    [l.repo_id, l.app_id, l.installation_id, l.site_repo_id, l.full_name],
  );
}

export async function deleteAppLink(db: Db, repoId: number): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM repo_app_links WHERE repo_id = $1', [repoId]);
  return (rowCount ?? 0) > 0;
}

export async function appLinkOfRepo(db: Db, repoId: number): Promise<AppLinkRow | undefined> {
  return (await db.query<AppLinkRow>(`SELECT ${LINK} FROM repo_app_links l WHERE l.repo_id = $1`, [repoId])).rows[0];
}

/** The Sluice repository building the app's repository `siteRepoId` (the app's webhook names it). */
export async function appLinkOfSiteRepo(db: Db, appId: number, siteRepoId: number): Promise<AppLinkRow | undefined> {
  return (await db.query<AppLinkRow>(`SELECT ${LINK} FROM repo_app_links l WHERE l.app_id = $1 AND l.site_repo_id = $2`, [appId, siteRepoId])).rows[0];
}

/** A rename or transfer (a push names the repository as it is now). */
export async function renameAppLink(db: Db, repoId: number, fullName: string, pullUrl: string): Promise<void> {
  await db.query(
    `WITH l AS (UPDATE repo_app_links SET full_name = $2 WHERE repo_id = $1 AND full_name <> $2 RETURNING repo_id)
     UPDATE repos r SET pull_url = $3 FROM l WHERE r.id = l.repo_id`,
    [repoId, fullName, pullUrl],
  );
}

/** What a checkout or a check run needs of a repository's app: its keys (sealed) and the installation; undefined for a repository that builds through no app. */
export interface AppCheckoutRow {
  api_url: string;
  app_id: number;
  private_key_sealed: string;
  installation_id: number;
  site_repo_id: number;
  full_name: string;
}

export async function appCheckoutOfRepo(db: Db, repoId: number): Promise<AppCheckoutRow | undefined> {
  const { rows } = await db.query<AppCheckoutRow>(
    `SELECT a.api_url, a.app_id, a.private_key_sealed, l.installation_id, l.site_repo_id, l.full_name
     FROM repo_app_links l JOIN github_apps a ON a.id = l.app_id WHERE l.repo_id = $1`,
    [repoId],
  );
  return rows[0];
}

export async function checkRunOf(db: Db, sessionId: number, context: string): Promise<number | undefined> {
  const { rows } = await db.query<{ id: string }>('SELECT check_run_id AS id FROM session_check_runs WHERE session_id = $1 AND context = $2', [sessionId, context]);
  return rows[0] ? Number(rows[0].id) : undefined;
}

export async function saveCheckRun(db: Db, sessionId: number, context: string, checkRunId: number): Promise<void> {
  await db.query(
    `INSERT INTO session_check_runs (session_id, context, check_run_id) VALUES ($1, $2, $3)
     ON CONFLICT (session_id, context) DO UPDATE SET check_run_id = EXCLUDED.check_run_id`,
    [sessionId, context, checkRunId],
  );
}

/** A failing test a check run annotates: where the report put the failure. */
export interface FailureAnnotationRow {
  failure_file: string;
  failure_line: number;
  test_file: string | null;
  classname: string;
  name: string;
  message: string | null;
}

/** What a check run's summary says of its session: counts, how long it took, its failing tests with a file and line (at most `limit`). */
export async function checkRunFacts(db: Db, sessionId: number, limit: number): Promise<{ counts: Record<string, number>; seconds: number; failures: FailureAnnotationRow[] }> {
  const [session, failures] = await Promise.all([
    db.query<{ counts: Record<string, number>; seconds: number }>('SELECT counts, extract(epoch FROM updated_at - created_at)::float8 AS seconds FROM sessions WHERE id = $1', [sessionId]),
    db.query<FailureAnnotationRow>(
      `SELECT failure_file, failure_line, test_file, classname, name, message FROM test_cases
       WHERE session_id = $1 AND status IN ('failed', 'error') AND NOT muted AND failure_file IS NOT NULL AND failure_line IS NOT NULL
       ORDER BY id LIMIT $2`,
      [sessionId, limit],
    ),
  ]);
  return { counts: session.rows[0]?.counts ?? {}, seconds: session.rows[0]?.seconds ?? 0, failures: failures.rows };
}
