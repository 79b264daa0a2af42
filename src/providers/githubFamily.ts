/**
 * What GitHub, Gitea and Gogs hooks share: Gitea and Gogs copied GitHub's events (push,
 * create, delete, pull_request), the shape of their payloads and even each pull request's head
 * at `refs/pull/<n>/head` in the base repository. `defineGithubFamily` is the whole adapter;
 * each provider's folder says only where it differs (header, words for actions, fields sent).
 */
import { z } from 'zod';
import { defineProvider, eventHeader, lookup, makeTrigger, type Outcome, type ParseContext, quote, read, sameRepository, unsupported } from './common';
import { toCommit, withHead, zCommit } from './commits';
import { refUpdateTrigger } from './push';
import { branchRef, tagRef, zSha } from './refs';
import type { ChangesetKind } from '../core/types';
import type { ProviderAdapter, PullRequestAction } from './types';

const EVENTS = ['push', 'create', 'delete', 'pull_request'] as const;

/**
 * Every field any of the three sends with a push; each provider reads the ones it sends
 * (`Push.omit(...)`), so a field it does not send is never looked at.
 */
export const Push = z.object({
  ref: z.string(),
  before: z.string().nullish(),
  after: z.string(),
  // GitHub: a new branch or tag, a deleted one.
  created: z.boolean().optional(),
  deleted: z.boolean().optional(),
  // GitHub: a tag pushed at a branch's tip names that branch here.
  base_ref: z.string().nullish(),
  // GitHub oldest first; Gitea and Gogs newest first (oldestFirst sorts it out). Null when the
  // push brought no new commits.
  commits: z.array(zCommit).nullish(),
  head_commit: zCommit.nullish(),
});

type PushBody = Pick<z.output<typeof Push>, 'ref' | 'after'> & Partial<z.output<typeof Push>>;

/** Gitea's and Gogs' words for the pull-request actions Sluice builds on (GitHub's differ: `synchronize`, `labeled`). */
export const GITEA_ACTIONS: Readonly<Record<string, PullRequestAction>> = {
  opened: 'opened',
  synchronized: 'updated',
  reopened: 'reopened',
  closed: 'closed',
  assigned: 'assigned',
  label_updated: 'labeled',
};

/** A `pull_request` payload; the family differs only in how it names the branches and head. */
function pullRequestPayload<B extends z.ZodRawShape>(branches: B) {
  return z.object({
    action: z.string(),
    number: z.number().int().nonnegative(),
    pull_request: z.object({ html_url: z.string().nullish(), merged: z.boolean().nullish(), ...branches }),
  });
}

/** The repository a side of a pull request lives in: a fork or the repository itself. */
const PrRepo = z.object({ id: z.number().nullish(), full_name: z.string().nullish() }).nullish();

/** GitHub, Gitea: the head commit and both branches as `head`/`base` objects. */
export const PullRequestWithHead = pullRequestPayload({
  head: z.object({ ref: z.string(), sha: zSha, repo: PrRepo }),
  base: z.object({ ref: z.string(), repo: PrRepo }),
});

/** Gogs: the branches as `head_branch`/`base_branch`, no commit (the build takes the tip of `refs/pull/<n>/head`). */
export const PullRequestWithBranches = pullRequestPayload({ head_branch: z.string(), base_branch: z.string(), head_repo: PrRepo, base_repo: PrRepo });

/** Same repository on both sides: by id when both have one, else by full name. */
function sameRepo(head: z.output<typeof PrRepo>, base: z.output<typeof PrRepo>): boolean {
  if (typeof head?.id === 'number' && typeof base?.id === 'number') return sameRepository(head.id, base.id);
  return sameRepository(head?.full_name, base?.full_name);
}

export interface GithubFamilyProvider {
  /** The path segment. */
  name: string;
  /** For messages: `GitHub`, `Gitea`, `Gogs`. */
  displayName: string;
  /** Headers naming the event, first found wins; the first is the `field` of a problem. */
  eventHeaders: readonly string[];
  /** Events answered 200 without building, with the reason (GitHub `ping`). */
  ignoredEvents?: Readonly<Record<string, string>>;
  /** How the provider's settings page words the choice of events, for the 422 message. */
  subscribeHint: (events: string) => string;
  push: z.ZodType<PushBody>;
  /** The provider's words for the pull-request actions Sluice builds on. */
  actions: Readonly<Record<string, PullRequestAction>>;
  pullRequest: typeof PullRequestWithHead | typeof PullRequestWithBranches;
  changesetKind: ChangesetKind;
}

export function defineGithubFamily(p: GithubFamilyProvider): ProviderAdapter {
  return defineProvider(p.name, (ctx) => {
    const event = eventHeader(ctx, p.eventHeaders, p.displayName);
    const ignored = p.ignoredEvents ? lookup(p.ignoredEvents, event) : undefined;
    if (ignored !== undefined) return { ignore: ignored };
    switch (event) {
      case 'push':
        return push(ctx, p.push);
      case 'create':
      case 'delete':
        return createOrDelete(ctx, event);
      case 'pull_request':
        return pullRequest(ctx, p);
      default:
        unsupported(`headers.${p.eventHeaders[0]}`, `event ${quote(event)} is not one Sluice acts on; ${p.subscribeHint(EVENTS.join(', '))}`);
    }
  });
}

function push(ctx: ParseContext, schema: z.ZodType<PushBody>): Outcome {
  const body = read(schema, ctx.body);
  return refUpdateTrigger(ctx, 'push', {
    ref: body.ref,
    before: body.before,
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
  // Gitea and newer Gogs send the commit on `create`; GitHub does not (the build takes the tip).
  sha: zSha.nullish(),
});

/** `create` / `delete` of a branch or tag, named by its short name. */
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

/**
 * A `pull_request` event, or an `ignore` for an action Sluice does not build on (edits,
 * milestones, review requests...: a hook subscribes to events, not actions, so that is no
 * misconfiguration).
 */
function pullRequest(ctx: ParseContext, p: GithubFamilyProvider): Outcome {
  const body = read(p.pullRequest, ctx.body);
  const pr = body.pull_request;
  let action = lookup(p.actions, body.action);
  if (action === undefined) return { ignore: `pull_request ${quote(body.action)}: not an action Sluice builds on` };
  if (action === 'closed' && pr.merged === true) action = 'merged';
  const [source, target, head, same] =
    'head_branch' in pr
      ? [
          branchRef(pr.head_branch, 'pull_request.head_branch'),
          branchRef(pr.base_branch, 'pull_request.base_branch'),
          undefined,
          sameRepo(pr.head_repo, pr.base_repo),
        ]
      : [branchRef(pr.head.ref, 'pull_request.head.ref'), branchRef(pr.base.ref, 'pull_request.base.ref'), pr.head.sha, sameRepo(pr.head.repo, pr.base.repo)];
  return makeTrigger('pull_request', 'pull-request', {
    branch: source.name,
    ...(head === undefined ? {} : { head }),
    ref: `refs/pull/${body.number}/head`,
    pullRequest: {
      id: String(body.number),
      url: pr.html_url,
      action,
      providerAction: body.action,
      targetBranch: target.name,
      changesetKind: p.changesetKind,
      sameRepository: same,
    },
  });
}
