/**
 * Per-webhook delivery lanes of one session (workflow code). Each receiver gets its own lane:
 * events go out in lifecycle order, the next one only after the previous was delivered or given
 * up, and a slow or dead receiver holds up neither the build nor the other receivers.
 */
import { log, proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities/types';
import type { EventName, OutgoingPayload } from '../core/types';
import type { WebhookRetry } from '../config';
import { orderedLane } from './orderedLane';
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

  const lanes = webhookIds.map((webhookId) => ({
    webhookId,
    lane: orderedLane<OutgoingPayload>(
      (payload) => {
        const claimFirst = claimed.includes(payload.event) ? { claimFirst: true } : {};
        return deliverWebhook({ webhookId, sessionId, payload, maxAttempts: retry.maximumAttempts, ...claimFirst });
      },
      // Given up or dropped: every attempt and the reason are in the delivery log. The
      // receiver still gets the session's later events, so the lane goes on.
      (payload, err) => log.info('webhook event not delivered', { webhookId, sessionId, event: payload.event, xid: payload.xid, error: failureMessage(err) }),
    ),
  }));

  return {
    push(build) {
      for (const { webhookId, lane } of lanes) lane.push(build(webhookId));
    },
    async drain() {
      await Promise.all(lanes.map(({ lane }) => lane.drain()));
    },
  };
}
