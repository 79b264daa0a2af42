/** `/api/v1/orgs`: organizations own repositories and outgoing webhooks (app/orgs.ts decides about them). */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { ApiDeps } from '../../deps';
import { createOrg, CreateOrg, loadOrg, Org, orgsVisibleTo, orgView } from '../../../app/orgs';
import { documented, errors, OrgParams } from '../../openapi/shapes';

export function registerOrgRoutes(app: FastifyInstance, deps: ApiDeps): void {
  app.post('/orgs', documented({ tag: 'orgs', summary: 'Create an organization', body: CreateOrg, response: { 201: Org, ...errors(400, 409) } }), async (request, reply) => reply.code(201).send(orgView(await createOrg(deps.pool, request.body))));

  app.get('/orgs', documented({ tag: 'orgs', summary: 'List organizations', response: { 200: z.array(Org) } }), async (request) => (await orgsVisibleTo(deps.pool, request.principal!)).map(orgView));

  app.get<{ Params: { org: string } }>('/orgs/:org', documented({ tag: 'orgs', summary: 'Show an organization', params: OrgParams, response: { 200: Org, ...errors(404) } }), async (request) => orgView(await loadOrg(deps.pool, request.params.org)));
}
