/**
 * `/api/v1/runner-tokens`: the tokens runners that hold no keys authenticate with (issue 23).
 * `POST` makes one (`name`, and `org` for an organization's own runners) and answers the
 * token, once: only its sha256 is kept. `GET` lists them with what their runner last said (when,
 * which version, which queues) and how many jobs it is running now (`busy`, 0 is idle).
 * `DELETE /:id` revokes one: its runner's next call is refused and the jobs it was running are
 * failed at once, to be tried again on another runner.
 */
import { randomBytes } from 'node:crypto';
import { keyHash } from '../../../crypto/sealed';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { ApiDeps } from '../../deps';
import { HttpError, parseId } from '../../http';
import { conflict, notFound, validate } from '../../../app/errors';
import { uniqueViolation } from '../../../db/transaction';
import { findOrg } from '../../../db/orgs';
import { insertRunnerToken, listRunnerTokens, revokeRunnerToken, type RunnerTokenRow } from '../../../db/runnerTokens';
import type { Db } from '../../../db/transaction';
import { resourceName } from './fields';
import { documented, errors, IdParams, NoBody } from '../../openapi/shapes';

const CreateToken = z.strictObject({
  name: resourceName,
  /** An organization's id or name: its runners take only its builds. Absent: the installation's. */
  org: z.union([z.string().min(1).max(100), z.number().int().positive()]).optional(),
}).meta({ examples: [{ name: 'build-host-1' }, { name: 'acme-gpu', org: 'acme' }] });

const RunnerToken = z.object({
  id: z.number().int(),
  name: z.string(),
  org: z.object({ id: z.number().int(), name: z.string().nullable() }).nullable(),
  created_at: z.iso.datetime(),
  revoked_at: z.iso.datetime().nullable(),
  last_seen_at: z.iso.datetime().nullable(),
  runner: z.string().nullable(),
  version: z.string().nullable(),
  queues: z.array(z.string()),
  busy: z.number().int().describe('jobs its runner is running now; 0 is idle'),
});

/** What a runner token looks like: a prefix that says what it is (secret scanners key on it), then 256 random bits. */
export const newRunnerToken = (): string => `sluice_rt_${randomBytes(32).toString('base64url')}`;
export const runnerTokenHash = keyHash;

export const runnerTokenView = (t: RunnerTokenRow): z.output<typeof RunnerToken> => ({
  id: t.id,
  name: t.name,
  org: t.org_id === null ? null : { id: t.org_id, name: t.org_name },
  created_at: t.created_at.toISOString(),
  revoked_at: t.revoked_at?.toISOString() ?? null,
  last_seen_at: t.last_seen_at?.toISOString() ?? null,
  runner: t.runner,
  version: t.version,
  queues: t.queues,
  busy: t.busy,
});

/** Makes a token from a body of POST /runner-tokens; the row and the token (shown once). */
export async function createRunnerToken(db: Db, input: unknown): Promise<{ row: RunnerTokenRow; token: string }> {
  const body = validate(CreateToken, input);
  let orgId: number | null = null;
  if (body.org !== undefined) {
    const org = await findOrg(db, String(body.org));
    if (!org) throw new HttpError(400, 'invalid request', 'no such organization', 'org');
    orgId = org.id;
  }
  const token = newRunnerToken();
  try {
    return { row: await insertRunnerToken(db, { name: body.name, orgId, hash: runnerTokenHash(token) }), token };
  } catch (err) {
    if (uniqueViolation(err) !== undefined) throw conflict('name', 'a runner token with this name exists');
    throw err;
  }
}

export function registerRunnerTokenRoutes(app: FastifyInstance, { pool }: ApiDeps): void {
  app.post('/runner-tokens', documented({ tag: 'runners', summary: 'Make a runner token', description: 'The token is in this answer only; Sluice keeps its sha256.', body: CreateToken, response: { 201: RunnerToken.extend({ token: z.string() }), ...errors(400, 409) } }), async (request, reply) => {
    const { row, token } = await createRunnerToken(pool, request.body);
    return reply.code(201).send({ ...runnerTokenView(row), token });
  });

  app.get('/runner-tokens', documented({ tag: 'runners', summary: 'List runner tokens', response: { 200: z.object({ runner_tokens: z.array(RunnerToken) }) } }), async () => ({ runner_tokens: (await listRunnerTokens(pool)).map(runnerTokenView) }));

  app.delete<{ Params: { id: string } }>('/runner-tokens/:id', documented({ tag: 'runners', summary: 'Revoke a runner token', description: 'Its runner’s next call is refused; the jobs it was running fail at once, to be tried again elsewhere.', params: IdParams('runner token'), response: { 204: NoBody, ...errors(404) } }), async (request, reply) => {
    if (!(await revokeRunnerToken(pool, parseId(request.params.id, 'runner token')))) throw notFound('runner token');
    return reply.code(204).send();
  });
}
