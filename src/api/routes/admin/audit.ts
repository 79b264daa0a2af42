/**
 * The audit trail (issue 25): `GET /api/v1/audit` (the entries of every organization the caller
 * administers; all of them, with the installation's own, for an installation administrator) and
 * `GET /api/v1/orgs/:org/audit`, newest first, `before` (the last `id` of a page) for the next.
 * Whose entries a caller sees is the application's (app/audit.ts): here only HTTP.
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { AuditEntry, AuditQuery, auditTrail, orgAuditTrail } from '../../../app/audit';
import type { ApiDeps } from '../../deps';
import { documented, errors, OrgParams } from '../../openapi/shapes';

export function registerAuditRoutes(app: FastifyInstance, { pool }: ApiDeps): void {
  app.get('/audit', documented({ tag: 'people', summary: 'The audit trail', description: 'Of the organizations you administer; everything for an installation administrator.', querystring: AuditQuery, response: { 200: z.array(AuditEntry), ...errors(400) } }), async (request) => auditTrail(pool, request.principal!, request.query));

  app.get<{ Params: { org: string } }>('/orgs/:org/audit', documented({ tag: 'people', summary: 'An organization’s audit trail', params: OrgParams, querystring: AuditQuery, response: { 200: z.array(AuditEntry), ...errors(400, 404) } }), async (request) => orgAuditTrail(pool, request.accessOrg!.id, request.query));
}
