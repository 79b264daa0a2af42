/** SQL for organizations. */
import type { Db } from './transaction';

export interface OrgRow {
  id: number;
  name: string;
  email: string;
  created_at: Date;
}

const COLUMNS = 'id, name, email, created_at';

export async function insertOrg(db: Db, org: { name: string; email: string }): Promise<OrgRow> {
  const { rows } = await db.query<OrgRow>(`INSERT INTO orgs (name, email) VALUES ($1, $2) RETURNING ${COLUMNS}`, [org.name, org.email]);
  return rows[0]!;
}

/** Every organization, or only these (what the asker may see; null: all). */
export async function listOrgs(db: Db, only: number[] | null = null): Promise<OrgRow[]> {
  return (await db.query<OrgRow>(`SELECT ${COLUMNS} FROM orgs WHERE $1::bigint[] IS NULL OR id = ANY($1) ORDER BY id`, [only])).rows;
}

/** By id (all digits) or by name; org names are never all digits, so the two cannot clash. */
export async function findOrg(db: Db, ref: string): Promise<OrgRow | undefined> {
  const byId = /^[0-9]{1,15}$/.test(ref);
  const { rows } = await db.query<OrgRow>(`SELECT ${COLUMNS} FROM orgs WHERE ${byId ? 'id' : 'name'} = $1`, [byId ? Number(ref) : ref]);
  return rows[0];
}

/** An organization's name with its first repository's name and pull URL (null when it has none). */
export async function findOrgWithFirstRepo(
  db: Db,
  orgId: number,
): Promise<{ org_name: string; name: string | null; pull_url: string | null } | undefined> {
  const { rows } = await db.query<{ org_name: string; name: string | null; pull_url: string | null }>(
    `SELECT o.name AS org_name, r.name, r.pull_url
       FROM orgs o LEFT JOIN repos r ON r.org_id = o.id
      WHERE o.id = $1 ORDER BY r.id LIMIT 1`,
    [orgId],
  );
  return rows[0];
}
