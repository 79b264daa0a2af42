import { z } from 'zod';
import { defineProvider, eventHeader, lookup, makeTrigger, type Outcome, type ParseContext, quote, read, unsupported } from '../common';
import { toCommit, withHead, zCommit } from '../commits';
import { refUpdateTrigger } from '../push';
import { branchRef, tagRef, zSha } from '../refs';
import type { PullRequestAction } from '../types';

/**
 * GitHub (`POST /1/github/<KEY>`), told apart by `X-GitHub-Event`. Spec §4: Sluice acts on
 * exactly push, create, delete and pull_request; `ping` (sent when the hook is saved) is
 * answered without building; any other event means the hook subscribes to more than it should.
 *
 * A new branch or tag arrives twice (a `push` with `created: true` and a `create`); both are
 * triggers, and the second finds nothing new to build (spec §1, force false).
 */

const EVENTS = ['push', 'create', 'delete', 'pull_request'] as const;

export const github = defineProvider('github', (ctx) => {
  const event = eventHeader(ctx, ['x-github-event'], 'GitHub');
  switch (event) {
    case 'ping':
      return { ignore: 'ping: the hook is set up; nothing to build' };
    case 'push':
      return push(ctx);
    case 'create':
    case 'delete':
      return createOrDelete(ctx, event);
    case 'pull_request':
      return pullRequest(ctx);
    default:
      unsupported(
        'headers.x-github-event',
        `event ${quote(event)} is not one Sluice acts on; subscribe the hook to ${EVENTS.join(', ')} only`,
      );
  }
});

const Push = z.object({
  ref: z.string(),
  after: z.string(),
  created: z.boolean().optional(),
  deleted: z.boolean().optional(),
  // A tag pushed at a branch's tip names that branch here.
  base_ref: z.string().nullish(),
  commits: z.array(zCommit).nullish(),
  head_commit: zCommit.nullish(),
});

function push(ctx: ParseContext): Outcome {
  const body = read(Push, ctx.body);
  return refUpdateTrigger(ctx, 'push', {
    ref: body.ref,
    after: body.after,
    created: body.created,
    deleted: body.deleted,
    baseRef: body.base_ref,
    commits: withHead((body.commits ?? []).map(toCommit), body.head_commit ? toCommit(body.head_commit) : null),
  });
}

const CreateOrDelete = z.object({
  ref: z.string(),
  ref_type: z.enum(['branch', 'tag']),
});

/** `create`/`delete` carry a short name and no commit: the build takes the tip of the ref. */
function createOrDelete(ctx: ParseContext, event: 'create' | 'delete'): Outcome {
  const body = read(CreateOrDelete, ctx.body);
  if (body.ref_type === 'branch') {
    const { name, ref } = branchRef(body.ref, 'ref');
    return makeTrigger(event, event === 'create' ? 'branch-create' : 'branch-delete', { branch: name, ref });
  }
  const { ref } = tagRef(body.ref, 'ref');
  return makeTrigger(event, event === 'create' ? 'tag' : 'tag-delete', { branch: ctx.queryBranch ?? null, ref });
}

const ACTIONS: Readonly<Record<string, PullRequestAction>> = {
  opened: 'opened',
  synchronize: 'updated',
  reopened: 'reopened',
  closed: 'closed',
  assigned: 'assigned',
  labeled: 'labeled',
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
  // GitHub lets a hook pick events, not actions: an action we don't build on is no misconfiguration.
  if (action === undefined) return { ignore: `pull_request ${quote(body.action)}: not an action Sluice builds on` };
  if (action === 'closed' && body.pull_request.merged === true) action = 'merged';
  const pr = body.pull_request;
  const source = branchRef(pr.head.ref, 'pull_request.head.ref');
  const target = branchRef(pr.base.ref, 'pull_request.base.ref');
  return makeTrigger('pull_request', 'pull-request', {
    branch: source.name,
    head: pr.head.sha,
    // GitHub keeps every pull request's head here, in the base repository, forks included.
    ref: `refs/pull/${body.number}/head`,
    pullRequest: {
      id: String(body.number),
      url: pr.html_url,
      action,
      providerAction: body.action,
      targetBranch: target.name,
      changesetKind: 'github',
    },
  });
}
