/**
 * Commit statuses on the hosting site (issue 13), the part the session workflow decides: when
 * a session posts one, under which context, with which description, and the retry policy
 * they go out under. Pure: workflow code imports it. The providers' requests are composed in
 * delivery/commitStatus.ts, the state names each provider takes there too.
 *
 * What a session posts (docs/builds.md, "Commit statuses"):
 * - `running` once it is known to build: when its tests start (`test`). Not at `start`: a
 *   session that turns out to be skipped (the commit was built already, or carries a skip
 *   tag) must leave the commit's status as the build that did build it left it, and at
 *   `start` that is not known yet.
 * - its outcome when it ends: passed, failed, error or stopped. A skipped session posts none.
 * - nothing without a commit (a checkout that failed, a stop before the checkout).
 */
import type { RetrySettings } from './retry';
import type { Counts, SessionStatus } from './types';

/** `bitbucket` is Bitbucket Cloud; `bitbucket-server` Bitbucket Server / Data Center (formerly Stash). */
export const STATUS_PROVIDERS = ['github', 'gitlab', 'gitea', 'bitbucket', 'bitbucket-server'] as const;
export type StatusProvider = (typeof STATUS_PROVIDERS)[number];

/** What a status says: the build is running its tests, or how it ended. */
export type StatusPhase = 'running' | 'passed' | 'failed' | 'error' | 'stopped';

/** The phase a session's final status reports; null for a status that posts none (skipped, or not ended). */
export function finalPhase(status: SessionStatus): StatusPhase | null {
  switch (status) {
    case 'passed':
    case 'failed':
    case 'error':
    case 'stopped':
      return status;
    default:
      return null;
  }
}

/** The context of a plan's parent session, which runs no profile of its own. */
export const PLAN_CONTEXT = 'sluice';

/**
 * The status's context (GitHub, Gitea), name (GitLab) or key (Bitbucket, Bitbucket Server): `sluice/<profile>`
 * for a session that runs a profile (each part of a plan its own), `sluice` for a plan's
 * parent (null), which sums up its parts. No profile name can make `sluice` alone.
 */
export function statusContext(profileName: string | null): string {
  return profileName === null ? PLAN_CONTEXT : `${PLAN_CONTEXT}/${profileName}`;
}

/** GitHub refuses a longer description (the others take it; one limit keeps them alike). */
export const MAX_DESCRIPTION_CHARS = 140;

export interface DescriptionFacts {
  session: number;
  counts: Counts;
  reason: string | null;
  stoppedBy: string | null;
}

/** The status's short description: `#12 passed: 10 test files`, `#12 failed: 2 of 10 test files failed`, ... */
export function statusDescription(phase: StatusPhase, facts: DescriptionFacts): string {
  const c = facts.counts;
  const total = c.notstarted + c.started + c.passed + c.failed + c.pending + c.skipped + c.error;
  const files = `${total} test file${total === 1 ? '' : 's'}`;
  let text: string;
  switch (phase) {
    case 'running':
      text = `#${facts.session} running`;
      break;
    case 'passed':
      text = `#${facts.session} passed: ${files}`;
      break;
    case 'failed':
      text = `#${facts.session} failed: ${c.failed} of ${files} failed${c.error > 0 ? `, ${c.error} erred` : ''}`;
      break;
    case 'error':
      text = facts.reason ? `#${facts.session} error: ${facts.reason}` : `#${facts.session} error: ${c.error} of ${files} erred`;
      break;
    case 'stopped':
      text = `#${facts.session} stopped${facts.stoppedBy ? ` by ${facts.stoppedBy}` : ''}`;
      break;
  }
  // One line: a reason may hold git's multi-line message.
  text = text.replace(/\s+/g, ' ').trim();
  return text.length > MAX_DESCRIPTION_CHARS ? `${text.slice(0, MAX_DESCRIPTION_CHARS - 1)}…` : text;
}

/**
 * The default retry policy of a status post: 8 attempts, 2 s doubling to at most a minute
 * between them (the last about 3 minutes after the first). A status is worth little once the
 * build is long over, and the outcome waits for the `running` before it (in order), so the
 * schedule is short; a rate limit's wait (GitHub's `Retry-After`) may stretch one wait to the
 * maximum interval.
 */
export const DEFAULT_STATUS_RETRY: RetrySettings = { initialIntervalMs: 2_000, backoffCoefficient: 2, maximumIntervalMs: 60_000, maximumAttempts: 8 };

/**
 * One commit status on the hosting site, built by the workflow (core/commitStatus.ts); the
 * activity reads where it goes, and the token, from the repository itself.
 */
export interface CommitStatusInput {
  sessionId: number;
  commitId: string;
  phase: StatusPhase;
  /** `sluice/<profile>`, or `sluice` for a plan's parent. */
  context: string;
  description: string;
  /** The session's report page. */
  targetUrl: string;
  /** The branch, for a build of a push to it (GitLab's `ref`, Bitbucket's `refname`); null for a pull request's or a tag's. */
  ref: string | null;
}

export interface CommitStatusResult {
  /** False when the repository has no status settings any more (nothing sent or logged). */
  posted: boolean;
  detail: string;
}
