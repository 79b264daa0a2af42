/**
 * Registry logins of a repository (issue 35), as the JSON API and the web pages both decide about
 * them. One login per registry host, used to pull the images its builds name (`image:`) by the
 * builds that may have the repository's secrets (never an untrusted pull request, core/trust.ts).
 * The password is sealed with SLUICE_SECRET_KEY and never shown again; a `DOCKER_AUTH_CONFIG`
 * secret (a Docker config.json) works too, these win over it.
 */
import { z } from 'zod';
import { parseRegistryHost } from '../core/imageRef';
import { seal } from '../crypto/sealed';
import { deleteRegistryLogin, listRegistryLogins, upsertRegistryLogin, type RegistryLoginRow } from '../db/registryLogins';
import type { RepoRow } from '../db/repos';
import type { Db } from '../db/transaction';
import type { AppDeps } from './deps';
import { AppError, notFound, validate } from './errors';

const MAX_CREDENTIAL = 4 * 1024;
// eslint-disable-next-line no-control-regex
const noControl = (v: string) => !/[\x00-\x1f\x7f]/.test(v);

export const PutLogin = z.strictObject({
  username: z.string().min(1).max(MAX_CREDENTIAL).refine(noControl, 'must not contain control characters'),
  password: z.string().min(1).max(MAX_CREDENTIAL).refine(noControl, 'must not contain control characters').describe('a password or access token; never shown again'),
}).meta({ examples: [{ username: 'ci-bot', password: 'a-registry-access-token' }] });

export const RegistryLogin = z.object({
  host: z.string().describe('the registry host it logs in to: `ghcr.io`, `registry.example.com:5000`, `docker.io`'),
  username: z.string(),
  created_at: z.date(),
  updated_at: z.date(),
});

/** A login as the API and the pages show it: never its password. */
export const registryLoginView = (row: RegistryLoginRow): z.output<typeof RegistryLogin> => ({ host: row.host, username: row.username, created_at: row.created_at, updated_at: row.updated_at });

/** A repository's registry logins as the API and the pages show them (hosts and users, never passwords), by host. */
export async function registryLoginsOf(db: Db, repo: RepoRow): Promise<z.output<typeof RegistryLogin>[]> {
  return (await listRegistryLogins(db, repo.id)).map(registryLoginView);
}

function hostOf(text: string): string {
  const parsed = parseRegistryHost(text);
  if (!parsed.ok) throw new AppError('invalid', parsed.error, 'host');
  return parsed.host;
}

/** Sets the login for `host` of `repo` from a body of PUT …/registries/:host: whether it is new, and its row; invalid naming a bad field. */
export async function putRegistryLogin({ pool, config }: Pick<AppDeps, 'pool' | 'config'>, repo: RepoRow, host: string, input: unknown): Promise<{ created: boolean; row: RegistryLoginRow }> {
  const normalized = hostOf(host);
  const { username, password } = validate(PutLogin, input);
  return upsertRegistryLogin(pool, repo.id, { host: normalized, username, passwordSealed: seal(config.secretKey, password) });
}

/** Deletes the login for `host` of `repo`, or not found when it has none. */
export async function removeRegistryLogin(pool: Db, repo: RepoRow, host: string): Promise<void> {
  const parsed = parseRegistryHost(host);
  if (!parsed.ok || !(await deleteRegistryLogin(pool, repo.id, parsed.host))) throw notFound('registry login');
}
