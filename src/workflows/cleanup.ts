/**
 * cleanupWorkflow: the daily retention cleanup, started by the Temporal Schedule every worker
 * makes sure of at start (temporal/cleanupSchedule.ts). One activity does the deleting, in
 * bounded batches, under the worker's settings (activities/cleanup.ts); its result (what was
 * deleted) is the workflow's, shown in the Temporal UI.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { Activities, CleanupResult } from '../activities/types';

const { cleanUp } = proxyActivities<Activities>({
  // Batches of a few hundred rows each, heartbeating between them: a first run over years of
  // history may take long, a dead worker is noticed in minutes.
  startToCloseTimeout: '6 hours',
  heartbeatTimeout: '5 minutes',
  summary: 'retention cleanup',
  retry: { initialInterval: '30 seconds', maximumInterval: '10 minutes', maximumAttempts: 5 },
});

export async function cleanupWorkflow(): Promise<CleanupResult> {
  return cleanUp();
}
