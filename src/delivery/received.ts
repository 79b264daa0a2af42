/**
 * `received`, sent by the API the moment a trigger is accepted, before any workflow has run:
 * under a burst of triggers the session workflows that send the other events run seconds
 * behind, and `received` is the event a receiver watches to know its trigger arrived.
 *
 * One attempt per active webhook, claimed first (db/deliveries.ts `claimFirstAttempt`) and
 * logged like any other. The session workflow's delivery lane sends `received` again only if
 * this attempt did not deliver it (activities/delivery.ts), so `start` still follows `received`
 * at every receiver, and an API that dies mid-send loses nothing: its claim is taken over.
 */
import { randomUUID } from 'node:crypto';
import type { Config } from '../config';
import { emptyCounts } from '../core/counts';
import { buildPayload, epochSeconds } from '../core/payload';
import { claimFirstAttempt } from '../db/deliveries';
import { loadSessionContext } from '../db/sessionContext';
import { attemptOnce, type DeliverDeps } from './attempt';

/** A claim with no attempt logged after this long is taken over by the session's own lane. */
export const CLAIM_TAKEOVER_MS = 30_000;

/**
 * Sends `received` of a session to every active webhook of its organization, one attempt each,
 * concurrently. Never throws for a receiver's failure (the lane retries); a database error
 * rejects, and the lane still delivers.
 */
export async function announceReceived(deps: DeliverDeps & { config: Config }, sessionId: number): Promise<void> {
  const ctx = await loadSessionContext(deps.pool, deps.config, sessionId);
  const now = new Date();
  const snap = {
    status: 'queued' as const,
    counts: emptyCounts(),
    commitId: null,
    committers: [],
    timing: { ci_received_at: ctx.receivedAt, queue_first_seen_at: epochSeconds(now.getTime()) },
    stoppedBy: null,
  };
  await Promise.all(
    ctx.webhookIds.map(async (webhookId) => {
      if (!(await claimFirstAttempt(deps.pool, { sessionId, webhookId, event: 'received' }, CLAIM_TAKEOVER_MS))) return;
      const payload = buildPayload('received', ctx, snap, randomUUID(), now);
      await attemptOnce(deps, {
        webhookId,
        sessionId,
        payload,
        attempt: 1,
        maxAttempts: ctx.settings.webhookRetry.maximumAttempts,
        origin: 'event',
        retry: ctx.settings.webhookRetry,
      });
    }),
  );
}
