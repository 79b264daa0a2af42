/**
 * Activity proxies of the session workflow, with the timeouts and retry policies each kind of
 * work needs. Workflow code only.
 */
import { ActivityCancellationType, proxyActivities } from '@temporalio/workflow';
import type { Activities, SessionContext } from '../activities/types';

/** PostgreSQL recorders, on the orchestration queue. */
export const records = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  // Bounded: the API commits the session row just after it enqueues, so a first loadSession may
  // find nothing yet; a row that never appears (the commit failed) ends the workflow instead.
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds', maximumAttempts: 20 },
});

/** Checkout, on the session's build queue: any worker serving it may take it. */
export function remote(ctx: SessionContext) {
  return proxyActivities<Activities>({
    taskQueue: ctx.buildQueue,
    startToCloseTimeout: '30 minutes',
    heartbeatTimeout: '1 minute',
    summary: 'checkout',
    // checkout throws non-retryable for what retrying cannot mend (wrong key, unknown commit).
    retry: { maximumAttempts: 3, initialInterval: '2 seconds' },
  });
}

/** What reads the checkout must run on the worker that holds it, on that worker's own queue. */
export function local(ctx: SessionContext, workerQueue: string) {
  return proxyActivities<Activities>({
    taskQueue: workerQueue,
    scheduleToStartTimeout: '5 minutes',
    startToCloseTimeout: ctx.settings.testTimeoutMs + 60_000,
    heartbeatTimeout: '30 seconds',
    // On stop, wait until the test's process group is dead before the suite moves on.
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: { maximumAttempts: 1 },
  });
}

/**
 * Chat and e-mail: they retry transient failures themselves and record every outcome, so
 * Temporal only retries a lost worker.
 */
export const notifications = proxyActivities<Activities>({
  startToCloseTimeout: '5 minutes',
  heartbeatTimeout: '1 minute',
  retry: { maximumAttempts: 2 },
});
