/** `/api/v1/orgs`: organizations own repositories and outgoing webhooks. */
import { visibleOrgs } from '../../../core/access';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { ApiDeps } from '../../deps';
import { conflict, validate } from '../../../app/errors';
import type { Db } from '../../../db/transaction';
import { uniqueViolation } from '../../../db/transaction';
import { insertOrg, listOrgs, type OrgRow } from '../../../db/orgs';
import { loadOrg } from '../../../app/orgs';
import { documented, errors, OrgParams } from '../../openapi/shapes';
import { resourceName } from './fields';

const CreateOrg = z.strictObject({
  name: resourceName,
  email: z.email().max(254),
}).meta({ examples: [{ name: 'acme', email: 'ci@acme.example' }] });

export const Org = z.object({ id: z.number().int(), name: z.string(), email: z.string(), created_at: z.date() });

export const orgView = (o: OrgRow): z.output<typeof Org> => ({ id: o.id, name: o.name, email: o.email, created_at: o.created_at });

/** Creates an organization from a body of POST /orgs: a 400 naming a bad field, a 409 for a name taken. */
export async function createOrg(db: Db, input: unknown): Promise<OrgRow> {
  const body = validate(CreateOrg, input);
  try {
    return await insertOrg(db, body);
  } catch (err) {
    if (uniqueViolation(err) !== undefined) throw conflict('name', 'an organization with this name exists');
    throw err;
  }
}

export function registerOrgRoutes(app: FastifyInstance, deps: ApiDeps): void {
  app.post('/orgs', documented({ tag: 'orgs', summary: 'Create an organization', body: CreateOrg, response: { 201: Org, ...errors(400, 409) } }), async (request, reply) => reply.code(201).send(orgView(await createOrg(deps.pool, request.body))));

  app.get('/orgs', documented({ tag: 'orgs', summary: 'List organizations', response: { 200: z.array(Org) } }), async (request) => (await listOrgs(deps.pool, visibleOrgs(request.principal!))).map(orgView));

  app.get<{ Params: { org: string } }>('/orgs/:org', documented({ tag: 'orgs', summary: 'Show an organization', params: OrgParams, response: { 200: Org, ...errors(404) } }), async (request) => orgView(await loadOrg(deps.pool, request.params.org)));
}
