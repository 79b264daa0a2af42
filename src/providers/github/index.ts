import { z } from 'zod';
import { defineProvider, eventHeader, type Outcome, type ParseContext, quote, read, unsupported } from '../common';
import { toCommit, withHead, zCommit } from '../commits';
import { createOrDelete, pullRequestTrigger } from '../githubFamily';
import { refUpdateTrigger } from '../push';
import { zSha } from '../refs';
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
  const pr = body.pull_request;
  return pullRequestTrigger(ACTIONS, {
    number: body.number,
    providerAction: body.action,
    merged: pr.merged,
    url: pr.html_url,
    source: [pr.head.ref, 'pull_request.head.ref'],
    target: [pr.base.ref, 'pull_request.base.ref'],
    head: pr.head.sha,
    changesetKind: 'github',
  });
}
