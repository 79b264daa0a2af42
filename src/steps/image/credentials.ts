/**
 * The registry logins a build pulls with, as the `config.json` crane reads: the repository's
 * registry logins (one per host, set through the API) over the `auths` of its
 * `DOCKER_AUTH_CONFIG` secret (a Docker config.json, GitLab's name for it). Only `auths` is
 * kept: a config's `credHelpers` or `credsStore` would make crane run a program the config
 * names, on the runner, so they never reach it. A build that may not have the repository's
 * secrets (an untrusted pull request) gets none of this: it pulls anonymously.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DOCKER_HUB } from '../../core/imageRef';
import type { RegistryLogin } from '../records';


/** The secret whose value is a Docker config.json (GitLab's name for the same thing). */
export const DOCKER_AUTH_CONFIG = 'DOCKER_AUTH_CONFIG';

interface AuthEntry {
  auth?: string;
  username?: string;
  password?: string;
  identitytoken?: string;
  registrytoken?: string;
}

/** The key Docker's config.json files Docker Hub's login under; every other registry is its host. */
const HUB_KEY = 'https://index.docker.io/v1/';
const HUB_NAMES = new Set([DOCKER_HUB, 'index.docker.io', 'registry-1.docker.io']);

/** A config.json key (`https://ghcr.io`, `docker.io`, `127.0.0.1:5000`) as crane looks it up. */
export function authKey(key: string): string {
  const host = key.replace(/^[a-z]+:\/\//i, '').split('/')[0]!.toLowerCase();
  return HUB_NAMES.has(host) ? HUB_KEY : host;
}

const FIELDS = ['auth', 'username', 'password', 'identitytoken', 'registrytoken'] as const;

/**
 * The `auths` of a Docker config.json, each entry only with what logs in; and what was wrong
 * with it (never quoting it: it is a secret). Anything else in the file is left out.
 */
export function authsOfDockerConfig(text: string): { auths: Record<string, AuthEntry>; problem: string | null } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { auths: {}, problem: `the ${DOCKER_AUTH_CONFIG} secret is not JSON (a Docker config.json with "auths")` };
  }
  const auths = (parsed as { auths?: unknown } | null)?.auths;
  if (auths === null || typeof auths !== 'object' || Array.isArray(auths)) {
    return { auths: {}, problem: `the ${DOCKER_AUTH_CONFIG} secret has no "auths" mapping` };
  }
  const out: Record<string, AuthEntry> = {};
  for (const [key, value] of Object.entries(auths as Record<string, unknown>)) {
    if (value === null || typeof value !== 'object') continue;
    const entry: AuthEntry = {};
    for (const field of FIELDS) {
      const v = (value as Record<string, unknown>)[field];
      if (typeof v === 'string' && v !== '') entry[field] = v;
    }
    if (Object.keys(entry).length > 0) out[authKey(key)] = entry;
  }
  return { auths: out, problem: null };
}

/** The config.json crane gets: the secret's auths, the registry logins over them. */
export function dockerConfigJson(logins: readonly RegistryLogin[], dockerAuthConfig: string | undefined): { json: string; problem: string | null } {
  const fromSecret = dockerAuthConfig === undefined ? { auths: {}, problem: null } : authsOfDockerConfig(dockerAuthConfig);
  const auths: Record<string, AuthEntry> = { ...fromSecret.auths };
  for (const login of logins) auths[authKey(login.host)] = { username: login.username, password: login.password };
  return { json: JSON.stringify({ auths }), problem: fromSecret.problem };
}

/**
 * A directory with `config.json` for crane (DOCKER_CONFIG), 0700 in a 0700 directory of its
 * own, removed by `dispose` (the logins exist on disk only while a pull needs them).
 */
export async function writeDockerConfig(json: string): Promise<{ dir: string; dispose(): Promise<void> }> {
  const dir = await mkdtemp(path.join(tmpdir(), 'sluice-registry-'));
  await writeFile(path.join(dir, 'config.json'), json, { mode: 0o600 });
  return { dir, dispose: () => rm(dir, { recursive: true, force: true }) };
}
