import { z } from 'zod';
import { defineProvider, makeTrigger, malformed, type Outcome, type ParseContext, quote, read, sameRepository, unsupported } from '../common';
import { oldestFirst, person } from '../commits';
import { branchRef, checkSha, classifyRef, isNullSha, zSha } from '../refs';
import type { ProviderCommit, ProviderTrigger, PullRequestAction } from '../types';

/**
 * Bitbucket Server / Data Center, formerly Stash (`POST /1/stash/<KEY>`), told apart by
 * `X-Event-Key`: `repo:refs_changed` and `pr:opened|from_ref_updated|merged|declined`;
 * `diagnostics:ping` (the "Test connection" button) is answered without building.
 *
 * A delivery without `X-Event-Key` whose body has `refChanges` is the older Stash
 * post-receive webhook plugin's format, read as a push too.
 *
 * `repo:refs_changed` lists every ref of the push (one trigger each) but no commit messages.
 */

const PR_ACTIONS = {
  'pr:opened': 'opened',
  'pr:from_ref_updated': 'updated',
  'pr:merged': 'merged',
  'pr:declined': 'closed',
} as const satisfies Record<string, PullRequestAction>;

export const stash = defineProvider('stash', (ctx) => {
  const raw = ctx.headers['x-event-key'];
  const event = typeof raw === 'string' ? raw.trim() : '';
  if (event === '') {
    if (Object.hasOwn(ctx.body, 'refChanges')) return legacyPush(ctx);
    unsupported('headers.x-event-key', 'missing X-Event-Key header: is this a Bitbucket Server webhook sent to the stash path?');
  }
  if (event === 'diagnostics:ping') return { ignore: 'ping: the hook is set up; nothing to build' };
  if (event === 'repo:refs_changed') return refsChanged(ctx);
  if (Object.hasOwn(PR_ACTIONS, event)) return pullRequest(ctx, event as keyof typeof PR_ACTIONS);
  const hint = event === 'repo:push' || event.startsWith('pullrequest:') ? ' (this is a Bitbucket Cloud event: use the /1/bitbucket/ path)' : '';
  unsupported(
    'headers.x-event-key',
    `event ${quote(event)} is not one Sluice acts on${hint}; subscribe the hook to repository push and pull request opened, source branch updated, merged and declined only`,
  );
});

const RefChange = z.object({
  refId: z.string(),
  fromHash: z.string(),
  toHash: z.string(),
  type: z.enum(['ADD', 'UPDATE', 'DELETE']),
});

const RefsChanged = z.object({
  changes: z.array(RefChange.extend({ ref: z.object({ id: z.string() }).nullish() })),
});

function refsChanged(ctx: ParseContext): Outcome {
  const body = read(RefsChanged, ctx.body);
  return body.changes.map((c, i) => refTrigger(ctx, 'repo:refs_changed', c, `changes.${i}`, []));
}

type Change = z.output<typeof RefChange>;

function refTrigger(ctx: ParseContext, event: string, c: Change, field: string, commits: ProviderCommit[]): ProviderTrigger {
  const target = classifyRef(c.refId, `${field}.refId`);
  if (target.type === 'other') malformed(`${field}.refId`, 'expected refs/heads/<branch> or refs/tags/<tag>');
  if (c.type === 'DELETE' || isNullSha(c.toHash)) {
    return target.type === 'branch'
      ? makeTrigger(event, 'branch-delete', { branch: target.name, ref: target.ref })
      : makeTrigger(event, 'tag-delete', { branch: ctx.queryBranch ?? null, ref: target.ref });
  }
  // For an annotated tag this is the tag object; git checks it out as its commit.
  const head = checkSha(c.toHash, `${field}.toHash`);
  if (target.type === 'tag') return makeTrigger(event, 'tag', { branch: ctx.queryBranch ?? null, head, ref: target.ref, commits });
  const kind = c.type === 'ADD' || isNullSha(c.fromHash) ? 'branch-create' : 'push';
  return makeTrigger(event, kind, { branch: target.name, head, ref: target.ref, commits });
}

const LegacyCommit = z.object({
  id: zSha,
  message: z.string().nullish(),
  author: z.object({ name: z.string().nullish(), emailAddress: z.string().nullish() }).nullish(),
});

const LegacyPush = z.object({
  refChanges: z.array(RefChange),
  changesets: z.object({ values: z.array(z.object({ toCommit: LegacyCommit })).nullish() }).nullish(),
});

/** The post-receive webhook plugin: `refChanges` plus up to a page of `changesets`, newest first. */
function legacyPush(ctx: ParseContext): Outcome {
  const body = read(LegacyPush, ctx.body);
  const all = (body.changesets?.values ?? []).map(({ toCommit: c }) => ({
    id: c.id,
    message: c.message ?? '',
    author: person(c.author?.name, c.author?.emailAddress),
  }));
  return body.refChanges.map((c, i) => {
    // The changesets are not tied to a ref: they describe the push only when it moved one ref.
    const commits = body.refChanges.length === 1 && !isNullSha(c.toHash) ? oldestFirst(all, c.toHash) : [];
    return refTrigger(ctx, 'refChanges', c, `refChanges.${i}`, commits);
  });
}

const PrRef = z.object({
  id: z.string(),
  displayId: z.string().nullish(),
  latestCommit: zSha,
  // A fork's pull request comes from another repository.
  repository: z.object({ id: z.number().nullish() }).nullish(),
});

const PullRequest = z.object({
  pullRequest: z.object({
    id: z.number().int().nonnegative(),
    fromRef: PrRef,
    toRef: PrRef,
    links: z.object({ self: z.array(z.object({ href: z.string() })).nullish() }).nullish(),
  }),
});

function pullRequest(ctx: ParseContext, event: keyof typeof PR_ACTIONS): Outcome {
  const pr = read(PullRequest, ctx.body).pullRequest;
  const source = branchRef(pr.fromRef.id, 'pullRequest.fromRef.id');
  const target = branchRef(pr.toRef.id, 'pullRequest.toRef.id');
  return makeTrigger(event, 'pull-request', {
    branch: source.name,
    head: pr.fromRef.latestCommit,
    // Bitbucket Server keeps each pull request's source here, in the target repository.
    ref: `refs/pull-requests/${pr.id}/from`,
    pullRequest: {
      id: String(pr.id),
      url: pr.links?.self?.[0]?.href,
      action: PR_ACTIONS[event],
      providerAction: event,
      targetBranch: target.name,
      changesetKind: 'generic',
      sameRepository: sameRepository(pr.fromRef.repository?.id, pr.toRef.repository?.id),
    },
  });
}
