/**
 * What a build may be trusted with, by what triggered it. A pull request (or a Gerrit change,
 * or a generic trigger with a `changeset`) runs code its author has not merged, possibly from
 * a fork: it gets none of the repository's secrets, and nothing it built is pushed to the CI
 * server. A repository may trust pull requests whose source branch is its own (the provider
 * said so: `sameRepository`), never a fork's: those get the secrets, and are still not pushed.
 * Only a push to the branch itself (or the branch's creation) may lead to a push. Pure.
 */
import { triggerKind } from './selection';
import type { TriggerEvent } from './types';

export interface BuildTrust {
  /** The repository's build secrets reach the tests. */
  secrets: boolean;
  /** A passed build is pushed to the CI server (when it has one). */
  push: boolean;
  /**
   * The build may write dependency cache entries (core/buildSetup.ts cacheScopes): a push that
   * brought no `env` of its own. Absent in histories recorded before caches: no.
   */
  cache?: boolean;
}

export interface TrustSettings {
  /** The repository's `trust_same_repo_pull_requests`. */
  trustSameRepoPullRequests: boolean;
}

export function buildTrust(
  trigger: Pick<TriggerEvent, 'kind' | 'changeset' | 'sameRepository'> & { env?: TriggerEvent['env'] },
  settings: TrustSettings = { trustSameRepoPullRequests: false },
): BuildTrust {
  const kind = triggerKind(trigger);
  const trustedPullRequest = kind === 'pull-request' && settings.trustSameRepoPullRequests && trigger.sameRepository === true;
  const push = kind === 'push' || kind === 'branch-create';
  return { secrets: kind !== 'pull-request' || trustedPullRequest, push, cache: push && Object.keys(trigger.env ?? {}).length === 0 };
}
