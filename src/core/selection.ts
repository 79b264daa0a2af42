/**
 * Commit selection (spec §1): given one normalized trigger, the repository's settings, the
 * addressed branch's row and whether a suite exists, decide what becomes of it. Pure: the API
 * reads the rows, calls `selectTrigger`, and stores what it says (acceptTrigger).
 *
 * - `build`: record it and queue a session (reason null);
 * - `skip`: record it with the reason, answer 200 with a guid, build nothing;
 * - `drop`: answer 422 `DROPPED` and record nothing (spec §7; a 422 has no guid to look it up by).
 * `branchUpdate`, whatever the decision, is the branch row's new visibility: a delete hides
 * the branch, a push shows it; present when the row must be created or changed.
 *
 * The rules, in the order they apply (the first that fires decides):
 * 1. Branch blacklist: a branch whose name equals an entry, or matches it as a glob (`*` within
 *    one path segment, `**` across them, `{a,b}`, `?`), is dropped, whatever the event; its
 *    row is left alone. Tags are not branches: the blacklist does not apply to them.
 * 2. Branch delete: skipped ("nothing to build"); the branch is hidden unless locked visible.
 *    Tag delete: skipped.
 * 3. Branch toggles: a branch switched off is dropped (pushes still show it again).
 * 4. No suite: a branch without a suite is dropped (spec §7). A tag builds only in a suite
 *    named after the tag (a suite for branch `v1.2` builds tag `v1.2`); otherwise it is skipped
 *    with the reason, not dropped, so providers do not flag every tag push as a failed delivery.
 * 5. Pull-request-only: anything that is not a pull request is skipped.
 * 6. A pull request that was closed or merged is skipped: nothing new to build (the merge
 *    arrives as a push to the target branch). Other actions (opened, updated, reopened,
 *    assigned, labeled) build; the suite skips a head it already built unless `force`.
 * 7. Skip tags in the head commit's message (core/skipTags): skipped.
 * 8. Otherwise: build.
 *
 * Visibility: `push` and `branch-create` (every generic trigger without a changeset) show a
 * hidden branch again and create the row of a branch seen for the first time; pull requests
 * and tags never touch branch rows (a pull request's source branch may live in a fork).
 */
import picomatch from 'picomatch';
import { skipTagReason } from './skipTags';
import type { TriggerEvent, TriggerKind } from './types';

export type Decision = 'build' | 'skip' | 'drop';

export interface Selection {
  decision: Decision;
  /** Why; null exactly when the decision is `build`. */
  reason: string | null;
  branchUpdate?: { hidden: boolean };
}

export interface BranchState {
  enabled: boolean;
  hidden: boolean;
  lockedVisible: boolean;
}

export interface SelectionRepo {
  pullRequestOnly: boolean;
  /** Branch names and glob patterns. */
  branchBlacklist: readonly string[];
}

export interface SelectionInput {
  trigger: Pick<TriggerEvent, 'branch' | 'head' | 'kind' | 'changeset' | 'action' | 'commits'>;
  repo: SelectionRepo;
  /** The row of `trigger.branch`; null when there is none (defaults: enabled, shown, not locked). */
  branch: BranchState | null;
  /** Whether a suite exists for `trigger.branch` (for a tag: for the tag's name). */
  hasSuite: boolean;
}

/** What a trigger announces; generic triggers (and rows stored before providers) say it through `changeset`. */
export function triggerKind(event: Pick<TriggerEvent, 'kind' | 'changeset'>): TriggerKind {
  return event.kind ?? (event.changeset ? 'pull-request' : 'push');
}

/** Whether a trigger of this kind addresses a branch (rather than a tag). */
export function addressesBranch(kind: TriggerKind): boolean {
  return kind !== 'tag' && kind !== 'tag-delete';
}

const CLOSED_ACTIONS: ReadonlySet<string> = new Set(['closed', 'merged']);

export function selectTrigger(input: SelectionInput): Selection {
  const { trigger, repo, branch, hasSuite } = input;
  const kind = triggerKind(trigger);
  const name = trigger.branch;

  if (!addressesBranch(kind)) {
    if (kind === 'tag-delete') return skip(`tag ${q(name)} deleted: nothing to build`);
    if (!hasSuite) return skip(`tag ${q(name)}: tags build only in a suite named after the tag, and there is none`);
    return afterSuite(input, kind, undefined);
  }

  const entry = blacklistEntry(name, repo.branchBlacklist);
  if (entry !== undefined) {
    return drop(entry === name ? `branch ${q(name)} is blacklisted` : `branch ${q(name)} is blacklisted (matches ${q(entry)})`);
  }

  if (kind === 'branch-delete') {
    if (branch?.lockedVisible) return skip(`branch ${q(name)} deleted: nothing to build; it stays visible (locked visible)`);
    const hide = branch === null || !branch.hidden ? { branchUpdate: { hidden: true } } : {};
    return { ...skip(`branch ${q(name)} deleted: nothing to build; branch hidden`), ...hide };
  }

  const show = (kind === 'push' || kind === 'branch-create') && (branch === null || branch.hidden) ? { hidden: false } : undefined;
  if (branch !== null && !branch.enabled) return drop(`branch ${q(name)} is switched off`, show);
  if (!hasSuite) return drop(`no suite for branch ${q(name)}`, show);
  return afterSuite(input, kind, show);
}

/** Rules 5 to 8, shared by branches and tags. */
function afterSuite(input: SelectionInput, kind: TriggerKind, show: Selection['branchUpdate']): Selection {
  const { trigger, repo } = input;
  const withShow = (s: Selection): Selection => (show ? { ...s, branchUpdate: show } : s);
  if (repo.pullRequestOnly && kind !== 'pull-request') {
    return withShow(skip(`pull-request-only: the repository builds pull requests only, and this is a ${kind}`));
  }
  if (kind === 'pull-request' && trigger.action !== undefined && CLOSED_ACTIONS.has(trigger.action)) {
    return withShow(skip(`pull request ${trigger.action}: nothing new to build`));
  }
  const head = headCommit(trigger);
  const tag = head === undefined ? undefined : skipTagReason(head.message);
  if (tag !== undefined) return withShow(skip(head!.id ? `${tag} (${head!.id.slice(0, 12)})` : tag));
  return withShow({ decision: 'build', reason: null });
}

/**
 * The head commit among those the trigger announced: the one whose id is `head` (either may
 * be abbreviated), or the last one when `head` is not a commit id (`HEAD`, `tip`, a ref).
 * Undefined when the trigger lists no commits, or not the head: then no skip tag applies.
 */
export function headCommit(trigger: Pick<TriggerEvent, 'head' | 'commits'>): { id: string; message: string } | undefined {
  const commits = trigger.commits ?? [];
  if (commits.length === 0) return undefined;
  if (!/^[0-9a-f]{7,64}$/i.test(trigger.head)) return commits.at(-1);
  const head = trigger.head.toLowerCase();
  for (let i = commits.length - 1; i >= 0; i--) {
    const c = commits[i]!;
    const id = c.id.toLowerCase();
    if (id.length > 0 && (id.startsWith(head) || head.startsWith(id))) return c;
  }
  return undefined;
}

/** The blacklist entry `branch` matches (by name, then as a glob), or undefined. */
export function blacklistEntry(branch: string, blacklist: readonly string[]): string | undefined {
  for (const raw of blacklist) {
    const entry = raw.startsWith('refs/heads/') ? raw.slice('refs/heads/'.length) : raw;
    if (entry === branch) return raw;
  }
  for (const raw of blacklist) {
    const entry = raw.startsWith('refs/heads/') ? raw.slice('refs/heads/'.length) : raw;
    if (globMatches(entry, branch)) return raw;
  }
  return undefined;
}

function globMatches(pattern: string, name: string): boolean {
  if (!/[*?[\]{}()!+@]/.test(pattern)) return false;
  try {
    // nonegate: an entry `!x` must not mean "every branch but x"; windows: false, so `\` never
    // turns into a path separator and the result does not depend on the machine.
    return picomatch.isMatch(name, pattern, { nonegate: true, windows: false, dot: true });
  } catch {
    // A pattern picomatch cannot read is only a name, and names were compared already.
    return false;
  }
}

/**
 * One decision for a delivery that changed several refs (Bitbucket and Bitbucket Server list
 * every ref of a push in one delivery): `build` when any ref builds, else `skip` when any is
 * skipped, else `drop`. The reason is the one ref's own; for several, those not built, each as
 * `<ref>: <decision>: <reason>`, or null when all build.
 */
export function combineSelections(items: readonly { label: string; selection: Selection }[]): { decision: Decision; reason: string | null } {
  const decisions = items.map((i) => i.selection.decision);
  const decision: Decision = decisions.includes('build') ? 'build' : decisions.includes('skip') ? 'skip' : 'drop';
  if (items.length === 1) return { decision, reason: items[0]!.selection.reason };
  const notBuilt = items.filter((i) => i.selection.decision !== 'build');
  if (notBuilt.length === 0) return { decision, reason: null };
  return { decision, reason: notBuilt.map((i) => `${i.label}: ${i.selection.decision}: ${i.selection.reason}`).join('; ') };
}

function skip(reason: string): Selection {
  return { decision: 'skip', reason };
}

function drop(reason: string, branchUpdate?: Selection['branchUpdate']): Selection {
  return branchUpdate ? { decision: 'drop', reason, branchUpdate } : { decision: 'drop', reason };
}

/** A name in a reason: quoted, and cut short so a reason never grows with its input. */
function q(name: string): string {
  return JSON.stringify(name.length > 80 ? `${name.slice(0, 80)}…` : name);
}
