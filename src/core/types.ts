/**
 * The shared vocabulary of Sluice. Pure types only: imported by the API, the activities and
 * the (deterministic) workflow code alike.
 */

export type Scm = 'git' | 'hg';

export type ChangesetKind = 'github' | 'gerrit' | 'review' | 'generic';

/**
 * What a trigger announces (spec §1 commit selection reads it), for generic triggers and
 * provider hooks alike:
 * - `push`: new commits on an existing branch (every generic trigger without a `changeset`);
 * - `branch-create`: a branch appeared (a push that created it, or a bare "branch created"
 *   event); builds like a push and shows a hidden branch again;
 * - `branch-delete`: a branch went away; hides the branch (spec §1 "Branch hiding"), never builds;
 * - `tag`: a tag was pushed or created;
 * - `tag-delete`: a tag went away; nothing to build, but recorded (spec §4: GitHub's `delete`
 *   covers tags too, so the event is acted on rather than refused);
 * - `pull-request`: a pull/merge request or a code review (Gerrit patch set) changed (a
 *   generic trigger with a `changeset`).
 */
export const TRIGGER_KINDS = ['push', 'branch-create', 'branch-delete', 'tag', 'tag-delete', 'pull-request'] as const;
export type TriggerKind = (typeof TRIGGER_KINDS)[number];

/** A commit a trigger announced. */
export interface TriggerCommit {
  id: string;
  message: string;
  /** E-mail address when known, else the name, else "". */
  author: string;
}

/** What every incoming trigger (generic JSON, form, empty body, provider hook) is parsed into. */
export interface TriggerEvent {
  /** Where it came from: `builds` for the generic path, else the provider name. */
  provider: string;
  op: 'push';
  /** The suite the trigger addresses: a branch, or for `tag`/`tag-delete` the tag's name. */
  branch: string;
  /** Commit to build; `HEAD` (git) or `tip` (hg) when the trigger names none. */
  head: string;
  ref?: string;
  scm: Scm;
  force: boolean;
  queuePosition: 'tail' | 'head';
  profileName?: string;
  /** Every test file runs, over a profile's selection of affected ones (issue 40). */
  full?: boolean;
  refspec?: string[];
  changeset?: { kind: ChangesetKind; id?: string; url?: string };
  env: Record<string, string>;
  queue?: string;
  /**
   * Provider triggers only (absent on generic ones and on rows stored before providers: read it
   * with `triggerKind` (core/selection), which says `pull-request` when there is a changeset, else `push`).
   */
  kind?: TriggerKind;
  /** The provider's own name of the event (`push`, `Merge Request Hook`, `repo:refs_changed`, ...). */
  event?: string;
  /** Pull requests: the action in Sluice's words (`opened`, `updated`, `closed`, `merged`, ...). */
  action?: string;
  /**
   * Pull requests from providers: the branch the commits come from (`branch` is the target,
   * whose suite builds them), for the record.
   */
  sourceBranch?: string;
  /**
   * Pull requests: true when the provider's payload shows the source branch lives in this very
   * repository, not in a fork (core/trust.ts); absent when it does not say, or for a fork.
   */
  sameRepository?: boolean;
  /** Commits the trigger announced, oldest first, head last; capped (see acceptTrigger). */
  commits?: TriggerCommit[];
  /** Set on a rebuild (`POST /api/v1/sessions/:id/rebuild`): the session it builds again. */
  rebuildOf?: number;
  /**
   * Set on a rebuild: the digests the rebuilt build's images resolved to, by normalized
   * reference (core/imageRef.ts); an image named here is not resolved again.
   */
  imageDigests?: Record<string, string>;
}

/**
 * What the API asks of the orchestrator for one accepted build (temporal/enqueue.ts): the one
 * enqueue request. The suite workflow's `enqueue` signal carries only its `sessionId` and
 * `queuePosition` (workflows/signals.ts); workflow histories record that payload, so it keeps
 * its shape.
 */

export const TEST_STATUSES = ['passed', 'failed', 'error', 'skipped'] as const;
export type TestStatus = (typeof TEST_STATUSES)[number];

/** Final (and intermediate) status of a session. Only `passed` is named by the spec. */
export const SESSION_STATUSES = ['queued', 'running', 'passed', 'failed', 'error', 'skipped', 'stopped'] as const;
export type SessionStatus = (typeof SESSION_STATUSES)[number];
/** Whether a session with this status has ended (it will not change again). */
export const hasEnded = (status: string): boolean => status !== 'queued' && status !== 'running';

export const COUNT_KEYS = ['notstarted', 'started', 'passed', 'failed', 'pending', 'skipped', 'error'] as const;
export type Counts = Record<(typeof COUNT_KEYS)[number], number>;

export const EVENTS = ['received', 'start', 'test', 'first-fail', 'stop'] as const;
export type EventName = (typeof EVENTS)[number];

/** Seconds since the epoch, with fraction, per lifecycle key (spec §6 "Timing keys"). */
export type Timing = Partial<Record<string, number>>;

/** Outgoing webhook payload, spec §2. */
export interface OutgoingPayload {
  event: EventName;
  timestamp: string;
  session: number;
  guid: string;
  url: string;
  parent_session?: number;
  profile_name: string;
  commit_id: string | null;
  committers: string[];
  status: SessionStatus;
  counts: Counts;
  workers: number;
  stopped_by?: string;
  timing: Timing;
  branch: string;
  ref: string | null;
  repository: { name: string; url: string; org_name: string };
  xid: string;
}
