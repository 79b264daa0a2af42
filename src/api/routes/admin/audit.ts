/**
 * The audit trail (issue 25): `GET /api/v1/audit` (the entries of every organization the caller
 * administers; all of them, with the installation's own, for an installation administrator) and
 * `GET /api/v1/orgs/:org/audit`, newest first, `before` (the last `id` of a page) for the next.
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { orgsWhere } from '../../../core/access';
import { listAudit, type AuditRow } from '../../../db/audit';
import type { ApiDeps } from '../../deps';
import { validate } from '../../../app/errors';
import { documented, errors, OrgParams } from '../../openapi/shapes';

export const AuditQuery = z.object({
  limit: z.coerce.number().int().min(1).max(500).default(100),
  before: z.coerce.number().int().min(1).optional(),
});

const AuditEntry = z.object({
  id: z.number().int(),
  at: z.date(),
  actor: z.string().describe('who: `Name <e-mail>`, or the admin token'),
  ip: z.string().nullable(),
  org: z.object({ id: z.number().int(), name: z.string().nullable() }).nullable(),
  action: z.string().describe('what: `secret.set`, `member.remove`, `session.stop`, ...'),
  target: z.string().describe('the path it changed'),
  details: z.looseObject({}).describe('the fields it sent; secrets only as `(set)`'),
});

export const auditView = (a: AuditRow): z.output<typeof AuditEntry> => ({
  id: a.id,
  at: a.at,
  actor: a.actor,
  ip: a.ip,
  org: a.org_id === null ? null : { id: a.org_id, name: a.org_name },
  action: a.action,
  target: a.target,
  details: a.details,
});

export function registerAuditRoutes(app: FastifyInstance, { pool }: ApiDeps): void {
  app.get('/audit', documented({ tag: 'people', summary: 'The audit trail', description: 'Of the organizations you administer; everything for an installation administrator.', querystring: AuditQuery, response: { 200: z.array(AuditEntry), ...errors(400) } }), async (request) => {
    const q = validate(AuditQuery, request.query, 'query');
    return (await listAudit(pool, { orgIds: orgsWhere(request.principal!, 'admin'), ...q })).map(auditView);
  });

  app.get<{ Params: { org: string } }>('/orgs/:org/audit', documented({ tag: 'people', summary: 'An organization’s audit trail', params: OrgParams, querystring: AuditQuery, response: { 200: z.array(AuditEntry), ...errors(400, 404) } }), async (request) => {
    const q = validate(AuditQuery, request.query, 'query');
    return (await listAudit(pool, { orgIds: [request.accessOrg!.id], ...q })).map(auditView);
  });
}
