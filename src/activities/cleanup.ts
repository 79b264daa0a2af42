/**
 * The `cleanUp` activity of the daily retention cleanup (workflows/cleanup.ts): deletes what
 * the worker's settings say is old (SLUICE_RETENTION_DAYS for ended sessions with their results,
 * outputs and triggers; SLUICE_DELIVERY_RETENTION_DAYS for delivery attempts; 0 keeps them) and
 * signed-in browsers' sessions past their end, one
 * bounded batch after another, heartbeating between batches. Settings are the worker's, read
 * when it runs, so changing them needs no change to the schedule.
 */
import type { Pool } from 'pg';
import { DEFAULT_CACHE_DIR, DEFAULT_DELIVERY_RETENTION_DAYS, DEFAULT_RETENTION_DAYS, type Config } from '../config';
import { drainArtifactDeletions } from '../db/artifacts';
import { drainCacheDeletions } from '../db/cacheEntries';
import { deleteOldCiEvents, deleteOldDeliveries, deleteOldSessions, RETENTION_BATCH, SESSION_RETENTION_BATCH } from '../db/retention';
import { deleteExpiredWebSessions } from '../db/webSessions';
import { openStore } from '../store';
import { activityLog } from './attempt';
import { currentContext } from './heartbeat';
import type { CleanupResult } from './types';

/** What the cleanup did: CleanupResult, and the artifacts' and caches' blobs it deleted. */
export interface CleanupOutcome extends CleanupResult {
  /** Deleted sessions whose artifacts' blobs are now gone from the store, and how many blobs. */
  artifactSessions: number;
  artifactBlobs: number;
  /** Why the store stopped the deleting, if it did (the rest waits for the next run). */
  artifactError?: string;
  /** Deleted repositories whose cache entries' blobs are now gone from the store. */
  cacheRepos: number;
  cacheError?: string;
}

export function createCleanupActivity(deps: { pool: Pool; config: Config }): () => Promise<CleanupOutcome> {
  const sessionDays = deps.config.retentionDays ?? DEFAULT_RETENTION_DAYS;
  const deliveryDays = deps.config.deliveryRetentionDays ?? DEFAULT_DELIVERY_RETENTION_DAYS;
  const store = openStore(deps.config.store ?? { kind: 'dir', dir: DEFAULT_CACHE_DIR });
  return async () => {
    const result: CleanupOutcome = {
      sessionRetentionDays: sessionDays,
      deliveryRetentionDays: deliveryDays,
      sessions: 0,
      ciEvents: 0,
      deliveries: 0,
      artifactSessions: 0,
      artifactBlobs: 0,
      cacheRepos: 0,
      webSessions: 0,
    };
    // Delivery attempts first: a session deleted after them has none of its old ones left to
    // unlink (ON DELETE SET NULL rewrote 1,500 log rows a batch, most of its time, issue 39).
    if (deliveryDays > 0) result.deliveries = await inBatches(RETENTION_BATCH, (limit) => deleteOldDeliveries(deps.pool, deliveryDays, limit));
    if (sessionDays > 0) {
      result.sessions = await inBatches(SESSION_RETENTION_BATCH, (limit) => deleteOldSessions(deps.pool, sessionDays, limit));
      result.ciEvents = await inBatches(RETENTION_BATCH, (limit) => deleteOldCiEvents(deps.pool, sessionDays, limit));
    }
    // Whatever the retention settings: sessions deleted through the API queue their blobs too.
    const drained = await drainArtifactDeletions(deps.pool, async (prefix) => {
      const n = await store.deletePrefix(prefix);
      currentContext()?.heartbeat();
      return n;
    });
    result.artifactSessions = drained.sessions;
    result.artifactBlobs = drained.blobs;
    if (drained.error !== null) {
      result.artifactError = drained.error;
      activityLog().warn(`artifacts of deleted sessions not all deleted from the store (${store.description}); the rest waits for the next cleanup`, { error: drained.error });
    }
    // Browsers' sessions past their end (they are refused anyway; this keeps the table small).
    result.webSessions = await deleteExpiredWebSessions(deps.pool);
    // Deleted repositories' cache entries, whose rows went with them.
    const caches = await drainCacheDeletions(deps.pool, (prefix) => store.deletePrefix(prefix));
    result.cacheRepos = caches.repos;
    if (caches.error !== null) {
      result.cacheError = caches.error;
      activityLog().warn(`caches of deleted repositories not all deleted from the store (${store.description}); the rest waits for the next cleanup`, { error: caches.error });
    }
    activityLog().info('retention cleanup done', { ...result });
    return result;
  };
}

/** Runs `batch` until it deletes less than a full batch; the total. */
async function inBatches(size: number, batch: (limit: number) => Promise<number>): Promise<number> {
  let total = 0;
  for (;;) {
    const n = await batch(size);
    total += n;
    const ctx = currentContext();
    ctx?.heartbeat(total);
    ctx?.cancellationSignal.throwIfAborted();
    if (n < size) return total;
  }
}
