import { queuedSnapshot, type SessionSnapshot } from './payload';
import type { Timing } from './types';

/** Sessions CI squash ended while they waited, all squashed into `into` (delivery/squashed.ts ends them in one go). */
export interface SquashedBatch {
  sessionIds: number[];
  into: number;
}

/** A session whose events some receivers still need, and which. */
export interface OpenLanes {
  sessionId: number;
  webhookIds: number[];
}

/** CI squash's words for a session it ended: the report's reason and the `stop` event's. */
export function squashReason(into: number): string {
  return `squashed into session ${into} (CI squash builds only the newest queued trigger)`;
}

/**
 * What the `received` and `stop` of a session CI squash ended in its batch say, from the
 * timing recorded when it ended (db/sessions.ts `recordSquashed`).
 */
export function squashedSnapshots(ctx: { timing: Timing; receivedAt: number }): [SessionSnapshot, SessionSnapshot] {
  const queued = { ci_received_at: ctx.receivedAt, queue_first_seen_at: ctx.timing.queue_first_seen_at ?? ctx.receivedAt };
  return [queuedSnapshot(queued), { ...queuedSnapshot({ ...ctx.timing, ...queued }), status: 'skipped' }];
}
