/**
 * The shared vocabulary of Sluice. Pure types only: imported by the API, the activities and
 * the (deterministic) workflow code alike.
 */

export type Scm = 'git' | 'hg';

export type ChangesetKind = 'github' | 'gerrit' | 'review' | 'generic';

/** What every incoming trigger (generic JSON, form, empty body, provider hook) is parsed into. */
export interface TriggerEvent {
  /** Where it came from: `builds` for the generic path, else the provider name. */
  provider: string;
  op: 'push';
  branch: string;
  /** Commit to build; `HEAD` (git) or `tip` (hg) when the trigger names none. */
  head: string;
  ref?: string;
  scm: Scm;
  force: boolean;
  queuePosition: 'tail' | 'head';
  profileName?: string;
  refspec?: string[];
  changeset?: { kind: ChangesetKind; id?: string; url?: string };
  env: Record<string, string>;
  queue?: string;
}

export const TEST_STATUSES = ['passed', 'failed', 'error', 'skipped'] as const;
export type TestStatus = (typeof TEST_STATUSES)[number];

/** Final (and intermediate) status of a session. Only `passed` is named by the spec. */
export type SessionStatus = 'queued' | 'running' | 'passed' | 'failed' | 'error' | 'skipped' | 'stopped';

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
