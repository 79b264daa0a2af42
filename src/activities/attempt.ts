/**
 * One retry model for the activities that talk to the outside world (webhook deliveries, push,
 * chat, e-mail): each activity run is one attempt; Temporal's retry policy, configured where
 * the workflow proxies the activity (workflows/proxies.ts, workflows/deliveryLanes.ts), runs
 * the next one. An attempt learns its number and the policy from its activity context, so it
 * can tell whether a failure is final (record it) or another attempt is due (throw a
 * retryable ApplicationFailure, recording nothing).
 */
import { ApplicationFailure, type Logger } from '@temporalio/common';
import { isLastAttempt, retryDelayMs, type RetrySettings } from '../core/retry';
import type { FailureType } from './failures';
import { currentContext } from './heartbeat';

export interface AttemptInfo {
  /** This attempt's number, from 1. */
  attempt: number;
  /** The retry policy's maximumAttempts; 0 means unlimited (Temporal's default policy). */
  maximumAttempts: number;
  /** The policy's schedule, to compute the next wait; Temporal's defaults fill what it leaves out. */
  retry: Omit<RetrySettings, 'maximumAttempts'>;
}

/**
 * The running attempt, from the activity context. Outside one (a plain function call) it is the
 * one and only attempt: 1 of 1.
 */
export function currentAttempt(): AttemptInfo {
  const ctx = currentContext();
  if (!ctx) return { attempt: 1, maximumAttempts: 1, retry: scheduleOf(undefined) };
  const policy = ctx.info.retryPolicy;
  return { attempt: ctx.info.attempt, maximumAttempts: policy?.maximumAttempts ?? 0, retry: scheduleOf(policy) };
}

function scheduleOf(policy: { initialInterval?: unknown; backoffCoefficient?: number; maximumInterval?: unknown } | undefined) {
  // The worker hands the policy over with durations in milliseconds.
  const ms = (d: unknown) => (typeof d === 'number' ? d : undefined);
  const initialIntervalMs = ms(policy?.initialInterval) ?? 1_000;
  return {
    initialIntervalMs,
    backoffCoefficient: policy?.backoffCoefficient ?? 2,
    maximumIntervalMs: ms(policy?.maximumInterval) ?? 100 * initialIntervalMs,
  };
}

export function isFinal(info: AttemptInfo): boolean {
  return isLastAttempt(info.attempt, info.maximumAttempts);
}

/** "(3 attempts)": how many attempts a final outcome took. */
export function attemptsText(attempt: number): string {
  return `(${attempt} ${attempt === 1 ? 'attempt' : 'attempts'})`;
}

/**
 * Ends a failed attempt that is not the last: a retryable ApplicationFailure of `type`. With
 * `atLeastMs` (a server's Retry-After), the next attempt waits that long at least; otherwise
 * the policy's backoff decides.
 */
export function retryLater(info: AttemptInfo, type: FailureType, message: string, atLeastMs?: number): ApplicationFailure {
  const backoff = retryDelayMs(info.attempt, info.retry);
  return ApplicationFailure.create({
    type,
    message,
    nonRetryable: false,
    nextRetryDelay: atLeastMs !== undefined && atLeastMs > backoff ? atLeastMs : undefined,
  });
}

const silent: Logger = { log: () => undefined, trace: () => undefined, debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

/**
 * The activity context's logger (it adds the activity's type, attempt and workflow to every
 * line); outside an activity, a logger that drops everything.
 */
export function activityLog(): Logger {
  return currentContext()?.log ?? silent;
}
