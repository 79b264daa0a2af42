/**
 * SQL of site connections and the repositories activated through them (migration 032). The
 * sealed token is read only where the site is called (findConnection, findLink).
 */
import type { Site } from '../sites/types';
import type { Db } from './transaction';

export interface ConnectionRow {
  id: number;
  org_id: number;
  site: Site;
  api_url: string;
  account: string;
  created_by: string | null;
  created_at: Date;
}

export type ConnectionWithToken = ConnectionRow & { token_sealed: string };

const COLUMNS = 'c.id, c.org_id, c.site, c.api_url, c.account, c.created_by, c.created_at';

export async function insertConnection(
  db: Db,
  c: { orgId: number; site: Site; apiUrl: string; tokenSealed: string; account: string; createdBy: string | null },
): Promise<ConnectionRow> {
  const { rows } = await db.query<ConnectionRow>(
    `INSERT INTO site_connections AS c (org_id, site, api_url, token_sealed, account, created_by) VALUES ($1, $2, $3, $4, $5, $6) RETURNING ${COLUMNS}`,
    [c.orgId, c.site, c.apiUrl, c.tokenSealed, c.account, c.createdBy],
  );
  return rows[0]!;
}

/** An organization's connections, oldest first, with how many repositories each has activated. */
export async function listConnections(db: Db, orgId: number): Promise<(ConnectionRow & { repos: number })[]> {
  const { rows } = await db.query<ConnectionRow & { repos: number }>(
    `SELECT ${COLUMNS}, (SELECT count(*)::int FROM repo_links l WHERE l.connection_id = c.id) AS repos
     FROM site_connections c WHERE c.org_id = $1 ORDER BY c.id`,
    [orgId],
  );
  return rows;
}

export async function findConnection(db: Db, orgId: number, id: number): Promise<ConnectionWithToken | undefined> {
  return (await db.query<ConnectionWithToken>(`SELECT ${COLUMNS}, c.token_sealed FROM site_connections c WHERE c.org_id = $1 AND c.id = $2`, [orgId, id])).rows[0];
}

/**
 * Replaces the token (an admin gave a new one for the same account), and with it the status
 * token of every repository the connection activated, so their statuses keep going out.
 */
export async function replaceConnectionToken(db: Db, id: number, tokenSealed: string): Promise<void> {
  await db.query(
    `WITH c AS (UPDATE site_connections SET token_sealed = $2 WHERE id = $1 RETURNING id)
     UPDATE repos r SET status_token_sealed = $2 FROM repo_links l, c WHERE l.connection_id = c.id AND r.id = l.repo_id`,
    [id, tokenSealed],
  );
}

export async function deleteConnection(db: Db, orgId: number, id: number): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM site_connections WHERE org_id = $1 AND id = $2', [orgId, id]);
  return (rowCount ?? 0) > 0;
}

export interface LinkRow {
  repo_id: number;
  connection_id: number;
  site_repo_id: string;
  site_name: string;
  hook_id: string | null;
  /** SHA-256 of the secret the hook was made with (null: not known). */
  hook_secret_sha256: Buffer | null;
  deploy_key_id: string | null;
  updated_at: Date;
}

const LINK_COLUMNS = 'l.repo_id, l.connection_id, l.site_repo_id, l.site_name, l.hook_id, l.hook_secret_sha256, l.deploy_key_id, l.updated_at';

/** The repositories a connection activated, with their Sluice names. */
export async function linksOf(db: Db, connectionId: number): Promise<(LinkRow & { repo_name: string })[]> {
  const { rows } = await db.query<LinkRow & { repo_name: string }>(
    `SELECT ${LINK_COLUMNS}, r.name AS repo_name FROM repo_links l JOIN repos r ON r.id = l.repo_id WHERE l.connection_id = $1 ORDER BY l.repo_id`,
    [connectionId],
  );
  return rows;
}

/** A repository's link, with its connection (and the connection's sealed token). */
export async function findLink(db: Db, repoId: number): Promise<{ link: LinkRow; connection: ConnectionWithToken } | undefined> {
  const { rows } = await db.query<LinkRow & { c: ConnectionWithToken }>(
    `SELECT ${LINK_COLUMNS}, row_to_json(c) AS c FROM repo_links l JOIN site_connections c ON c.id = l.connection_id WHERE l.repo_id = $1`,
    [repoId],
  );
  const row = rows[0];
  if (!row) return undefined;
  const { c, ...link } = row;
  return { link, connection: { ...c, created_at: new Date(c.created_at) } };
}

/** The link of a site's repository through a connection, if one of the organization's repositories has it. */
export async function findLinkBySiteRepo(db: Db, connectionId: number, siteRepoId: string): Promise<LinkRow | undefined> {
  return (await db.query<LinkRow>(`SELECT ${LINK_COLUMNS} FROM repo_links l WHERE l.connection_id = $1 AND l.site_repo_id = $2`, [connectionId, siteRepoId])).rows[0];
}

/** Records (or updates) what Sluice keeps at the site for a repository. */
export async function saveLink(db: Db, link: Omit<LinkRow, 'updated_at'>): Promise<void> {
  await db.query(
    `INSERT INTO repo_links (repo_id, connection_id, site_repo_id, site_name, hook_id, hook_secret_sha256, deploy_key_id) VALUES ($1, $2, $3, $4, $5, $6, $7)
     ON CONFLICT (repo_id) DO UPDATE SET connection_id = EXCLUDED.connection_id, site_repo_id = EXCLUDED.site_repo_id, site_name = EXCLUDED.site_name,
       hook_id = EXCLUDED.hook_id, hook_secret_sha256 = EXCLUDED.hook_secret_sha256, deploy_key_id = EXCLUDED.deploy_key_id, updated_at = now()`,
    [link.repo_id, link.connection_id, link.site_repo_id, link.site_name, link.hook_id, link.hook_secret_sha256, link.deploy_key_id],
  );
}

export interface HookHealthRow {
  last_hook_at: Date | null;
  refused: number;
  last_refused_at: Date | null;
}

/** Adds what the API counted since its last write: one statement for every repository; rows of repositories deleted meanwhile are skipped. */
export async function addHookHealth(db: Db, sums: readonly { repoId: number; lastHookAt: Date | null; refused: number; lastRefusedAt: Date | null }[]): Promise<void> {
  if (sums.length === 0) return;
  await db.query(
    `INSERT INTO repo_hook_health AS h (repo_id, last_hook_at, refused, last_refused_at)
     SELECT s.repo_id, s.last_hook_at, s.refused, s.last_refused_at
     FROM unnest($1::bigint[], $2::timestamptz[], $3::bigint[], $4::timestamptz[]) AS s(repo_id, last_hook_at, refused, last_refused_at)
     JOIN repos r ON r.id = s.repo_id
     ON CONFLICT (repo_id) DO UPDATE SET
       last_hook_at = GREATEST(h.last_hook_at, EXCLUDED.last_hook_at),
       refused = h.refused + EXCLUDED.refused,
       last_refused_at = GREATEST(h.last_refused_at, EXCLUDED.last_refused_at)`,
    [sums.map((s) => s.repoId), sums.map((s) => s.lastHookAt), sums.map((s) => s.refused), sums.map((s) => s.lastRefusedAt)],
  );
}

export async function hookHealthOf(db: Db, repoId: number): Promise<HookHealthRow> {
  const { rows } = await db.query<HookHealthRow & { refused: string }>('SELECT last_hook_at, refused, last_refused_at FROM repo_hook_health WHERE repo_id = $1', [repoId]);
  const row = rows[0];
  return row ? { ...row, refused: Number(row.refused) } : { last_hook_at: null, refused: 0, last_refused_at: null };
}
