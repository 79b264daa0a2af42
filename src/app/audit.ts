/**
 * The audit trail's view (issue 25), as the JSON API and the web pages both read it: whose
 * entries a caller sees (an organization's; every organization they administer; all of them,
 * with the installation's own, for an installation administrator), newest first, a page at a
 * time (`before`: the last `id` of a page). Entries are written by the door (api/access/audit.ts),
 * never here.
 */
import { z } from 'zod';
import { orgsWhere, type Principal } from '../core/access';
import { listAudit, type AuditRow } from '../db/audit';
import type { Db } from '../db/transaction';
import { validate } from './errors';

export const AuditQuery = z.object({
  limit: z.coerce.number().int().min(1).max(500).default(100),
  before: z.coerce.number().int().min(1).optional(),
});

export type AuditPage = z.output<typeof AuditQuery>;

export const AuditEntry = z.object({
  id: z.number().int(),
  at: z.date(),
  actor: z.string().describe('who: `Name <e-mail>`, or the admin token'),
  ip: z.string().nullable(),
  org: z.object({ id: z.number().int(), name: z.string().nullable() }).nullable(),
  action: z.string().describe('what: `secret.set`, `member.remove`, `session.stop`, ...'),
  target: z.string().describe('the path it changed'),
  details: z.looseObject({}).describe('the fields it sent; secrets only as `(set)`'),
});

export type AuditEntryView = z.output<typeof AuditEntry>;

export const auditView = (a: AuditRow): AuditEntryView => ({
  id: a.id,
  at: a.at,
  actor: a.actor,
  ip: a.ip,
  org: a.org_id === null ? null : { id: a.org_id, name: a.org_name },
  action: a.action,
  target: a.target,
  details: a.details,
});

/** The entries of every organization `principal` administers (all, with the installation's own, for an installation administrator). */
export async function auditTrail(db: Db, principal: Principal, query: unknown): Promise<AuditEntryView[]> {
  const q = validate(AuditQuery, query, 'query');
  return (await listAudit(db, { orgIds: orgsWhere(principal, 'admin'), ...q })).map(auditView);
}

/** One organization's entries. */
export async function orgAuditTrail(db: Db, orgId: number, query: unknown): Promise<AuditEntryView[]> {
  const q = validate(AuditQuery, query, 'query');
  return (await listAudit(db, { orgIds: [orgId], ...q })).map(auditView);
}

/** A page's query as a browser's address gave it: one that is not right (edited by hand) shows the first page. */
export function auditPage(query: unknown): AuditPage {
  const q = AuditQuery.safeParse(query);
  return q.success ? q.data : { limit: 100 };
}
