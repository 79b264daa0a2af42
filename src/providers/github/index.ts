import { defineGithubFamily, PullRequestWithHead, Push } from '../githubFamily';

/**
 * GitHub (`POST /1/github/<KEY>`), told apart by `X-GitHub-Event`. Spec §4: Sluice acts on
 * exactly push, create, delete and pull_request; `ping` (sent when the hook is saved) is
 * answered without building; any other event means the hook subscribes to more than it should.
 *
 * A new branch or tag arrives twice (a `push` with `created: true` and a `create`); both are
 * triggers, and the second finds nothing new to build (spec §1, force false).
 */
export const github = defineGithubFamily({
  name: 'github',
  displayName: 'GitHub',
  eventHeaders: ['x-github-event'],
  ignoredEvents: { ping: 'ping: the hook is set up; nothing to build' },
  subscribeHint: (events) => `subscribe the hook to ${events} only`,
  // GitHub says `created`/`deleted` rather than leaving it to a zero `before`.
  push: Push.omit({ before: true }),
  actions: {
    opened: 'opened',
    synchronize: 'updated',
    reopened: 'reopened',
    closed: 'closed',
    assigned: 'assigned',
    labeled: 'labeled',
  },
  pullRequest: PullRequestWithHead,
  changesetKind: 'github',
});
