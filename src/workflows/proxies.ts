/**
 * Activity proxies of the session workflow (and the suite's intake), with the timeouts and retry policies each kind of
 * work needs. Workflow code only.
 */
import { ActivityCancellationType, proxyActivities, proxyLocalActivities, type ActivityOptions, type RetryPolicy } from '@temporalio/workflow';
import type { Activities } from '../activities/types';
import type { SessionContext } from '../core/session';
import type { RetrySettings } from '../core/retry';

/**
 * PostgreSQL recorders: local activities, run by the worker that runs the workflow task, so a
 * read or write of a few milliseconds costs no round trip through the Temporal server (each
 * was one of the six hops between a build's last test and its `stop`).
 */
export const records = proxyLocalActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  // Bounded: a record that cannot be read for minutes (PostgreSQL away that long) ends the
  // workflow instead.
  retry: { initialInterval: '50 milliseconds', backoffCoefficient: 2, maximumInterval: '10 seconds', maximumAttempts: 20 },
});

/** The records of accepted triggers (suite.ts, intake.ts): tried until PostgreSQL answers, however long it is away. */
export const intakeRecords = proxyLocalActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '200 milliseconds', maximumInterval: '10 seconds' },
});

/**
 * Runners' work, on the session's build queue: any runner serving it may take any of it, since
 * each activity names the commit it needs and makes its own tree (steps/checkout/tree.ts).
 * Heartbeats every second or two and a 10 s heartbeat timeout notice a dead runner within
 * seconds; the retry then runs on a live one.
 */
function onRunner(ctx: SessionContext, options: Omit<ActivityOptions, 'taskQueue' | 'heartbeatTimeout'>) {
  return proxyActivities<Activities>({ heartbeatTimeout: '10 seconds', taskQueue: ctx.buildQueue, ...options });
}

/** The first checkout (with sluice.yml) and the list of test files. */
export function runner(ctx: SessionContext) {
  return onRunner(ctx, {
    startToCloseTimeout: '30 minutes',
    summary: 'checkout',
    // checkout throws non-retryable for what retrying cannot mend (wrong key, unknown commit).
    retry: { maximumAttempts: 5, initialInterval: '2 seconds' },
  });
}

/**
 * The build's image, resolved on a runner (a registry round trip). A registry that refuses or
 * lacks the image fails it for good at once (resolveImage says so); one that does not answer
 * is tried a few times, and then the build ends saying which registry.
 */
export function imageResolver(ctx: SessionContext) {
  return onRunner(ctx, {
    startToCloseTimeout: '5 minutes',
    summary: 'resolve the image',
    retry: { maximumAttempts: 3, initialInterval: '1 second' },
  });
}

/**
 * Lanes run until the session's list is done, however long that is: the heartbeat, not a
 * deadline, tells a dead runner from a slow build. A lane whose runner died is retried; its
 * files went back to the list meanwhile. On stop, the workflow waits until the lane has killed
 * its tests' process groups before the suite moves on.
 */
export function lanes(ctx: SessionContext) {
  return onRunner(ctx, {
    startToCloseTimeout: '7 days',
    summary: 'test lane',
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: { initialInterval: '1 second', maximumInterval: '10 seconds', maximumAttempts: 20 },
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
 * settings, docs/builds.md, "When a post-build step fails") runs the next. Each attempt reads its number
 * and the policy's maximumAttempts from its context, throws a retryable failure while another
 * attempt may mend things, and records the final outcome itself (activities/post/activities.ts).
 */

/** Push, on a runner (it pushes from the session's checkout, or fetches the commit again). */
export function pushing(ctx: SessionContext) {
  return onRunner(ctx, {
    startToCloseTimeout: '30 minutes',
    summary: 'push to the CI server',
    retry: retryPolicy(ctx.settings.postRetry.push),
  });
}

/**
 * The post_build hook, on a runner (in the session's checkout, or the commit fetched again). One
 * run: a hook that fails is recorded and returned, not retried; another attempt only follows a
 * runner lost under it. Its own time limit (SLUICE_HOOK_TIMEOUT_MS) bounds it, not this one.
 */
export function postBuildHooks(ctx: SessionContext) {
  return onRunner(ctx, {
    startToCloseTimeout: '1 day',
    summary: 'post_build hook',
    retry: { maximumAttempts: 3, initialInterval: '2 seconds' },
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
