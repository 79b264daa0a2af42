/**
 * Which organization a resource of a route belongs to, for the access check (api/access): each
 * answers the organization's id and name, or undefined when there is no such resource.
 */
import type { Db } from './transaction';

export interface OrgOf {
  id: number;
  name: string;
}

const ID = /^[0-9]{1,15}$/;

async function one(db: Db, sql: string, value: unknown): Promise<OrgOf | undefined> {
  const { rows } = await db.query<OrgOf>(sql, [value]);
  return rows[0];
}

/** An organization by id or name. */
export const orgByRef = (db: Db, ref: string) =>
  one(db, `SELECT id::int AS id, name FROM orgs WHERE ${ID.test(ref) ? 'id = $1::bigint' : 'name = $1'}`, ref);

/** A repository's, by id or `org/name`. */
export async function orgOfRepo(db: Db, ref: string): Promise<OrgOf | undefined> {
  if (ID.test(ref)) return one(db, 'SELECT o.id::int AS id, o.name FROM repos r JOIN orgs o ON o.id = r.org_id WHERE r.id = $1::bigint', ref);
  const [org, name, ...rest] = ref.split('/');
  if (!org || !name || rest.length > 0) return undefined;
  const { rows } = await db.query<OrgOf>('SELECT o.id::int AS id, o.name FROM repos r JOIN orgs o ON o.id = r.org_id WHERE o.name = $1 AND r.name = $2', [org, name]);
  return rows[0];
}

export const orgOfWebhook = (db: Db, id: string) =>
  ID.test(id) ? one(db, 'SELECT o.id::int AS id, o.name FROM webhooks w JOIN orgs o ON o.id = w.org_id WHERE w.id = $1::bigint', id) : Promise.resolve(undefined);

export const orgOfDelivery = (db: Db, id: string) =>
  ID.test(id)
    ? one(db, 'SELECT o.id::int AS id, o.name FROM deliveries d JOIN webhooks w ON w.id = d.webhook_id JOIN orgs o ON o.id = w.org_id WHERE d.id = $1::bigint', id)
    : Promise.resolve(undefined);

export const orgOfSession = (db: Db, id: string) =>
  ID.test(id)
    ? one(
        db,
        'SELECT o.id::int AS id, o.name FROM sessions s JOIN suites su ON su.id = s.suite_id JOIN repos r ON r.id = su.repo_id JOIN orgs o ON o.id = r.org_id WHERE s.id = $1::bigint',
        id,
      )
    : Promise.resolve(undefined);
