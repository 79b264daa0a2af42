/**
 * Commit statuses (issue 13) as the application layer decides them: a repository's status
 * settings, taken when a repository is made or changed (app/repos.ts holds the fields' place in
 * its bodies, this module their rules), and the log of every attempt.
 *
 * The token is write-only: sealed with SLUICE_SECRET_KEY like the other secrets, and shown only
 * as `status_token_set`.
 */
import { z } from 'zod';
import { STATUS_PROVIDERS, type StatusProvider } from '../core/commitStatus';
import { seal } from '../crypto/sealed';
import { listRepoStatusAttempts, updateStatusSettings, type StatusAttemptRow } from '../db/commitStatuses';
import type { RepoRow } from '../db/repos';
import type { Db } from '../db/transaction';
import { DEFAULT_STATUS_API_URLS, repoPathFromPullUrl, statusRepoProblem } from '../delivery/commitStatus';
import { AppError, validate } from './errors';
import { httpUrl, plainText, withoutCredentials } from './fields';

/** The status settings' fields, as `POST /orgs/:org/repos` and `PATCH /repos/:repo` take them. */
export const statusSettingFields = {
  // Whose status API; null turns statuses off (the other settings are kept).
  status_provider: z.enum(STATUS_PROVIDERS).nullish(),
  // The API's base URL, for a self-hosted instance (GitHub Enterprise `https://ghe.example/api/v3`,
  // GitLab `https://gitlab.example/api/v4`, Gitea `https://gitea.example/api/v1`, Bitbucket
  // Server the server's own `https://bitbucket.example`); null: the provider's public API (none
  // for Gitea and Bitbucket Server).
  status_api_url: httpUrl
    .refine(withoutCredentials, 'must not contain credentials: set status_token')
    .refine((s) => !/[?#]/.test(s), 'a base URL without query or fragment')
    // Stored as fetch will read it (`https:/h/api` is `https://h/api`), without a trailing slash.
    .transform((s) => new URL(s).href.replace(/\/+$/, ''))
    .nullish(),
  // The repository on the host: owner/name (Bitbucket Server PROJECT/slug), or GitLab's project path or id.
  status_repo: plainText(300).nullish(),
  // The API token: a header value, so printable ASCII without spaces. null removes it.
  status_token: z
    .string()
    .min(1)
    .max(2048)
    .refine((s) => /^[\x21-\x7e]+$/.test(s), 'printable ASCII without spaces only')
    .nullish(),
};

type StatusFields = { [K in keyof typeof statusSettingFields]?: z.output<(typeof statusSettingFields)[K]> };

/** What to store: the fields given, checked together with what the repository has. */
export interface StatusChange {
  status_provider?: StatusProvider | null;
  status_api_url?: string | null;
  status_repo?: string | null;
  status_token_sealed?: string | null;
}

const bad = (field: string, message: string) => new AppError('invalid', message, field);

/** What a required API URL looks like, for the 400 that asks for one. */
const API_URL_EXAMPLES: Partial<Record<StatusProvider, string>> = {
  gitea: 'https://gitea.example/api/v1',
  'bitbucket-server': 'https://bitbucket.example (the server, not its REST API)',
};

/** Where a token goes: the provider and the API base URL in effect; none with statuses off. */
const tokenTarget = (provider: StatusProvider | null, apiUrl: string | null): string | null =>
  provider === null ? null : `${provider} ${apiUrl ?? DEFAULT_STATUS_API_URLS[provider] ?? ''}`;

/**
 * The status settings of a request, checked against each other and the repository's (`repo`,
 * none on creation): with a provider, a repository path that suits it (by default the pull
 * URL's path, `git@github.com:acme/app.git` → `acme/app`), for Gitea an API URL, and a new
 * token when a token is set and the provider or API URL changes (turning statuses off needs
 * none). Refused as invalid, naming the field, otherwise; nothing is written here.
 */
export function checkStatusSettings(body: StatusFields & { pull_url?: string }, repo: RepoRow | undefined, secretKey: Buffer): StatusChange {
  const change: StatusChange = {};
  if (body.status_provider !== undefined) change.status_provider = body.status_provider;
  if (body.status_api_url !== undefined) change.status_api_url = body.status_api_url;
  if (body.status_repo !== undefined) change.status_repo = body.status_repo;
  if (body.status_token !== undefined) change.status_token_sealed = body.status_token === null ? null : seal(secretKey, body.status_token);

  const provider = change.status_provider !== undefined ? change.status_provider : (repo?.status_provider ?? null);
  if (provider === null) return change;
  const apiUrl = change.status_api_url !== undefined ? change.status_api_url : (repo?.status_api_url ?? null);
  if (apiUrl === null && DEFAULT_STATUS_API_URLS[provider] === null) {
    throw bad('status_api_url', `required for ${provider}: its API's base URL, e.g. ${API_URL_EXAMPLES[provider] ?? 'https://host/api'}`);
  }
  // Bitbucket Server's requests name their REST API (`/rest/api/latest/...`) themselves.
  if (provider === 'bitbucket-server' && apiUrl !== null && /\/rest(?:\/|$)/i.test(new URL(apiUrl).pathname)) {
    throw bad('status_api_url', 'the Bitbucket Server base URL (https://bitbucket.example, with its context path if any), not its REST API URL');
  }
  let statusRepo = change.status_repo !== undefined ? change.status_repo : (repo?.status_repo ?? null);
  if (statusRepo === null) {
    statusRepo = repoPathFromPullUrl(provider, body.pull_url ?? repo?.pull_url ?? '');
    if (statusRepo === null) throw bad('status_repo', `required with status_provider ${provider}: the pull URL names no repository path to take`);
    change.status_repo = statusRepo;
  }
  const problem = statusRepoProblem(provider, statusRepo);
  if (problem) throw bad('status_repo', `${problem} for ${provider}`);
  // The token was given for one host: a new provider or API URL (or statuses on again after
  // off, when which host it was is not known) needs it given again, never takes it along.
  if (body.status_token === undefined && repo?.status_token_set && tokenTarget(provider, apiUrl) !== tokenTarget(repo.status_provider, repo.status_api_url)) {
    throw bad('status_token', 'set it again for the new provider or API URL: a token is only sent to the host it was set for');
  }
  return change;
}

/** Stores what checkStatusSettings allowed. */
export async function storeStatusSettings(db: Db, repoId: number, change: StatusChange): Promise<void> {
  await updateStatusSettings(db, repoId, change);
}

/** The repository view's status fields: the API URL in effect (the provider's default when unset), never the token. */
export function statusSettingsView(r: RepoRow) {
  return {
    status_provider: r.status_provider,
    status_api_url: r.status_api_url ?? (r.status_provider ? DEFAULT_STATUS_API_URLS[r.status_provider] : null),
    status_repo: r.status_repo,
    status_token_set: r.status_token_set,
  };
}

export const StatusPage = z.object({
  limit: z.coerce.number().int().min(1).max(500).default(50),
  before: z.coerce.number().int().min(1).optional(),
  session: z.coerce.number().int().min(1).optional(),
  outcome: z.enum(['delivered', 'retrying', 'gave_up', 'dropped']).optional(),
});

/** A repository's status attempts, newest first, from the query of GET /repos/:repo/statuses. */
export async function repoStatusAttempts(db: Db, repo: RepoRow, query: unknown): Promise<StatusAttemptRow[]> {
  return listRepoStatusAttempts(db, repo.id, validate(StatusPage, query, 'query'));
}
