/**
 * Which organization a resource of a route belongs to, for the access check (api/access): each
 * answers the organization's id and name, or undefined when there is no such resource. An
 * organization or repository is read as the routes read them (findOrg, findRepoByRef), so the
 * door and the handler behind it always mean the same one.
 */
import { findOrg } from './orgs';
import { findRepoByRef } from './repos';
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
export async function orgByRef(db: Db, ref: string): Promise<OrgOf | undefined> {
  const org = await findOrg(db, ref);
  return org && { id: org.id, name: org.name };
}

/** A repository's, by id or `org/name`. */
export async function orgOfRepo(db: Db, ref: string): Promise<OrgOf | undefined> {
  const repo = await findRepoByRef(db, ref);
  return repo && { id: repo.org_id, name: repo.org_name };
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
