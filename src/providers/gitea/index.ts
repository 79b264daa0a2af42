import { defineGithubFamily, GITEA_ACTIONS, PullRequestWithHead, Push } from '../githubFamily';

/**
 * Gitea (`POST /1/gitea/<KEY>`), told apart by `X-Gitea-Event` (Forgejo also sends
 * `X-Forgejo-Event`): push, create, delete, pull_request. Gitea files every pull-request
 * change (assignees, labels, new commits) under `pull_request` and says which in `action`;
 * new commits are `synchronized`.
 */
export const gitea = defineGithubFamily({
  name: 'gitea',
  displayName: 'Gitea',
  eventHeaders: ['x-gitea-event', 'x-forgejo-event'],
  subscribeHint: (events) => `trigger the hook on ${events} events only`,
  push: Push.omit({ created: true, deleted: true, base_ref: true }),
  actions: GITEA_ACTIONS,
  pullRequest: PullRequestWithHead,
  changesetKind: 'generic',
});
