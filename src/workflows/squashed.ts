/**
 * squashedWorkflow: a batch of queued sessions CI squash passed over, none of which ever had a
 * workflow (suite.ts). One activity records them all and makes each receiver's first attempts
 * (delivery/squashed.ts); a session whose `received` or `stop` a receiver still needs gets its
 * delivery lanes here, which go on from the log with the usual retries.
 */
import { proxyActivities, uuid4 } from '@temporalio/workflow';
import type { Activities } from '../activities/types';
import { buildPayload } from '../core/payload';
import { squashedSnapshots } from '../core/squash';
import { openDeliveryLanes } from './deliveryLanes';
import { records } from './proxies';
import type { SquashedWorkflowInput } from './signals';

const { endSquashed } = proxyActivities<Activities>({
  // Two first attempts per session and receiver, a few at a time, each bounded by its timeout.
  startToCloseTimeout: '10 minutes',
  summary: 'end squashed sessions',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
});

export async function squashedWorkflow(input: SquashedWorkflowInput): Promise<void> {
  const open = await endSquashed({ sessionIds: input.sessionIds, into: input.into });
  await Promise.all(
    open.map(async ({ sessionId, webhookIds }) => {
      const ctx = await records.loadSession(sessionId);
      const [received, stop] = squashedSnapshots(ctx);
      const lanes = openDeliveryLanes(webhookIds, sessionId, ctx.settings.webhookRetry, ['received', 'stop']);
      lanes.push(() => buildPayload('received', ctx, received, uuid4(), new Date()));
      lanes.push(() => buildPayload('stop', ctx, stop, uuid4(), new Date()));
      await lanes.drain();
    }),
  );
}
