/**
 * Activity proxies of the session workflow, with the timeouts and retry policies each kind of
 * work needs. Workflow code only.
 */
import { ActivityCancellationType, proxyActivities, type RetryPolicy } from '@temporalio/workflow';
import type { Activities, SessionContext } from '../activities/types';
import type { RetrySettings } from '../core/retry';

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

/** A Temporal retry policy from the worker's settings. */
export function retryPolicy(r: RetrySettings): RetryPolicy {
  return {
    initialInterval: r.initialIntervalMs,
    backoffCoefficient: r.backoffCoefficient,
    maximumInterval: r.maximumIntervalMs,
    maximumAttempts: r.maximumAttempts,
  };
}

/**
 * Push, chat and e-mail run one attempt per activity task; their retry policy (the worker's
 * settings, README "When a post-build step fails") runs the next. Each attempt reads its number
 * and the policy's maximumAttempts from its context, throws a retryable failure while another
 * attempt may mend things, and records the final outcome itself (activities/post/activities.ts).
 */

/** Push, on the worker that holds the checkout (it pushes from the checkout's objects). */
export function pushing(ctx: SessionContext, workerQueue: string) {
  return proxyActivities<Activities>({
    taskQueue: workerQueue,
    scheduleToStartTimeout: '5 minutes',
    startToCloseTimeout: ctx.settings.testTimeoutMs + 60_000,
    heartbeatTimeout: '30 seconds',
    summary: 'push to the CI server',
    retry: retryPolicy(ctx.settings.postRetry.push),
  });
}

/** Chat and e-mail, on the orchestration queue, each under its own policy. */
export function notifications(ctx: SessionContext): Pick<Activities, 'postChat' | 'sendEmail'> {
  const retry = ctx.settings.postRetry;
  const { postChat } = proxyActivities<Activities>({
    // One attempt: an HTTP request with a 10 s deadline.
    startToCloseTimeout: '1 minute',
    heartbeatTimeout: '1 minute',
    summary: 'chat',
    retry: retryPolicy(retry.chat),
  });
  const { sendEmail } = proxyActivities<Activities>({
    // One attempt: connection, greeting, STARTTLS, login and message, up to 30 s each.
    startToCloseTimeout: '5 minutes',
    heartbeatTimeout: '1 minute',
    summary: 'e-mail',
    retry: retryPolicy(retry.email),
  });
  return { postChat, sendEmail };
}
