/**
 * Registry logins of a repository (issue 35): `PUT /api/v1/repos/:repo/registries/:host
 * {username, password}`, `GET /api/v1/repos/:repo/registries`, `DELETE
 * /api/v1/repos/:repo/registries/:host`. One login per registry host, used to pull the images its
 * builds name (`image:`) by the builds that may have the repository's secrets (never an untrusted
 * pull request, core/trust.ts). The password is sealed with SLUICE_SECRET_KEY and never shown
 * again; a `DOCKER_AUTH_CONFIG` secret (a Docker config.json) works too, these win over it.
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { parseRegistryHost } from '../../../core/imageRef';
import { seal } from '../../../crypto/sealed';
import type { ApiDeps } from '../../deps';
import { HttpError } from '../../http';
import { notFound, validate } from '../../../app/errors';
import type { RepoRow } from '../../../db/repos';
import { deleteRegistryLogin, listRegistryLogins, upsertRegistryLogin, type RegistryLoginRow } from '../../../db/registryLogins';
import type { Db } from '../../../db/transaction';
import { loadRepo } from '../../../app/repos';
import { documented, errors, NoBody, RepoParams } from '../../openapi/shapes';

const MAX_CREDENTIAL = 4 * 1024;
// eslint-disable-next-line no-control-regex
const noControl = (v: string) => !/[\x00-\x1f\x7f]/.test(v);

const PutLogin = z.strictObject({
  username: z.string().min(1).max(MAX_CREDENTIAL).refine(noControl, 'must not contain control characters'),
  password: z.string().min(1).max(MAX_CREDENTIAL).refine(noControl, 'must not contain control characters').describe('a password or access token; never shown again'),
}).meta({ examples: [{ username: 'ci-bot', password: 'a-registry-access-token' }] });

export const RegistryLogin = z.object({
  host: z.string().describe('the registry host it logs in to: `ghcr.io`, `registry.example.com:5000`, `docker.io`'),
  username: z.string(),
  created_at: z.date(),
  updated_at: z.date(),
});
const LoginParams = RepoParams.extend({ host: z.string().describe('the registry host, e.g. ghcr.io or registry.example.com:5000 (docker.io for Docker Hub)') });

/** A login as the API and the pages show it: never its password. */
export const registryLoginView = (row: RegistryLoginRow): z.output<typeof RegistryLogin> => ({ host: row.host, username: row.username, created_at: row.created_at, updated_at: row.updated_at });

function hostOf(text: string): string {
  const parsed = parseRegistryHost(text);
  if (!parsed.ok) throw new HttpError(400, 'invalid request', parsed.error, 'host');
  return parsed.host;
}

/** Sets the login for `host` of `repo` from a body of PUT …/registries/:host: whether it is new, and its row; a 400 naming a bad field. */
export async function putRegistryLogin({ pool, config }: ApiDeps, repo: RepoRow, host: string, input: unknown): Promise<{ created: boolean; row: RegistryLoginRow }> {
  const normalized = hostOf(host);
  const { username, password } = validate(PutLogin, input);
  return upsertRegistryLogin(pool, repo.id, { host: normalized, username, passwordSealed: seal(config.secretKey, password) });
}

/** Deletes the login for `host` of `repo`, or a 404 when it has none. */
export async function removeRegistryLogin(pool: Db, repo: RepoRow, host: string): Promise<void> {
  const parsed = parseRegistryHost(host);
  if (!parsed.ok || !(await deleteRegistryLogin(pool, repo.id, parsed.host))) throw notFound('registry login');
}

export function registerRegistryRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const { pool } = deps;

  app.put<{ Params: { repo: string; host: string } }>('/repos/:repo/registries/:host', documented({ tag: 'registries', summary: 'Set a registry login', description: 'Builds that may have the repository’s secrets pull the images they name from this registry with it.', params: LoginParams, body: PutLogin, response: { 201: RegistryLogin.describe('a new login (never its password)'), 204: NoBody.describe('an existing login replaced'), ...errors(400, 404) } }), async (request, reply) => {
    const repo = await loadRepo(pool, request.params.repo);
    const result = await putRegistryLogin(deps, repo, request.params.host, request.body);
    if (!result.created) return reply.code(204).send();
    return reply.code(201).send(registryLoginView(result.row));
  });

  app.get<{ Params: { repo: string } }>('/repos/:repo/registries', documented({ tag: 'registries', summary: 'List a repository’s registry logins (hosts and users, never passwords)', params: RepoParams, response: { 200: z.array(RegistryLogin), ...errors(404) } }), async (request) => {
    const repo = await loadRepo(pool, request.params.repo);
    return (await listRegistryLogins(pool, repo.id)).map(registryLoginView);
  });

  app.delete<{ Params: { repo: string; host: string } }>('/repos/:repo/registries/:host', documented({ tag: 'registries', summary: 'Delete a registry login', params: LoginParams, response: { 204: NoBody, ...errors(404) } }), async (request, reply) => {
    await removeRegistryLogin(pool, await loadRepo(pool, request.params.repo), request.params.host);
    return reply.code(204).send();
  });
}
