/**
 * When an attempt that failed is tried again, and when Sluice gives up: Temporal's retry policy
 * runs the attempts, and these numbers (the same formula) are what the delivery log shows.
 */
import { isLastAttempt, retryDelayMs } from '../core/retry';
import type { AttemptResult } from './send';

export type DeliveryOutcome = 'delivered' | 'retrying' | 'gave_up' | 'dropped';

/** The numbers of a Temporal retry policy that fix when the next attempt is due. */
export interface RetrySchedule {
  initialIntervalMs?: number;
  backoffCoefficient?: number;
  maximumIntervalMs?: number;
}

/** maxAttempts of 0 (or less) means unlimited, as in Temporal's retry policy. */
export function outcomeOf(result: AttemptResult, attempt: number, maxAttempts: number): DeliveryOutcome {
  if (result.kind === 'delivered') return 'delivered';
  if (result.kind === 'fatal') return 'dropped';
  return isLastAttempt(attempt, maxAttempts) ? 'gave_up' : 'retrying';
}

/**
 * The wait before the next attempt: the receiver's Retry-After when it gave one (capped at
 * `maxRetryAfterMs`), else the policy's backoff with jitter, so the receivers of a burst of
 * failed events are not all retried in the same instant.
 */
export function nextDelay(result: AttemptResult, attempt: number, retry: RetrySchedule, maxRetryAfterMs: number): number {
  if (result.retryAfterMs !== undefined && result.retryAfterMs > 0) return Math.min(result.retryAfterMs, maxRetryAfterMs);
  return jittered(backoffDelay(attempt, retry));
}

/**
 * `delayMs` spread evenly over ±25%: Temporal's retry policy has no jitter of its own, so the
 * activity sets each next delay itself.
 */
export function jittered(delayMs: number, random: () => number = Math.random): number {
  return Math.round(delayMs * (0.75 + 0.5 * random()));
}

/**
 * The wait after failed attempt `attempt` under a Temporal retry policy: the initial interval
 * times the coefficient to the power attempt - 1, capped at the maximum interval. Temporal's
 * defaults fill what the policy leaves out (1 s, 2, 100 × the initial interval).
 */
export function backoffDelay(attempt: number, retry: RetrySchedule): number {
  const initialIntervalMs = retry.initialIntervalMs ?? 1_000;
  return retryDelayMs(attempt, {
    initialIntervalMs,
    backoffCoefficient: retry.backoffCoefficient ?? 2,
    maximumIntervalMs: retry.maximumIntervalMs ?? 100 * initialIntervalMs,
  });
}
