/**
 * The `cleanUp` activity of the daily retention cleanup (workflows/cleanup.ts): deletes what
 * the worker's settings say is old (SLUICE_RETENTION_DAYS for ended sessions with their results,
 * outputs and triggers; SLUICE_DELIVERY_RETENTION_DAYS for delivery attempts; 0 keeps them), one
 * bounded batch after another, heartbeating between batches. Settings are the worker's, read
 * when it runs, so changing them needs no change to the schedule.
 */
import type { Pool } from 'pg';
import { DEFAULT_DELIVERY_RETENTION_DAYS, DEFAULT_RETENTION_DAYS, type Config } from '../config';
import { deleteOldCiEvents, deleteOldDeliveries, deleteOldSessions, RETENTION_BATCH } from '../db/retention';
import { activityLog } from './attempt';
import { currentContext } from './heartbeat';
import type { CleanupResult } from './types';

export function createCleanupActivity(deps: { pool: Pool; config: Config }): () => Promise<CleanupResult> {
  const sessionDays = deps.config.retentionDays ?? DEFAULT_RETENTION_DAYS;
  const deliveryDays = deps.config.deliveryRetentionDays ?? DEFAULT_DELIVERY_RETENTION_DAYS;
  return async () => {
    const result: CleanupResult = { sessionRetentionDays: sessionDays, deliveryRetentionDays: deliveryDays, sessions: 0, ciEvents: 0, deliveries: 0 };
    if (sessionDays > 0) {
      result.sessions = await inBatches((limit) => deleteOldSessions(deps.pool, sessionDays, limit));
      result.ciEvents = await inBatches((limit) => deleteOldCiEvents(deps.pool, sessionDays, limit));
    }
    if (deliveryDays > 0) result.deliveries = await inBatches((limit) => deleteOldDeliveries(deps.pool, deliveryDays, limit));
    activityLog().info('retention cleanup done', { ...result });
    return result;
  };
}

/** Runs `batch` until it deletes less than a full batch; the total. */
async function inBatches(batch: (limit: number) => Promise<number>): Promise<number> {
  let total = 0;
  for (;;) {
    const n = await batch(RETENTION_BATCH);
    total += n;
    const ctx = currentContext();
    ctx?.heartbeat(total);
    ctx?.cancellationSignal.throwIfAborted();
    if (n < RETENTION_BATCH) return total;
  }
}
