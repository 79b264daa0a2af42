/**
 * Retry schedules of the activities that talk to the outside world, as plain numbers: the
 * worker's configuration carries them to the session workflow (SessionContext.settings), which
 * turns them into Temporal retry policies (workflows/proxies.ts). Pure, no imports: workflow
 * code may use it.
 */

/** The numbers of a Temporal retry policy, durations in milliseconds. */
export interface RetrySettings {
  /** Wait before the second attempt. */
  initialIntervalMs: number;
  /** Each wait is the previous one times this. */
  backoffCoefficient: number;
  /** No wait is longer. */
  maximumIntervalMs: number;
  /** Attempts in all, the first included; 0 means unlimited (as in Temporal). */
  maximumAttempts: number;
}

/** The retry policies of the steps after the tests (spec §1 steps 4-6). */
export interface PostRetry {
  push: RetrySettings;
  chat: RetrySettings;
  email: RetrySettings;
}

/**
 * docs/builds.md, "When a post-build step fails": 3 attempts, 2 s and 5 s apart (10 s for e-mail). A
 * chat service's Retry-After may stretch a wait up to 30 s (see activities/post/chat.ts).
 */
export const DEFAULT_POST_RETRY: PostRetry = {
  push: { initialIntervalMs: 2_000, backoffCoefficient: 2.5, maximumIntervalMs: 5_000, maximumAttempts: 3 },
  chat: { initialIntervalMs: 2_000, backoffCoefficient: 2.5, maximumIntervalMs: 5_000, maximumAttempts: 3 },
  email: { initialIntervalMs: 2_000, backoffCoefficient: 5, maximumIntervalMs: 10_000, maximumAttempts: 3 },
};

/**
 * The wait after failed attempt `attempt` (from 1) under `retry`: the initial interval times
 * the coefficient to the power attempt - 1, capped at the maximum interval, as Temporal
 * computes it.
 */
export function retryDelayMs(attempt: number, retry: Pick<RetrySettings, 'initialIntervalMs' | 'backoffCoefficient' | 'maximumIntervalMs'>): number {
  const delay = retry.initialIntervalMs * Math.pow(retry.backoffCoefficient, Math.max(0, attempt - 1));
  return Math.round(Math.min(retry.maximumIntervalMs, delay));
}

/** Whether attempt `attempt` is the last `maximumAttempts` allows (0: unlimited, never). */
export function isLastAttempt(attempt: number, maximumAttempts: number): boolean {
  return maximumAttempts > 0 && attempt >= maximumAttempts;
}
