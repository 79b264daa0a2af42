/**
 * The `deliverWebhook` activity: one attempt (delivery/attempt.ts) run under Temporal's retry
 * policy. Temporal decides when the next attempt runs; this wrapper only tells it whether there
 * should be one (and, from Retry-After or the jittered backoff, when).
 */
import { ApplicationFailure } from '@temporalio/common';
import type { RetrySchedule } from '../delivery/backoff';
import { attemptOnce, type DeliverDeps } from '../delivery/attempt';
import type { EventPayload } from '../delivery/compose';
import type { AttemptResult } from '../delivery/send';
import { currentAttempt } from './attempt';
import { DELIVERY_FAILURE_TYPES } from './failures';
import type { DeliverInput, DeliverResult } from './types';

/** `ApplicationFailure.type` of what this activity throws: its rows of the one table. */
export const FAILURE_TYPES = DELIVERY_FAILURE_TYPES;

export function createDeliverActivity(deps: DeliverDeps): (input: DeliverInput) => Promise<DeliverResult> {
  return (input) => {
    // The attempt's number and the policy it runs under, as the worker hands them over.
    const { attempt, retry } = currentAttempt();
    return deliverAttempt(deps, input, attempt, retry);
  };
}

/**
 * One attempt, numbered from 1 as Temporal numbers them. Records the attempt, then returns
 * (delivered), or throws an ApplicationFailure: retryable while attempts remain, non-retryable
 * once the receiver refused for good, or the last attempt failed. `retry` is the policy the
 * attempt runs under, to log when the next attempt is due; Temporal's defaults without it.
 */
export async function deliverAttempt(deps: DeliverDeps, input: DeliverInput, attempt: number, retry?: RetrySchedule): Promise<DeliverResult> {
  const done = await attemptOnce(deps, {
    webhookId: input.webhookId,
    sessionId: input.sessionId,
    payload: input.payload,
    attempt,
    maxAttempts: input.maxAttempts,
    origin: 'event',
    retry,
  });
  // Deleted or switched off since the event was queued: nobody to tell, nothing to log.
  if (!done) return { outcome: 'dropped', statusCode: null };

  const { outcome, result } = done;
  const message = describe(input.webhookId, input.payload, attempt, result);
  switch (outcome) {
    case 'delivered':
      return { outcome: 'delivered', statusCode: result.statusCode };
    case 'retrying':
      throw ApplicationFailure.create({
        message,
        type: FAILURE_TYPES.retrying,
        nonRetryable: false,
        nextRetryDelay: done.nextDelayMs,
      });
    case 'gave_up':
      // Non-retryable, not merely retryable: the log says "gave up", so Temporal must stop
      // here too, even if its policy would allow more attempts than the workflow told us.
      throw ApplicationFailure.nonRetryable(message, FAILURE_TYPES.gaveUp);
    case 'dropped':
      throw ApplicationFailure.nonRetryable(message, FAILURE_TYPES.dropped);
  }
}

function describe(webhookId: number, payload: EventPayload, attempt: number, result: AttemptResult): string {
  return `webhook ${webhookId} ${payload.event} (xid ${payload.xid}) attempt ${attempt}: ${result.error ?? 'failed'}`;
}
