/**
 * Organizations, as the JSON API and the web pages both decide about them: finding one by id or
 * name. (The application layer: each operation validates, checks, calls the data layer and
 * returns plain results or refusals, app/errors.ts.)
 */
import { notFound } from './errors';
import { findOrg, type OrgRow } from '../db/orgs';
import type { Db } from '../db/transaction';

/** The org a `:org` path parameter (id or name) names, or a 404. */
export async function loadOrg(db: Db, ref: string): Promise<OrgRow> {
  const org = await findOrg(db, ref);
  if (!org) throw notFound('organization');
  return org;
}
