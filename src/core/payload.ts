import { emptyCounts } from './counts';
import type { Counts, EventName, OutgoingPayload, SessionStatus, Timing } from './types';

/** What a payload says about the session that does not change while it runs. */
export interface PayloadContext {
  sessionId: number;
  guid: string;
  parentSession: number | null;
  url: string;
  profileName: string;
  branch: string;
  ref: string | null;
  workers: number;
  repo: { name: string; url: string; orgName: string };
}

/** What a payload says about the session as it is at the moment of the event. */
export interface SessionSnapshot {
  status: SessionStatus;
  counts: Counts;
  commitId: string | null;
  committers: readonly string[];
  timing: Timing;
  stoppedBy: string | null;
}

/** A session as it stands in the queue, before anything ran: what its `received` says. */
export function queuedSnapshot(timing: Timing, stoppedBy: string | null = null): SessionSnapshot {
  return { status: 'queued', counts: emptyCounts(), commitId: null, committers: [], timing, stoppedBy };
}

/**
 * The outgoing webhook payload of spec §2. Pure: the caller gives the time and the `xid`,
 * so that the workflow (which must be deterministic) can build it.
 */
export function buildPayload(
  event: EventName,
  ctx: PayloadContext,
  snap: SessionSnapshot,
  xid: string,
  now: Date,
): OutgoingPayload {
  const payload: OutgoingPayload = {
    event,
    timestamp: now.toISOString(),
    session: ctx.sessionId,
    guid: ctx.guid,
    url: ctx.url,
    profile_name: ctx.profileName,
    commit_id: snap.commitId,
    committers: [...snap.committers],
    status: snap.status,
    counts: { ...snap.counts },
    workers: ctx.workers,
    timing: { ...snap.timing },
    branch: ctx.branch,
    ref: ctx.ref,
    repository: { name: ctx.repo.name, url: ctx.repo.url, org_name: ctx.repo.orgName },
    xid,
  };
  // Optional keys are absent, not null, when they do not apply (spec §2: "present only for ...").
  if (ctx.parentSession !== null) payload.parent_session = ctx.parentSession;
  if (snap.stoppedBy) payload.stopped_by = snap.stoppedBy;
  return payload;
}

/** Seconds since the epoch with fraction, the unit of every `timing` value (spec §2). */
export function epochSeconds(ms: number): number {
  return ms / 1000;
}
