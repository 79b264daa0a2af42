/**
 * The `deliverWebhook` activity: one attempt (delivery/attempt.ts) run under Temporal's retry
 * policy. Temporal decides when the next attempt runs; this wrapper only tells it whether there
 * should be one (and, from Retry-After or the jittered backoff, when).
 */
import { ApplicationFailure } from '@temporalio/common';
import type { RetrySchedule } from '../delivery/backoff';
import { attemptOnce, type DeliverDeps } from '../delivery/attempt';
import { CLAIM_TAKEOVER_MS } from '../delivery/firstAttempt';
import { claimFirstAttempt, eventAttempts } from '../db/deliveries';
import type { EventPayload } from '../delivery/compose';
import type { AttemptResult } from '../delivery/send';
import { currentAttempt } from './attempt';
import { DELIVERY_FAILURE_TYPES } from './failures';
import type { DeliverInput, DeliverResult } from './types';

/** `ApplicationFailure.type` of what this activity throws: its rows of the one table. */
export const FAILURE_TYPES = DELIVERY_FAILURE_TYPES;

export function createDeliverActivity(deps: DeliverDeps): (input: DeliverInput) => Promise<DeliverResult> {
  return async (input) => {
    // The attempt's number and the policy it runs under, as the worker hands them over.
    const { attempt, retry } = currentAttempt();
    if (!input.claimFirst || input.sessionId === null) return deliverAttempt(deps, input, attempt, retry);
    const before = await afterFirstAttempt(deps, { ...input, sessionId: input.sessionId });
    if ('done' in before) return before.done;
    return deliverAttempt(deps, { ...input, payload: before.payload }, before.attempt, retry);
  };
}

/** How often a lane looks for the API's first attempt of `received` in the log while it is being sent. */
const CLAIM_POLL_MS = 100;

/**
 * An event whose first attempt someone else may make (`received`: the API sends it at once,
 * delivery/received.ts): claim it, or go on from what the log says of it. Delivered there:
 * done. Given up there: given up. Otherwise this is the log's next attempt, of the same payload
 * (its xid), when the last one said it is due. An attempt still being sent elsewhere is waited
 * for; one never logged is taken over after CLAIM_TAKEOVER_MS.
 */
async function afterFirstAttempt(
  deps: DeliverDeps,
  input: DeliverInput & { sessionId: number },
): Promise<{ done: DeliverResult } | { attempt: number; payload: DeliverInput['payload'] }> {
  const key = { sessionId: input.sessionId, webhookId: input.webhookId, event: input.payload.event };
  for (;;) {
    if (await claimFirstAttempt(deps.pool, key, CLAIM_TAKEOVER_MS)) return { attempt: 1, payload: input.payload };
    const { attempts, last } = await eventAttempts(deps.pool, key);
    if (last === null) {
      await new Promise((r) => setTimeout(r, CLAIM_POLL_MS));
      continue;
    }
    const what = `webhook ${input.webhookId} ${input.payload.event}`;
    if (last.outcome === 'delivered') return { done: { outcome: 'delivered', statusCode: last.statusCode } };
    if (last.outcome !== 'retrying') throw ApplicationFailure.nonRetryable(`${what}: attempt ${attempts} ${last.outcome === 'dropped' ? 'dropped it' : 'gave up'}`, FAILURE_TYPES.gaveUp);
    const dueInMs = last.nextAttemptAt ? last.nextAttemptAt.getTime() - Date.now() : 0;
    if (dueInMs > 50) {
      throw ApplicationFailure.create({ message: `${what}: attempt ${attempts + 1} is due in ${dueInMs} ms`, type: FAILURE_TYPES.retrying, nonRetryable: false, nextRetryDelay: dueInMs });
    }
    return { attempt: attempts + 1, payload: (last.payload as DeliverInput['payload'] | null) ?? input.payload };
  }
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
