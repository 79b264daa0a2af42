/**
 * Per-webhook delivery lanes of one session (workflow code). Each receiver gets its own lane:
 * events go out in lifecycle order, the next one only after the previous was delivered or given
 * up, and a slow or dead receiver holds up neither the build nor the other receivers.
 */
import { condition, log, proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities/types';
import type { EventName, OutgoingPayload } from '../core/types';
import type { WebhookRetry } from '../config';
import { retryPolicy } from './proxies';
import { failureMessage } from './status';

export interface DeliveryLanes {
  push(build: (webhookId: number) => OutgoingPayload): void;
  /** Resolves once every lane has delivered or given up on everything pushed so far. */
  drain(): Promise<void>;
}

/**
 * `claimed`: events whose first attempt someone else may have made (the API sends `received`;
 * CI squash's batch sends a squashed session's both): the lane goes on from the log for those.
 */
export function openDeliveryLanes(
  webhookIds: number[],
  sessionId: number,
  retry: WebhookRetry,
  claimed: readonly EventName[] = ['received'],
): DeliveryLanes {
  const { deliverWebhook } = proxyActivities<Activities>({
    startToCloseTimeout: '1 minute',
    summary: 'deliver webhook',
    retry: retryPolicy(retry),
  });

  const lanes = webhookIds.map((webhookId) => {
    const pending: OutgoingPayload[] = [];
    let closed = false;
    const done = (async () => {
      for (;;) {
        await condition(() => pending.length > 0 || closed);
        const payload = pending.shift();
        if (!payload) return;
        try {
          const claimFirst = claimed.includes(payload.event) ? { claimFirst: true } : {};
          await deliverWebhook({ webhookId, sessionId, payload, maxAttempts: retry.maximumAttempts, ...claimFirst });
        } catch (err) {
          // Given up or dropped: every attempt and the reason are in the delivery log. The
          // receiver still gets the session's later events, so the lane goes on.
          log.info('webhook event not delivered', { webhookId, sessionId, event: payload.event, xid: payload.xid, error: failureMessage(err) });
        }
      }
    })();
    return { webhookId, pending, done, close: () => (closed = true) };
  });

  return {
    push(build) {
      for (const lane of lanes) lane.pending.push(build(lane.webhookId));
    },
    async drain() {
      for (const lane of lanes) lane.close();
      await Promise.all(lanes.map((l) => l.done));
    },
  };
}
