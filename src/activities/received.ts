/**
 * `received` of the sessions a suite has just recorded (issue 26), sent by the worker that
 * recorded them (the API sends it of those it recorded first: api/herald.ts), beside the suite
 * rather than as a step of it: the suite's local activity
 * records, starts these sends and returns, so neither a burst nor a slow receiver holds up the
 * queue. At most `CONCURRENCY` sends are under way; the rest wait their turn in order.
 *
 * Each send is a first attempt, claimed first (delivery/firstAttempt.ts): a session whose
 * receiver did not get it is woken in its suite (retryReceived), so that its own delivery lane
 * retries on schedule; if this worker dies mid-send, the claim is taken over by that lane at the
 * session's turn (late, not lost).
 */
import { Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import type { Config } from '../config';
import type { DeliverDeps } from '../delivery/attempt';
import { announceAll } from '../delivery/received';
import { RETRY_RECEIVED_SIGNAL } from '../core/signalNames';
import { inActiveContext } from '../tracing/spans';

const CONCURRENCY = 8;
/** Sessions sent to together: each batch reads its contexts and webhooks once. */
const BATCH = 25;

export function createReceivedSender(deps: DeliverDeps & { config: Config }) {
  const waiting: { sessionIds: number[]; client: Client; suiteWorkflowId: string; send: (ids: number[]) => Promise<number[]> }[] = [];
  let underWay = 0;

  const pump = (): void => {
    while (underWay < CONCURRENCY && waiting.length > 0) {
      const job = waiting.shift()!;
      underWay += 1;
      void job
        .send(job.sessionIds)
        .catch(() => job.sessionIds)
        .then(async (unsettled) => {
          for (const sessionId of unsettled) {
            await job.client.workflow
              .getHandle(job.suiteWorkflowId)
              .signal(RETRY_RECEIVED_SIGNAL, { sessionId })
              .catch(() => undefined); // the suite is gone or Temporal away: the session's turn sends it
          }
        })
        .finally(() => {
          underWay -= 1;
          pump();
        });
    }
  };

  /** Starts sending `received` of sessions the running (local) activity's suite recorded; returns at once. */
  return (sessionIds: readonly number[]): void => {
    if (sessionIds.length === 0) return;
    const ctx = Context.current();
    const suiteWorkflowId = ctx.info.workflowExecution?.workflowId;
    if (suiteWorkflowId === undefined) return; // not a workflow's: nobody to wake (the lanes send it)
    // In the trace of the activity that recorded them (the suite's).
    const send = inActiveContext((ids: number[]) => announceAll(deps, ids));
    for (let i = 0; i < sessionIds.length; i += BATCH) {
      waiting.push({ sessionIds: sessionIds.slice(i, i + BATCH), client: ctx.client, suiteWorkflowId, send });
    }
    pump();
  };
}
