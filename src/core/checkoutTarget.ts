/**
 * What a build checks out, from its trigger's `head` and `ref` (spec §2: `ref` is the "private
 * ref/head for this build").
 *
 * Git: the ref is fetched along with the branches and tags, into REF_FETCHED, whatever it is:
 * a ref the server does not advertise as a branch (`refs/pull/12/head`, `refs/changes/…`,
 * `refs/review/…`), a full branch or tag ref, or a short name git resolves on the server. With
 * no `head` (`HEAD`) the build is of the ref's tip; with a `head` it is of that commit, which the
 * ref makes reachable (a fork's pull request). Every runner fetches the same, so each lane of the
 * build finds the commit.
 *
 * Mercurial fetches everything anyway: a `ref` names a bookmark, tag or branch, built at its tip
 * when no `head` was given.
 */
import type { Scm } from './types';

/** Where a git checkout keeps the trigger's ref. */
export const REF_FETCHED = 'refs/sluice/ref';

export interface CheckoutTarget {
  /** What to check out: the trigger's head, or the ref it named when it named no head. */
  head: string;
  /** Refspecs fetched besides the branches and tags: the trigger's own, then its ref's. */
  refspecs: string[];
}

const followsBranch = (head: string) => head === 'HEAD' || head === 'tip';

export function checkoutTarget(t: { scm: Scm; branch: string; head: string; ref: string | null; refspecs?: string[] }): CheckoutTarget {
  const refspecs = t.refspecs ?? [];
  if (!t.ref) return { head: t.head, refspecs };
  if (t.scm === 'hg') {
    // hg's changegroup hook names the pushed branch as its ref: nothing more to fetch or choose.
    return { head: followsBranch(t.head) && !t.ref.startsWith('refs/') && t.ref !== t.branch ? t.ref : t.head, refspecs };
  }
  return { head: followsBranch(t.head) ? REF_FETCHED : t.head, refspecs: [...refspecs, `+${t.ref}:${REF_FETCHED}`] };
}
