import { z } from 'zod';
import { defineProvider, eventHeader, makeTrigger, malformed, type Outcome, type ParseContext, quote, read, sameRepository, unsupported } from '../common';
import { oldestFirst, personFromRaw, withHead } from '../commits';
import { branchRef, tagRef, zSha } from '../refs';
import type { ProviderCommit, ProviderTrigger, PullRequestAction } from '../types';
import type { Scm } from '../../core/types';

/**
 * Bitbucket Cloud (`POST /1/bitbucket/<KEY>`), told apart by `X-Event-Key`: `repo:push` and
 * `pullrequest:created|updated|fulfilled|rejected`. Git and Mercurial repositories
 * (`repository.scm`); Mercurial refs are `named_branch` and `bookmark`, both built as branches.
 *
 * One push delivery lists every ref it changed (`push.changes[]`), so it yields one trigger
 * per change: a branch pushed together with a tag builds both.
 */

const PR_ACTIONS = {
  'pullrequest:created': 'opened',
  'pullrequest:updated': 'updated',
  'pullrequest:fulfilled': 'merged',
  'pullrequest:rejected': 'closed',
} as const satisfies Record<string, PullRequestAction>;

export const bitbucket = defineProvider('bitbucket', (ctx) => {
  const event = eventHeader(ctx, ['x-event-key'], 'Bitbucket Cloud');
  if (event === 'repo:push') return push(ctx);
  if (Object.hasOwn(PR_ACTIONS, event)) return pullRequest(ctx, event as keyof typeof PR_ACTIONS);
  // Bitbucket Server uses the same header with its own keys.
  const hint = event === 'repo:refs_changed' || event.startsWith('pr:') ? ' (this is a Bitbucket Server event: use the /1/stash/ path)' : '';
  unsupported(
    'headers.x-event-key',
    `event ${quote(event)} is not one Sluice acts on${hint}; subscribe the hook to repository push and pull request created, updated, merged and declined only`,
  );
});

const Author = z.object({ raw: z.string().nullish(), user: z.object({ display_name: z.string().nullish() }).nullish() }).nullish();

const Commit = z.object({ hash: zSha, message: z.string().nullish(), author: Author });

const Ref = z.object({
  type: z.enum(['branch', 'tag', 'named_branch', 'bookmark']),
  name: z.string(),
  target: Commit,
});

const Push = z.object({
  repository: z.object({ scm: z.enum(['git', 'hg']).nullish() }),
  push: z.object({
    changes: z.array(
      z.object({
        new: Ref.nullish(),
        old: Ref.nullish(),
        // Newest first, at most five; `truncated` says there were more.
        commits: z.array(Commit).nullish(),
      }),
    ),
  }),
});

function push(ctx: ParseContext): Outcome {
  const body = read(Push, ctx.body);
  const scm: Scm = body.repository.scm ?? 'git';
  return body.push.changes.map((change, i): ProviderTrigger => {
    const field = `push.changes.${i}`;
    const ref = change.new ?? change.old;
    if (!ref) malformed(field, 'expected new or old');
    const isTag = ref.type === 'tag';
    const nameField = `${field}.${change.new ? 'new' : 'old'}.name`;
    const name = isTag ? tagRef(ref.name, nameField) : branchRef(ref.name, nameField);
    // Mercurial has no refs to fetch: the name and the changeset id say it all.
    const fullRef = scm === 'git' ? name.ref : null;

    if (!change.new) {
      return isTag
        ? makeTrigger('repo:push', 'tag-delete', { branch: ctx.queryBranch ?? null, ref: fullRef }, scm)
        : makeTrigger('repo:push', 'branch-delete', { branch: name.name, ref: fullRef }, scm);
    }
    const head = change.new.target.hash;
    const commits = oldestFirst(withHead((change.commits ?? []).map(toCommit), toCommit(change.new.target)), head);
    if (isTag) return makeTrigger('repo:push', 'tag', { branch: ctx.queryBranch ?? null, head, ref: fullRef, commits }, scm);
    return makeTrigger('repo:push', change.old ? 'push' : 'branch-create', { branch: name.name, head, ref: fullRef, commits }, scm);
  });
}

function toCommit(c: z.output<typeof Commit>): ProviderCommit {
  return { id: c.hash, message: c.message ?? '', author: personFromRaw(c.author?.raw ?? c.author?.user?.display_name) };
}

const Endpoint = z.object({
  branch: z.object({ name: z.string() }),
  commit: z.object({ hash: zSha }).nullish(),
  repository: z.object({ full_name: z.string().nullish() }).nullish(),
});

const PullRequest = z.object({
  repository: z.object({ scm: z.enum(['git', 'hg']).nullish() }).nullish(),
  pullrequest: z.object({
    id: z.number().int().nonnegative(),
    source: Endpoint,
    destination: Endpoint,
    links: z.object({ html: z.object({ href: z.string() }).nullish() }).nullish(),
  }),
});

function pullRequest(ctx: ParseContext, event: keyof typeof PR_ACTIONS): Outcome {
  const body = read(PullRequest, ctx.body);
  const pr = body.pullrequest;
  const from = pr.source.repository?.full_name;
  const into = pr.destination.repository?.full_name;
  // Bitbucket Cloud keeps no ref for a pull request: a fork's branch is not in this repository,
  // and building a same-named branch of ours would test the wrong code.
  if (from && into && from !== into) return { ignore: `pull request ${pr.id} comes from the fork ${quote(from)}, whose commits this repository does not have` };
  const source = branchRef(pr.source.branch.name, 'pullrequest.source.branch.name');
  const target = branchRef(pr.destination.branch.name, 'pullrequest.destination.branch.name');
  return makeTrigger(
    event,
    'pull-request',
    {
      branch: source.name,
      // Abbreviated (12 digits) in these payloads; git and hg both accept it.
      head: pr.source.commit?.hash ?? null,
      pullRequest: {
        id: String(pr.id),
        url: pr.links?.html?.href,
        action: PR_ACTIONS[event],
        providerAction: event,
        targetBranch: target.name,
        changesetKind: 'generic',
        sameRepository: sameRepository(from, into),
      },
    },
    body.repository?.scm ?? 'git',
  );
}
