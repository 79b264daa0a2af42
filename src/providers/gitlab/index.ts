import { z } from 'zod';
import { defineProvider, eventHeader, lookup, makeTrigger, type Outcome, type ParseContext, quote, read, sameRepository, unsupported } from '../common';
import { toCommit, zCommit } from '../commits';
import { refUpdateTrigger } from '../push';
import { branchRef } from '../refs';
import type { PullRequestAction } from '../types';

/**
 * GitLab (`POST /1/gitlab/<KEY>`), told apart by `X-Gitlab-Event`: `Push Hook`, `Tag Push Hook`,
 * `Merge Request Hook`. An instance-wide system hook says `System Hook` for all of them and
 * names the event in the body's `object_kind`, so that works too. GitLab marks a created ref
 * with `before` all zeros and a deleted one with `after` all zeros.
 */

const ENABLE = 'enable only the push, tag push and merge request events';

export const gitlab = defineProvider('gitlab', (ctx) => {
  const event = eventHeader(ctx, ['x-gitlab-event'], 'GitLab');
  switch (event) {
    case 'Push Hook':
    case 'Tag Push Hook':
      return push(ctx, event);
    case 'Merge Request Hook':
      return mergeRequest(ctx, event);
    case 'System Hook':
      return systemHook(ctx);
    default:
      unsupported(
        'headers.x-gitlab-event',
        `event ${quote(event)} is not one Sluice acts on; ${ENABLE}`,
      );
  }
});

function systemHook(ctx: ParseContext): Outcome {
  const { object_kind: kind } = read(z.object({ object_kind: z.string() }), ctx.body);
  if (kind === 'push') return push(ctx, 'Push Hook');
  if (kind === 'tag_push') return push(ctx, 'Tag Push Hook');
  if (kind === 'merge_request') return mergeRequest(ctx, 'Merge Request Hook');
  unsupported('object_kind', `system hook ${quote(kind)} is not one Sluice acts on; ${ENABLE}`);
}

const Push = z.object({
  ref: z.string(),
  before: z.string(),
  after: z.string(),
  checkout_sha: z.string().nullish(),
  commits: z.array(zCommit).nullish(),
});

function push(ctx: ParseContext, event: string): Outcome {
  const body = read(Push, ctx.body);
  return refUpdateTrigger(ctx, event, {
    ref: body.ref,
    before: body.before,
    after: body.after,
    peeled: body.checkout_sha,
    commits: (body.commits ?? []).map(toCommit),
  });
}

const MergeRequest = z.object({
  object_attributes: z.object({
    iid: z.number().int().nonnegative(),
    action: z.string(),
    source_branch: z.string(),
    target_branch: z.string(),
    url: z.string().nullish(),
    // Present on an `update` that brought new commits.
    oldrev: z.string().nullish(),
    last_commit: zCommit,
    // A fork's merge request comes from another project.
    source_project_id: z.number().nullish(),
    target_project_id: z.number().nullish(),
  }),
  changes: z.record(z.string(), z.unknown()).nullish(),
});

const ACTIONS: Readonly<Record<string, PullRequestAction>> = {
  open: 'opened',
  reopen: 'reopened',
  close: 'closed',
  merge: 'merged',
};

function mergeRequest(ctx: ParseContext, event: string): Outcome {
  const body = read(MergeRequest, ctx.body);
  const mr = body.object_attributes;
  const action = mergeRequestAction(mr.action, mr.oldrev, body.changes ?? {});
  // Approvals, title edits and the like: the hook can't be told to leave them out.
  if (action === undefined) return { ignore: `merge request ${quote(mr.action)}: not an action Sluice builds on` };
  const source = branchRef(mr.source_branch, 'object_attributes.source_branch');
  const target = branchRef(mr.target_branch, 'object_attributes.target_branch');
  const last = toCommit(mr.last_commit);
  return makeTrigger(event, 'pull-request', {
    branch: source.name,
    head: last.id,
    // GitLab keeps each merge request's head in the target project, forks included.
    ref: `refs/merge-requests/${mr.iid}/head`,
    commits: [last],
    pullRequest: {
      id: String(mr.iid),
      url: mr.url,
      action,
      providerAction: mr.action,
      targetBranch: target.name,
      changesetKind: 'generic',
      sameRepository: sameRepository(mr.source_project_id, mr.target_project_id),
    },
  });
}

/**
 * GitLab says `update` for new commits and for every edit alike; `oldrev` marks new commits
 * and `changes` says what else changed. Labels and assignees count as GitHub's `labeled` and
 * `assigned` (spec §4 names those for GitHub).
 */
function mergeRequestAction(action: string, oldrev: string | null | undefined, changes: Record<string, unknown>): PullRequestAction | undefined {
  if (action !== 'update') return lookup(ACTIONS, action);
  if (oldrev) return 'updated';
  if (Object.hasOwn(changes, 'labels')) return 'labeled';
  if (Object.hasOwn(changes, 'assignees') || Object.hasOwn(changes, 'assignee_id')) return 'assigned';
  return undefined;
}
