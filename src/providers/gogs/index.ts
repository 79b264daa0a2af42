import { z } from 'zod';
import { defineProvider, eventHeader, type Outcome, type ParseContext, quote, read, unsupported } from '../common';
import { toCommit, zCommit } from '../commits';
import { createOrDelete, pullRequestTrigger } from '../githubFamily';
import { refUpdateTrigger } from '../push';
import type { PullRequestAction } from '../types';

/**
 * Gogs (`POST /1/gogs/<KEY>`), told apart by `X-Gogs-Event`: push, create, delete,
 * pull_request (actions as Gitea's, which forked from it: new commits are `synchronized`).
 * Unlike Gitea, a Gogs pull request names its branches (`head_branch`) but no commit, so the
 * build takes the tip of `refs/pull/<n>/head`.
 */

const EVENTS = ['push', 'create', 'delete', 'pull_request'] as const;

export const gogs = defineProvider('gogs', (ctx) => {
  const event = eventHeader(ctx, ['x-gogs-event'], 'Gogs');
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
        'headers.x-gogs-event',
        `event ${quote(event)} is not one Sluice acts on; trigger the hook on ${EVENTS.join(', ')} events only`,
      );
  }
});

const Push = z.object({
  ref: z.string(),
  before: z.string().nullish(),
  after: z.string(),
  // Newest first.
  commits: z.array(zCommit).nullish(),
});

function push(ctx: ParseContext): Outcome {
  const body = read(Push, ctx.body);
  return refUpdateTrigger(ctx, 'push', {
    ref: body.ref,
    before: body.before,
    after: body.after,
    commits: (body.commits ?? []).map(toCommit),
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
    head_branch: z.string(),
    base_branch: z.string(),
  }),
});

function pullRequest(ctx: ParseContext): Outcome {
  const body = read(PullRequest, ctx.body);
  const pr = body.pull_request;
  // Gogs sends no commit id: the build takes the tip of refs/pull/<n>/head.
  return pullRequestTrigger(ACTIONS, {
    number: body.number,
    providerAction: body.action,
    merged: pr.merged,
    url: pr.html_url,
    source: [pr.head_branch, 'pull_request.head_branch'],
    target: [pr.base_branch, 'pull_request.base_branch'],
    changesetKind: 'generic',
  });
}
