/**
 * One commit status as each hosting site's status API takes it (issue 13): the request's URL,
 * method, headers and JSON body, from the repository's settings and what the session says.
 * Pure: no I/O (delivery/postStatus.ts sends it through the webhook sender, send.ts).
 *
 * | provider  | request                                                            | auth                          |
 * |-----------|--------------------------------------------------------------------|-------------------------------|
 * | github    | POST {api}/repos/{owner}/{repo}/statuses/{sha}                     | `Authorization: Bearer <t>`   |
 * | gitlab    | POST {api}/projects/{id or url-encoded path}/statuses/{sha}        | `PRIVATE-TOKEN: <t>`          |
 * | gitea     | POST {api}/repos/{owner}/{repo}/statuses/{sha}  (Gitea, Forgejo)   | `Authorization: token <t>`    |
 * | bitbucket | POST {api}/repositories/{workspace}/{slug}/commit/{sha}/statuses/build | `Authorization: Bearer <t>`, or Basic for `user:secret` |
 * | bitbucket-server | POST {base}/rest/api/latest/projects/{key}/repos/{slug}/commits/{sha}/builds | `Authorization: Bearer <t>`, or Basic for `user:secret` |
 *
 * The token goes in a header only: never in the URL, the body, or anything logged.
 */
import { createHash } from 'node:crypto';
import type { StatusPhase, StatusProvider } from '../core/commitStatus';

/** The public API of each provider; Gitea (and Forgejo) and Bitbucket Server are self-hosted: no default. */
export const DEFAULT_STATUS_API_URLS: Readonly<Record<StatusProvider, string | null>> = {
  github: 'https://api.github.com',
  gitlab: 'https://gitlab.com/api/v4',
  gitea: null,
  bitbucket: 'https://api.bitbucket.org/2.0',
  // The server's base URL (with its context path, if any), not a REST API's: the request names its own.
  'bitbucket-server': null,
};

export const STATUS_USER_AGENT = 'Sluice-Status/1';

/**
 * Each provider's state for each phase (docs/builds.md, "Commit statuses"). A user's stop is no test
 * failure: GitHub and Gitea call it `error` (their "the CI could not finish"), GitLab
 * `canceled`, Bitbucket `STOPPED`, Bitbucket Server `CANCELLED`. A build in `error` (crash, time-out, broken sluice.yml) is
 * `error` where the provider has one, else failed. GitLab shows a build under way as `running`
 * (its `pending` means "waiting for a runner"), Bitbucket and Bitbucket Server as `INPROGRESS`.
 */
const STATES: Readonly<Record<StatusProvider, Readonly<Record<StatusPhase, string>>>> = {
  github: { running: 'pending', passed: 'success', failed: 'failure', error: 'error', stopped: 'error' },
  gitea: { running: 'pending', passed: 'success', failed: 'failure', error: 'error', stopped: 'error' },
  gitlab: { running: 'running', passed: 'success', failed: 'failed', error: 'failed', stopped: 'canceled' },
  bitbucket: { running: 'INPROGRESS', passed: 'SUCCESSFUL', failed: 'FAILED', error: 'FAILED', stopped: 'STOPPED' },
  // CANCELLED exists in the repository-scoped builds API (Bitbucket 7.4+) that statusRequest uses.
  'bitbucket-server': { running: 'INPROGRESS', passed: 'SUCCESSFUL', failed: 'FAILED', error: 'FAILED', stopped: 'CANCELLED' },
};

export function providerState(provider: StatusProvider, phase: StatusPhase): string {
  return STATES[provider][phase];
}

/** Where and as whom a repository's statuses go (its settings, the token unsealed). */
export interface StatusTarget {
  provider: StatusProvider;
  /** Null: the provider's public API. */
  apiUrl: string | null;
  /** `owner/name` (GitHub, Gitea, Bitbucket's `workspace/slug`, Bitbucket Server's `PROJECT/slug`), or GitLab's project path or numeric id. */
  repo: string;
  token: string;
}

/** What one status says. */
export interface StatusUpdate {
  phase: StatusPhase;
  /** The full commit id (40 or 64 hex digits). */
  commitId: string;
  /** The session's report page. */
  targetUrl: string;
  description: string;
  context: string;
  /** GitLab's `ref`, Bitbucket's `refname`: the branch, for a build of a push to it; else null. */
  ref: string | null;
}

export interface StatusRequest {
  url: string;
  method: 'POST';
  headers: Record<string, string>;
  body: Record<string, string>;
  /** The provider's name of the state sent, for the log. */
  state: string;
}

/** Bitbucket Cloud takes keys of at most 40 characters. */
export const BITBUCKET_MAX_KEY = 40;

const SEGMENT = /^[A-Za-z0-9_.~{}-]+$/;

/**
 * What is wrong with `repo` as `provider`'s repository path, or null. `owner/name` for GitHub,
 * Gitea, Bitbucket (`workspace/slug`) and Bitbucket Server (`PROJECT/slug`, a personal
 * repository's `~USER/slug`); for GitLab a numeric project id or a path of two or more segments
 * (`group/subgroup/project`).
 */
export function statusRepoProblem(provider: StatusProvider, repo: string): string | null {
  const segments = repo.split('/');
  const bad = segments.some((s) => !SEGMENT.test(s) || s === '.' || s === '..');
  if (provider === 'gitlab') {
    if (/^[1-9][0-9]{0,18}$/.test(repo)) return null;
    return segments.length >= 2 && !bad ? null : 'expected a GitLab project id or path (group/project, group/subgroup/project)';
  }
  const hint = { bitbucket: 'workspace/repository slug', 'bitbucket-server': 'PROJECT/repository slug' }[provider as string] ?? 'the repository as in its URL';
  return segments.length === 2 && !bad ? null : `expected owner/name (${hint})`;
}

/**
 * The repository path a pull URL suggests (`git@github.com:acme/app.git`,
 * `ssh://git@gitlab.example/group/sub/app.git` → `acme/app`, `group/sub/app`), for a
 * repository that names none; null when it suggests nothing usable. Bitbucket Server's SSH
 * URLs (`ssh://git@host:7999/proj/app.git`) are read the same way; its HTTP ones have `scm/`
 * (after any context path) before the project (`https://host/scm/proj/app.git` → `proj/app`).
 * The project key is kept as the URL spells it (clone URLs write it lower-case, the key itself
 * is upper-case; a server that will not take it so needs `status_repo` set).
 */
export function repoPathFromPullUrl(provider: StatusProvider, pullUrl: string): string | null {
  let path: string;
  const scp = /^[^/@:]+@[^/:]+:(.+)$/.exec(pullUrl);
  if (scp) path = scp[1]!;
  else {
    try {
      path = new URL(pullUrl).pathname;
    } catch {
      return null;
    }
  }
  let repo = path.replace(/^\/+|\/+$/g, '').replace(/\.git$/, '');
  if (provider === 'bitbucket-server') {
    const segments = repo.split('/');
    if (segments.length > 2 && segments[segments.length - 3] === 'scm') repo = segments.slice(-2).join('/');
  }
  return repo && statusRepoProblem(provider, repo) === null ? repo : null;
}

/** The request of one status; `{error}` when the settings cannot make one (said without the token). */
export function statusRequest(target: StatusTarget, update: StatusUpdate): StatusRequest | { error: string } {
  if (!/^(?:[0-9a-f]{40}|[0-9a-f]{64})$/i.test(update.commitId)) return { error: `not a full commit id: ${update.commitId.slice(0, 80)}` };
  const repoProblem = statusRepoProblem(target.provider, target.repo);
  if (repoProblem) return { error: `status_repo: ${repoProblem}` };
  // A value an HTTP header can carry (no spaces, no control characters), or it never leaves.
  if (!/^[\x21-\x7e]+$/.test(target.token)) return { error: 'the status token is not printable ASCII without spaces' };
  const base = target.apiUrl ?? DEFAULT_STATUS_API_URLS[target.provider];
  if (!base) return { error: `status_api_url is required for ${target.provider}` };
  const state = providerState(target.provider, update.phase);
  const sha = update.commitId.toLowerCase();
  const owner = () => target.repo.split('/').map(encodeURIComponent).join('/');
  const common = { 'content-type': 'application/json', 'user-agent': STATUS_USER_AGENT };

  switch (target.provider) {
    case 'github':
      return {
        url: join(base, `/repos/${owner()}/statuses/${sha}`),
        method: 'POST',
        headers: { ...common, accept: 'application/vnd.github+json', 'x-github-api-version': '2022-11-28', authorization: `Bearer ${target.token}` },
        body: { state, target_url: update.targetUrl, description: update.description, context: update.context },
        state,
      };
    case 'gitea':
      return {
        url: join(base, `/repos/${owner()}/statuses/${sha}`),
        method: 'POST',
        headers: { ...common, accept: 'application/json', authorization: `token ${target.token}` },
        body: { state, target_url: update.targetUrl, description: update.description, context: update.context },
        state,
      };
    case 'gitlab': {
      const body: Record<string, string> = { state, name: update.context, target_url: update.targetUrl, description: update.description };
      if (update.ref) body.ref = update.ref;
      return {
        // A path is one URL-encoded segment (`group%2Fproject`), as GitLab's API wants it.
        url: join(base, `/projects/${encodeURIComponent(target.repo)}/statuses/${sha}`),
        method: 'POST',
        headers: { ...common, accept: 'application/json', 'private-token': target.token },
        body,
        state,
      };
    }
    case 'bitbucket': {
      const body: Record<string, string> = {
        key: bitbucketKey(update.context),
        state,
        name: update.context,
        url: update.targetUrl,
        description: update.description,
      };
      if (update.ref) body.refname = update.ref;
      return {
        url: join(base, `/repositories/${owner()}/commit/${sha}/statuses/build`),
        method: 'POST',
        headers: { ...common, accept: 'application/json', authorization: bitbucketAuthorization(target.token) },
        body,
        state,
      };
    }
    case 'bitbucket-server': {
      // The repository-scoped builds resource, POST {base}/rest/api/latest/projects/{projectKey}
      // /repos/{repositorySlug}/commits/{commitId}/builds (Bitbucket Server 7.4+, and Data
      // Center), chosen over the older POST {base}/rest/build-status/1.0/commits/{commitId}:
      // Atlassian's "Updating build status for commits" documents this one, the old one is
      // deprecated since 7.14, takes only INPROGRESS, SUCCESSFUL and FAILED (no CANCELLED for a
      // stop) and no `ref`, and is keyed by the commit alone, not the repository it was built
      // in. key, state and url are required; fields of at most 255 characters (url 450): a key
      // is `sluice/<profile>`, and profile names have at most 100. Answers 204 on success.
      const body: Record<string, string> = {
        key: update.context,
        state,
        name: update.context,
        url: update.targetUrl,
        description: update.description,
      };
      // A full ref name: Bitbucket shows the status on pull requests from that branch.
      if (update.ref) body.ref = `refs/heads/${update.ref}`;
      return {
        url: join(base, `/rest/api/latest/projects/${owner().replace('/', '/repos/')}/commits/${sha}/builds`),
        method: 'POST',
        headers: { ...common, accept: 'application/json', authorization: bitbucketAuthorization(target.token) },
        body,
        state,
      };
    }
  }
}

/** The context as a Bitbucket key: itself up to 40 characters, else its start and a hash of the whole, so keys stay apart. */
export function bitbucketKey(context: string): string {
  if (context.length <= BITBUCKET_MAX_KEY) return context;
  const hash = createHash('sha256').update(context, 'utf8').digest('hex').slice(0, 8);
  return `${context.slice(0, BITBUCKET_MAX_KEY - hash.length - 1)}-${hash}`;
}

/**
 * A repository, project or workspace access token goes as a Bearer token; `user:secret` (an
 * app password, or an Atlassian API token with its account's e-mail; on Bitbucket Server a
 * user name and its password or personal access token) as Basic.
 */
export function bitbucketAuthorization(token: string): string {
  return token.includes(':') ? `Basic ${Buffer.from(token, 'utf8').toString('base64')}` : `Bearer ${token}`;
}

/** `base` (which may have a path of its own, `/api/v3`) followed by `path`. */
function join(base: string, path: string): string {
  return base.trim().replace(/\/+$/, '') + path;
}

/**
 * How long a refusal asks to wait when it is a rate limit rather than a refusal for good, or
 * undefined. GitHub answers a spent (primary or secondary) rate limit with 403 as well as 429,
 * with `Retry-After` or `x-ratelimit-remaining: 0` and `x-ratelimit-reset` (epoch seconds).
 * (A 429 is retried anyway, by send.ts.)
 */
export function rateLimitWaitMs(
  statusCode: number | null,
  headers: Record<string, string | string[]> | undefined,
  now: number = Date.now(),
): number | undefined {
  if (statusCode !== 403 && statusCode !== 429) return undefined;
  const header = (name: string) => {
    const v = headers?.[name];
    return Array.isArray(v) ? v[0] : v;
  };
  const retryAfter = header('retry-after');
  if (retryAfter !== undefined && /^\d+$/.test(retryAfter.trim())) return Number(retryAfter.trim()) * 1000;
  if (header('x-ratelimit-remaining')?.trim() === '0') {
    const reset = Number(header('x-ratelimit-reset'));
    return Number.isFinite(reset) && reset > 0 ? Math.max(1_000, reset * 1000 - now) : 60_000;
  }
  return undefined;
}

/**
 * GitLab refuses to move a status to the state it is in (`400 Cannot transition status via
 * :run from :running`): an earlier attempt that got through but whose answer was lost. Done.
 */
export function alreadyInState(provider: StatusProvider, statusCode: number | null, responseBody: string | undefined): boolean {
  return provider === 'gitlab' && statusCode === 400 && /Cannot transition status/i.test(responseBody ?? '');
}
