import { z } from 'zod';
import { defineProvider, eventHeader, lookup, makeTrigger, type Outcome, type ParseContext, quote, read, unsupported } from '../common';
import { toCommit, zCommit } from '../commits';
import { refUpdateTrigger } from '../push';
import { branchRef, tagRef, zSha } from '../refs';
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

const CreateOrDelete = z.object({
  ref: z.string(),
  ref_type: z.enum(['branch', 'tag']),
  // Sent by newer Gogs on `create` only.
  sha: zSha.nullish(),
});

function createOrDelete(ctx: ParseContext, event: 'create' | 'delete'): Outcome {
  const body = read(CreateOrDelete, ctx.body);
  const head = event === 'create' ? (body.sha ?? null) : null;
  if (body.ref_type === 'branch') {
    const { name, ref } = branchRef(body.ref, 'ref');
    return makeTrigger(event, event === 'create' ? 'branch-create' : 'branch-delete', { branch: name, head, ref });
  }
  const { ref } = tagRef(body.ref, 'ref');
  return makeTrigger(event, event === 'create' ? 'tag' : 'tag-delete', { branch: ctx.queryBranch ?? null, head, ref });
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
  let action = lookup(ACTIONS, body.action);
  if (action === undefined) return { ignore: `pull_request ${quote(body.action)}: not an action Sluice builds on` };
  if (action === 'closed' && body.pull_request.merged === true) action = 'merged';
  const pr = body.pull_request;
  const source = branchRef(pr.head_branch, 'pull_request.head_branch');
  const target = branchRef(pr.base_branch, 'pull_request.base_branch');
  return makeTrigger('pull_request', 'pull-request', {
    branch: source.name,
    // Gogs pushes each pull request's head here, in the base repository, forks included.
    ref: `refs/pull/${body.number}/head`,
    pullRequest: {
      id: String(body.number),
      url: pr.html_url,
      action,
      providerAction: body.action,
      targetBranch: target.name,
      changesetKind: 'generic',
    },
  });
}
