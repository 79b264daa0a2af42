/**
 * One-line counters for the places where things happen (a delivery attempt logged, a file's
 * verdict recorded, a cache restored, a lane taken), so each of those places says what it
 * counts and no more. Each keeps its labels bounded.
 */
import {
  cacheBytes,
  cacheRestores,
  cacheSaves,
  checkouts,
  flakyTestFiles,
  notifications,
  testBatches,
  testFiles,
  webhookDeliveries,
  webhookDeliveryDuration,
  workerCount,
} from './registry';

/** An attempt number as a label: 1, 2, 3, 4-9 or 10+ (a retry policy may allow hundreds). */
export function attemptLabel(attempt: number): string {
  if (attempt <= 3) return String(Math.max(1, Math.floor(attempt)));
  return attempt < 10 ? '4-9' : '10+';
}

export function countDelivery(a: { event: string; outcome: string; attempt: number; origin: string; durationMs: number }): void {
  webhookDeliveries.inc({ event: a.event, outcome: a.outcome, attempt: attemptLabel(a.attempt), origin: a.origin });
  webhookDeliveryDuration.observe({ outcome: a.outcome }, a.durationMs / 1000);
}

export type NotificationChannel = 'commit_status' | 'push' | 'chat' | 'email';

export function countNotification(channel: NotificationChannel, outcome: string): void {
  notifications.inc({ channel, outcome });
}

export function countTestFiles(verdicts: Iterable<{ status: string; flaky?: boolean }>): void {
  for (const v of verdicts) {
    testFiles.inc({ result: v.status });
    if (v.flaky) flakyTestFiles.inc();
  }
}

export function countBatch(result: string): void {
  testBatches.inc({ result });
}

export function countCacheRestore(r: { hit: 'exact' | 'fallback' | 'miss'; bytes: number }): void {
  cacheRestores.inc({ result: r.hit });
  if (r.bytes > 0) cacheBytes.inc({ direction: 'restored' }, r.bytes);
}

export function countCheckout(tree: 'kept' | 'new'): void {
  checkouts.inc({ tree });
}

export function countCacheSave(r: { saved: boolean; bytes: number }): void {
  cacheSaves.inc({ saved: String(r.saved) });
  if (r.saved && r.bytes > 0) cacheBytes.inc({ direction: 'saved' }, r.bytes);
}

/**
 * A runner's lanes: `slots` of them join the available ones until `close()`; `busy(fn)` holds
 * one busy while fn runs. Several runners in one process (tests) add up, as they do over
 * processes in Prometheus.
 */
export function runnerLanes(slots: number): { busy<T>(fn: () => Promise<T>): Promise<T>; close(): void } {
  let inUse = 0;
  let closed = false;
  // This runner's share of the available gauge: slots not in use (never below 0: a runner
  // serving several queues may run more than `slots` at once).
  let available = 0;
  const update = () => {
    const now = closed ? 0 : Math.max(0, slots - inUse);
    workerCount.inc({ cicd_worker_state: 'available' }, now - available);
    available = now;
  };
  workerCount.inc({ cicd_worker_state: 'busy' }, 0);
  update();
  return {
    async busy(fn) {
      inUse++;
      workerCount.inc({ cicd_worker_state: 'busy' });
      update();
      try {
        return await fn();
      } finally {
        inUse--;
        workerCount.dec({ cicd_worker_state: 'busy' });
        update();
      }
    },
    close() {
      closed = true;
      update();
    },
  };
}

/** Every function of `activities`, each holding a lane busy while it runs. */
export function withLanes<T extends object>(activities: T, lanes: { busy<R>(fn: () => Promise<R>): Promise<R> }): T {
  const out: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(activities)) {
    out[name] = typeof fn === 'function' ? (...args: unknown[]) => lanes.busy(() => Promise.resolve((fn as (...a: unknown[]) => unknown)(...args))) : fn;
  }
  return out as T;
}
