import { makeTrigger, quote, type Outcome, type ParseContext } from './common';
import { oldestFirst } from './commits';
import { checkSha, classifyRef, isNullSha } from './refs';
import type { TriggerKind } from '../core/types';
import type { ProviderCommit } from './types';

/**
 * One ref moved from `before` to `after`: the push event of GitHub, GitLab, Gitea and Gogs.
 * A zero `before` means the ref was created, a zero `after` that it was deleted (GitHub also
 * says so in `created`/`deleted`).
 */
export interface RefUpdate {
  ref: string;
  before?: string | null;
  after: string;
  commits: ProviderCommit[];
  created?: boolean;
  deleted?: boolean;
  /** GitLab `checkout_sha`: for an annotated tag `after` is the tag object, this the commit it points at. */
  peeled?: string | null;
  /** The branch a pushed tag was cut from, if the provider says (GitHub `base_ref`). */
  baseRef?: string | null;
  /** Where `ref` and `after` are in the body, for error messages (default `ref`, `after`). */
  fields?: { ref: string; after: string };
}

export function refUpdateTrigger(ctx: ParseContext, event: string, u: RefUpdate): Outcome {
  const fields = u.fields ?? { ref: 'ref', after: 'after' };
  const target = classifyRef(u.ref, fields.ref);
  // Notes, pull-request refs, review refs: nothing a suite builds.
  if (target.type === 'other') return { ignore: `push to ${quote(u.ref)}: neither a branch nor a tag` };
  const tagBranch = (): string | null => {
    const base = u.baseRef ? classifyRef(u.baseRef, 'base_ref') : null;
    return base?.type === 'branch' ? base.name : ctx.queryBranch ?? null;
  };

  if (u.deleted === true || isNullSha(u.after)) {
    return target.type === 'branch'
      ? makeTrigger(event, 'branch-delete', { branch: target.name, ref: target.ref })
      : makeTrigger(event, 'tag-delete', { branch: ctx.queryBranch ?? null, ref: target.ref });
  }

  const after = checkSha(u.after, fields.after);
  if (target.type === 'tag') {
    const head = u.peeled ? checkSha(u.peeled, 'checkout_sha') : after;
    return makeTrigger(event, 'tag', { branch: tagBranch(), head, ref: target.ref, commits: oldestFirst(u.commits, head) });
  }
  const kind: TriggerKind = u.created === true || isNullSha(u.before) ? 'branch-create' : 'push';
  return makeTrigger(event, kind, { branch: target.name, head: after, ref: target.ref, commits: oldestFirst(u.commits, after) });
}
