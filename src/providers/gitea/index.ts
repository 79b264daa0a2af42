import { z } from 'zod';
import { defineProvider, eventHeader, type Outcome, type ParseContext, quote, read, unsupported } from '../common';
import { toCommit, withHead, zCommit } from '../commits';
import { createOrDelete, pullRequestTrigger } from '../githubFamily';
import { refUpdateTrigger } from '../push';
import { zSha } from '../refs';
import type { PullRequestAction } from '../types';

/**
 * Gitea (`POST /1/gitea/<KEY>`), told apart by `X-Gitea-Event` (Forgejo also sends
 * `X-Forgejo-Event`): push, create, delete, pull_request. Gitea files every pull-request
 * change (assignees, labels, new commits) under `pull_request` and says which in `action`;
 * new commits are `synchronized`.
 */

const EVENTS = ['push', 'create', 'delete', 'pull_request'] as const;

export const gitea = defineProvider('gitea', (ctx) => {
  const event = eventHeader(ctx, ['x-gitea-event', 'x-forgejo-event'], 'Gitea');
  switch (event) {
    case 'push':
      return push(ctx);
    case 'create':
    case 'delete':
      return createOrDelete(ctx, event);
    case 'pull_request':
      return pullRequest(ctx);
    default:
      unsupported(
        'headers.x-gitea-event',
        `event ${quote(event)} is not one Sluice acts on; trigger the hook on ${EVENTS.join(', ')} events only`,
      );
  }
});

const Push = z.object({
  ref: z.string(),
  before: z.string().nullish(),
  after: z.string(),
  // Newest first; null when the push brought no new commits.
  commits: z.array(zCommit).nullish(),
  head_commit: zCommit.nullish(),
});

function push(ctx: ParseContext): Outcome {
  const body = read(Push, ctx.body);
  return refUpdateTrigger(ctx, 'push', {
    ref: body.ref,
    before: body.before,
    after: body.after,
    commits: withHead((body.commits ?? []).map(toCommit), body.head_commit ? toCommit(body.head_commit) : null),
  });
}

const ACTIONS: Readonly<Record<string, PullRequestAction>> = {
  opened: 'opened',
  synchronized: 'updated',
  reopened: 'reopened',
  closed: 'closed',
  assigned: 'assigned',
  label_updated: 'labeled',
};

const PullRequest = z.object({
  action: z.string(),
  number: z.number().int().nonnegative(),
  pull_request: z.object({
    html_url: z.string().nullish(),
    merged: z.boolean().nullish(),
    head: z.object({ ref: z.string(), sha: zSha }),
    base: z.object({ ref: z.string() }),
  }),
});

function pullRequest(ctx: ParseContext): Outcome {
  const body = read(PullRequest, ctx.body);
  const pr = body.pull_request;
  return pullRequestTrigger(ACTIONS, {
    number: body.number,
    providerAction: body.action,
    merged: pr.merged,
    url: pr.html_url,
    source: [pr.head.ref, 'pull_request.head.ref'],
    target: [pr.base.ref, 'pull_request.base.ref'],
    head: pr.head.sha,
    changesetKind: 'generic',
  });
}
