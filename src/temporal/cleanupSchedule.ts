/**
 * The Temporal Schedule of the daily retention cleanup (workflows/cleanup.ts): every day at
 * 03:17 UTC a cleanupWorkflow on the workers' task queue; a run still going when the next is
 * due makes that one skip (overlap SKIP), and one missed while Temporal was down runs when it
 * is back, within a day. Every worker makes sure of it when it starts: created when missing,
 * brought in line when it names another task queue, time or workflow, else left alone (so an
 * operator's pause holds). Its id is the task queue's: one per Sluice.
 */
import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, type Client, type ScheduleDescription, type ScheduleOptions } from '@temporalio/client';
import type { Config } from '../config';

/** When it runs, UTC: early morning in Europe, evening in the Americas, away from the full hour. */
export const CLEANUP_AT = { hour: 3, minute: 17 } as const;
export const CLEANUP_WORKFLOW = 'cleanupWorkflow';

export const cleanupScheduleId = (taskQueue: string): string => `${taskQueue}-cleanup`;

export function cleanupScheduleOptions(config: Pick<Config, 'taskQueue'>): ScheduleOptions {
  const scheduleId = cleanupScheduleId(config.taskQueue);
  return {
    scheduleId,
    spec: { calendars: [{ ...CLEANUP_AT, comment: 'Sluice retention cleanup, daily' }] },
    action: {
      type: 'startWorkflow',
      workflowType: CLEANUP_WORKFLOW,
      taskQueue: config.taskQueue,
      // Temporal adds the run's time to it.
      workflowId: scheduleId,
      args: [],
      workflowRunTimeout: '12 hours',
      staticSummary: 'retention cleanup (SLUICE_RETENTION_DAYS, SLUICE_DELIVERY_RETENTION_DAYS)',
    },
    policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1 day' },
  };
}

/** Makes sure the schedule exists as cleanupScheduleOptions says: `created`, `updated` or `unchanged`. */
export async function ensureCleanupSchedule(client: Client, config: Pick<Config, 'taskQueue'>): Promise<'created' | 'updated' | 'unchanged'> {
  const options = cleanupScheduleOptions(config);
  try {
    await client.schedule.create(options);
    return 'created';
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
  }
  const handle = client.schedule.getHandle(options.scheduleId);
  if (isCurrent(await handle.describe(), config.taskQueue)) return 'unchanged';
  await handle.update((prev) => ({ ...prev, spec: options.spec, action: options.action, policies: { ...prev.policies, ...options.policies } }));
  return 'updated';
}

function isCurrent(d: ScheduleDescription, taskQueue: string): boolean {
  const calendar = d.spec.calendars?.length === 1 ? d.spec.calendars[0] : undefined;
  const only = (ranges: { start: number; end?: number }[] | undefined, value: number) =>
    ranges?.length === 1 && ranges[0]!.start === value && (ranges[0]!.end ?? value) === value;
  return (
    d.action.workflowType === CLEANUP_WORKFLOW &&
    d.action.taskQueue === taskQueue &&
    d.policies.overlap === ScheduleOverlapPolicy.SKIP &&
    calendar !== undefined &&
    only(calendar.hour, CLEANUP_AT.hour) &&
    only(calendar.minute, CLEANUP_AT.minute) &&
    (d.spec.calendars ?? []).length === 1 &&
    !d.spec.intervals?.length
  );
}
