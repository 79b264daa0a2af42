/**
 * The first attempt of a session's event made outside its workflow's delivery lane: by the API
 * for `received` (delivery/received.ts), and by CI squash's batch for the sessions it ends
 * (delivery/squashed.ts). Claimed first (db/deliveries.ts `claimFirstAttempt`), so only one of
 * them and the lane makes attempt 1; the lane goes on from the log when this one did not settle
 * the event (activities/delivery.ts `afterFirstAttempt`).
 */
import type { RetrySchedule } from './backoff';
import { claimFirstAttempt, eventAttempts } from '../db/deliveries';
import { attemptOnce, type DeliverDeps } from './attempt';
import type { EventPayload } from './compose';

/** A claim with no attempt logged after this long is taken over by the session's own lane. */
export const CLAIM_TAKEOVER_MS = 30_000;

/**
 * `settled`: delivered, given up, dropped, or the webhook is gone; nothing more to send.
 * `open`: a lane must still carry it (the attempt failed and may be retried, or another
 * holder's attempt is still under way or failed).
 */
export type FirstAttemptOutcome = 'settled' | 'open';

export async function firstAttempt(
  deps: DeliverDeps,
  spec: { webhookId: number; sessionId: number; payload: EventPayload; maxAttempts: number; retry: RetrySchedule },
): Promise<FirstAttemptOutcome> {
  const key = { sessionId: spec.sessionId, webhookId: spec.webhookId, event: spec.payload.event };
  if (await claimFirstAttempt(deps.pool, key, CLAIM_TAKEOVER_MS)) {
    const done = await attemptOnce(deps, { ...spec, attempt: 1, origin: 'event' });
    return done === null || done.outcome !== 'retrying' ? 'settled' : 'open';
  }
  const { last } = await eventAttempts(deps.pool, key);
  return last !== null && last.outcome !== 'retrying' ? 'settled' : 'open';
}
