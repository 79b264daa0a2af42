/**
 * `received`, sent the moment a trigger's session is recorded and queued, by its suite beside
 * the queue (workflows/suite.ts): a queued session's workflow starts only at its turn, and
 * `received` is the event a receiver watches to know its trigger arrived.
 *
 * One attempt per active webhook, claimed first and logged like any other (firstAttempt.ts).
 * The session workflow's delivery lane sends `received` again only if this attempt did not
 * deliver it, so `start` still follows `received` at every receiver, and a worker that dies
 * mid-send loses nothing: its claim is taken over.
 */
import { randomUUID } from 'node:crypto';
import type { Config } from '../config';
import { buildPayload, epochSeconds, queuedSnapshot } from '../core/payload';
import { loadSessionContext, loadSessionContexts } from '../db/sessionContext';
import type { SessionContext } from '../core/session';
import type { DeliverDeps } from './attempt';
import { firstAttempt } from './firstAttempt';

export interface Announced {
  suiteId: number;
  /** False when a receiver must still get it: its lane should run now, not at the session's turn. */
  settled: boolean;
}

/**
 * Sends `received` of a session to every active webhook of its organization, one attempt each,
 * concurrently. Never throws for a receiver's failure (the lane retries); a database error
 * rejects, and the lane still delivers.
 */
export async function announceReceived(deps: DeliverDeps & { config: Config }, sessionId: number): Promise<Announced> {
  return announceTo(deps, await loadSessionContext(deps.pool, deps.config, sessionId));
}

async function announceTo(deps: DeliverDeps, ctx: SessionContext): Promise<Announced> {
  const now = new Date();
  const snap = queuedSnapshot({ ci_received_at: ctx.receivedAt, queue_first_seen_at: epochSeconds(now.getTime()) });
  const outcomes = await Promise.all(
    ctx.webhookIds.map((webhookId) =>
      firstAttempt(deps, {
        webhookId,
        sessionId: ctx.sessionId,
        payload: buildPayload('received', ctx, snap, randomUUID(), now),
        maxAttempts: ctx.settings.webhookRetry.maximumAttempts,
        retry: ctx.settings.webhookRetry,
      }),
    ),
  );
  return { suiteId: ctx.suiteId, settled: outcomes.every((o) => o === 'settled') };
}

/** Sessions at once at most: a burst's `received` go out a few at a time. */
const ANNOUNCE_CONCURRENCY = 8;

/**
 * `received` of each session (announceReceived), a few at a time; the sessions whose `received`
 * a receiver still needs (or whose context could not be read), for their lanes to send.
 */
export async function announceAll(given: DeliverDeps & { config: Config }, sessionIds: readonly number[]): Promise<number[]> {
  // One read of each webhook for the whole batch (they are mostly one organization's).
  const deps = { ...given, webhooks: given.webhooks ?? new Map() };
  // Their contexts in one read; a session that cannot be read is left to its lane.
  const contexts = await loadSessionContexts(deps.pool, deps.config, sessionIds).catch(() => []);
  const byId = new Map(contexts.map((c) => [c.sessionId, c]));
  const unsettled: number[] = sessionIds.filter((id) => !byId.has(id));
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < contexts.length; i = next++) {
      const ctx = contexts[i]!;
      const done = await announceTo(deps, ctx).then(
        (a) => a.settled,
        () => false,
      );
      if (!done) unsettled.push(ctx.sessionId);
    }
  };
  await Promise.all(Array.from({ length: Math.min(ANNOUNCE_CONCURRENCY, contexts.length) }, worker));
  return unsettled;
}
