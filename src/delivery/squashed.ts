/**
 * The sessions CI squash ended while they waited, in one go: a burst of triggers on a branch
 * squashes hundreds of sessions that never had a workflow (workflows/suite.ts), and giving each
 * one (a start, its tasks, two delivery activities) cost the Temporal server and the worker
 * tens of milliseconds per trigger. Here one statement records them all as `skipped`, and
 * each receiver gets their `received` (unless the API's attempt settled it) and `stop`, one
 * first attempt each. A session whose events did not all settle is handed back: its own
 * delivery lanes (workflows/squashed.ts) go on from the log with the same retries as any.
 */
import { randomUUID } from 'node:crypto';
import type { SessionContext } from '../core/session';
import type { Config } from '../config';
import { buildPayload } from '../core/payload';
import { squashedSnapshots, squashReason, type OpenLanes, type SquashedBatch } from '../core/squash';
import { loadSessionContexts } from '../db/sessionContext';
import { recordSquashed } from '../db/sessions';
import type { DeliverDeps } from './attempt';
import { firstAttempt } from './firstAttempt';


/** At most this many attempts at once: a batch must not open hundreds of connections. */
const CONCURRENCY = 8;

/**
 * Idempotent (the activity may be retried): sessions already ended are not touched again, and
 * an event already attempted is not sent twice (its claim says so; the log says how it went).
 */
export async function endSquashedSessions(given: DeliverDeps & { config: Config }, batch: SquashedBatch): Promise<OpenLanes[]> {
  // One read of each webhook for the whole batch.
  const deps = { ...given, webhooks: given.webhooks ?? new Map() };
  const reason = squashReason(batch.into);
  await recordSquashed(deps.pool, batch.sessionIds, reason);
  // Only those this squash ended: a session stopped meanwhile said its own `stop`.
  const ended = (await loadSessionContexts(deps.pool, deps.config, batch.sessionIds)).filter(
    (ctx) => ctx.status === 'skipped' && ctx.reason === reason,
  );
  const open: OpenLanes[] = [];
  await eachLimited(ended, CONCURRENCY, async (ctx) => {
    const webhookIds: number[] = [];
    for (const webhookId of ctx.webhookIds) {
      if ((await settle(deps, ctx, webhookId)) === 'open') webhookIds.push(webhookId);
    }
    if (webhookIds.length > 0) open.push({ sessionId: ctx.sessionId, webhookIds });
  });
  return open.sort((a, b) => a.sessionId - b.sessionId);
}

/** `received`, then (only once that settled: the order every receiver relies on) `stop`. */
async function settle(deps: DeliverDeps, ctx: SessionContext, webhookId: number): Promise<'settled' | 'open'> {
  const now = new Date();
  const retry = ctx.settings.webhookRetry;
  for (const snap of squashedSnapshots(ctx)) {
    const payload = buildPayload(snap.status === 'queued' ? 'received' : 'stop', ctx, snap, randomUUID(), now);
    const outcome = await firstAttempt(deps, { webhookId, sessionId: ctx.sessionId, payload, maxAttempts: retry.maximumAttempts, retry });
    if (outcome === 'open') return 'open';
  }
  return 'settled';
}

async function eachLimited<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await work(items[next++]!);
    }),
  );
}
