/**
 * What GitHub, Gitea and Gogs hooks share: Gitea and Gogs copied GitHub's `create`/`delete`
 * events and the shape of `pull_request`, down to keeping each pull request's head at
 * `refs/pull/<n>/head` in the base repository.
 */
import { z } from 'zod';
import { lookup, makeTrigger, type Outcome, type ParseContext, quote, read } from './common';
import { branchRef, tagRef, zSha } from './refs';
import type { ChangesetKind } from '../core/types';
import type { PullRequestAction } from './types';

const CreateOrDelete = z.object({
  ref: z.string(),
  ref_type: z.enum(['branch', 'tag']),
  // Gitea and newer Gogs send the commit on `create`; GitHub does not (the build takes the tip).
  sha: zSha.nullish(),
});

/** `create` / `delete` of a branch or tag, named by its short name. */
export function createOrDelete(ctx: ParseContext, event: 'create' | 'delete'): Outcome {
  const body = read(CreateOrDelete, ctx.body);
  const head = event === 'create' ? (body.sha ?? null) : null;
  if (body.ref_type === 'branch') {
    const { name, ref } = branchRef(body.ref, 'ref');
    return makeTrigger(event, event === 'create' ? 'branch-create' : 'branch-delete', { branch: name, head, ref });
  }
  const { ref } = tagRef(body.ref, 'ref');
  return makeTrigger(event, event === 'create' ? 'tag' : 'tag-delete', { branch: ctx.queryBranch ?? null, head, ref });
}

export interface PullRequestFields {
  number: number;
  providerAction: string;
  merged: boolean | null | undefined;
  url: string | null | undefined;
  /** Source and target branch names, and the field each came from (for error messages). */
  source: [string, string];
  target: [string, string];
  /** The head commit, when the provider sends it (Gogs does not). */
  head?: string;
  changesetKind: ChangesetKind;
}

/**
 * A `pull_request` event, or an `ignore` for an action Sluice does not build on (edits,
 * milestones, review requests...: a hook subscribes to events, not actions, so that is no
 * misconfiguration).
 */
export function pullRequestTrigger(actions: Readonly<Record<string, PullRequestAction>>, pr: PullRequestFields): Outcome {
  let action = lookup(actions, pr.providerAction);
  if (action === undefined) return { ignore: `pull_request ${quote(pr.providerAction)}: not an action Sluice builds on` };
  if (action === 'closed' && pr.merged === true) action = 'merged';
  const source = branchRef(pr.source[0], pr.source[1]);
  const target = branchRef(pr.target[0], pr.target[1]);
  return makeTrigger('pull_request', 'pull-request', {
    branch: source.name,
    ...(pr.head === undefined ? {} : { head: pr.head }),
    ref: `refs/pull/${pr.number}/head`,
    pullRequest: {
      id: String(pr.number),
      url: pr.url,
      action,
      providerAction: pr.providerAction,
      targetBranch: target.name,
      changesetKind: pr.changesetKind,
    },
  });
}
