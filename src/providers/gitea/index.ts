import { z } from 'zod';
import { defineProvider, eventHeader, lookup, makeTrigger, type Outcome, type ParseContext, quote, read, unsupported } from '../common';
import { toCommit, withHead, zCommit } from '../commits';
import { refUpdateTrigger } from '../push';
import { branchRef, tagRef, zSha } from '../refs';
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

const CreateOrDelete = z.object({
  ref: z.string(),
  ref_type: z.enum(['branch', 'tag']),
  // `create` only: the commit the new ref points at.
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
    head: z.object({ ref: z.string(), sha: zSha }),
    base: z.object({ ref: z.string() }),
  }),
});

function pullRequest(ctx: ParseContext): Outcome {
  const body = read(PullRequest, ctx.body);
  let action = lookup(ACTIONS, body.action);
  // Edits, milestones, review requests share the one `pull_request` event: nothing to build.
  if (action === undefined) return { ignore: `pull_request ${quote(body.action)}: not an action Sluice builds on` };
  if (action === 'closed' && body.pull_request.merged === true) action = 'merged';
  const pr = body.pull_request;
  const source = branchRef(pr.head.ref, 'pull_request.head.ref');
  const target = branchRef(pr.base.ref, 'pull_request.base.ref');
  return makeTrigger('pull_request', 'pull-request', {
    branch: source.name,
    head: pr.head.sha,
    // Gitea keeps each pull request's head here, in the base repository, forks included.
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
