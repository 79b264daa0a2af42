import { defineGithubFamily, GITEA_ACTIONS, PullRequestWithBranches, Push } from '../githubFamily';

/**
 * Gogs (`POST /1/gogs/<KEY>`), told apart by `X-Gogs-Event`: push, create, delete,
 * pull_request (actions as Gitea's, which forked from it: new commits are `synchronized`).
 * Unlike Gitea, a Gogs pull request names its branches (`head_branch`) but no commit, so the
 * build takes the tip of `refs/pull/<n>/head`; and its push has no `head_commit`.
 */
export const gogs = defineGithubFamily({
  name: 'gogs',
  displayName: 'Gogs',
  eventHeaders: ['x-gogs-event'],
  subscribeHint: (events) => `trigger the hook on ${events} events only`,
  push: Push.omit({ created: true, deleted: true, base_ref: true, head_commit: true }),
  actions: GITEA_ACTIONS,
  pullRequest: PullRequestWithBranches,
  changesetKind: 'generic',
});
