/**
 * Organizations, as the JSON API and the web pages both decide about them: finding one by id or
 * name, listing those someone may see, making one, deleting one with what it holds. (The
 * application layer: each operation validates, checks, calls the data layer and returns plain
 * results or refusals, app/errors.ts.)
 *
 * Deleting (an organization here, a repository in app/repos.ts, a suite in app/suites.ts) stops
 * the builds under way first (app/remove.ts, which speaks to the orchestrator and the blob
 * store); who deletes and how is one `RemoveBy`, read here from a delete's query.
 */
import { z } from 'zod';
import { visibleOrgs, type Principal } from '../core/access';
import { insertOrg, listOrgs, findOrg, type OrgRow } from '../db/orgs';
import { uniqueViolation, type Db } from '../db/transaction';
import { conflict, notFound, validate } from './errors';
import { resourceName } from './fields';
import { stopAndRemove, type RemoveDeps } from './remove';

export const CreateOrg = z.strictObject({
  name: resourceName,
  email: z.email().max(254),
}).meta({ examples: [{ name: 'acme', email: 'ci@acme.example' }] });

export const Org = z.object({ id: z.number().int(), name: z.string(), email: z.string(), created_at: z.date() });

export const orgView = (o: OrgRow): z.output<typeof Org> => ({ id: o.id, name: o.name, email: o.email, created_at: o.created_at });

/** The org a `:org` path parameter (id or name) names, or a 404. */
export async function loadOrg(db: Db, ref: string): Promise<OrgRow> {
  const org = await findOrg(db, ref);
  if (!org) throw notFound('organization');
  return org;
}

/** The organizations `principal` may see, oldest first. */
export async function orgsVisibleTo(db: Db, principal: Principal): Promise<OrgRow[]> {
  return listOrgs(db, visibleOrgs(principal));
}

/** Creates an organization from a body of POST /orgs: invalid naming a bad field, a conflict for a name taken. */
export async function createOrg(db: Db, input: unknown): Promise<OrgRow> {
  const body = validate(CreateOrg, input);
  try {
    return await insertOrg(db, body);
  } catch (err) {
    if (uniqueViolation(err) !== undefined) throw conflict('name', 'an organization with this name exists');
    throw err;
  }
}

export const RemoveQuery = z.object({
  // Who stops the builds under way (their `stopped_by`), for the admin token, which names nobody;
  // a person's token stops them as that person.
  stopped_by: z.string().trim().min(1).max(200).default('admin'),
  force: z.enum(['true', 'false']).default('false'),
});

/** Who deletes, and whether without waiting for the builds under way to end. */
export interface RemoveBy {
  stoppedBy: string;
  force?: boolean;
}

/** A delete's `RemoveBy` from its query (`?stopped_by=&force=`): `person`, when the request names one, stops the builds. */
export function removalBy(query: unknown, person: string | undefined): RemoveBy {
  const q = validate(RemoveQuery, query, 'query');
  return { stoppedBy: person ?? q.stopped_by, force: q.force === 'true' };
}

/** Deletes organization `ref` (id or name) with its repositories and webhooks, its builds stopped first. */
export async function removeOrg(deps: RemoveDeps, ref: string, by: RemoveBy): Promise<void> {
  const org = await loadOrg(deps.pool, ref);
  if (!(await stopAndRemove(deps, { org: org.id }, { ...by, what: `organization ${org.name}` }))) throw notFound('organization');
}
