/**
 * What keeps a suite or a build from waiting forever (workflows/suite.ts, workflows/build.ts),
 * local activities of the worker that asks Temporal itself:
 *
 * - sessionGone: the suite's running session has a workflow no longer (an operator terminated
 *   it, or it failed for good) and never said it was done. Its record, if it still says queued
 *   or running, ends in `error` saying so, and the suite moves on.
 * - queueServed: whether any runner serves a build queue (`SLUICE_EXTRA_BUILD_QUEUES`, a
 *   trigger's `queue`), busy or not (temporal/presence.ts): a checkout on a queue nobody serves
 *   ends its build in `error` after SLUICE_RUNNER_WAIT_MS, where runners that are merely busy
 *   make it wait as long as it takes.
 */
import { Context } from '@temporalio/activity';
import type { Pool } from 'pg';
import type { Config } from '../config';
import { endAbandonedSession } from '../db/sessions';
import { presenceQueue } from '../core/queues';

/** Workflow states from which a session's workflow never reports back. */
const GONE = new Set(['NOT_FOUND', 'COMPLETED', 'FAILED', 'CANCELLED', 'TERMINATED', 'TIMED_OUT']);

/**
 * Whether a session's workflow in this state (Temporal's name, or NOT_FOUND) is gone for good.
 * Paused, or a state this SDK does not know, is not: only an ended or missing workflow will
 * never tell its suite it is done.
 */
export const workflowGone = (state: string): boolean => GONE.has(state);

/** TaskQueueType.ACTIVITY in Temporal's API (runners poll build queues for activities only). */
const ACTIVITY_TASK_QUEUE = 2;

export function createLivenessActivities({ config, pool }: { config: Config; pool: Pool }) {
  return {
    async sessionGone(sessionId: number, workflowId: string): Promise<boolean> {
      const state = await Context.current()
        .client.workflow.getHandle(workflowId)
        .describe()
        .then((d) => d.status.name)
        .catch((err: unknown) => {
          if ((err as Error).name === 'WorkflowNotFoundError') return 'NOT_FOUND';
          throw err;
        });
      if (!workflowGone(state)) return false;
      await endAbandonedSession(pool, sessionId, `its workflow ${workflowId} ended without finishing the build (${state.toLowerCase().replace(/_/g, ' ')} in Temporal)`);
      return true;
    },

    async queueServed(taskQueue: string): Promise<boolean> {
      // Its presence queue, which a runner polls even while all its slots are busy.
      const { pollers } = await Context.current().client.workflowService.describeTaskQueue({
        namespace: config.temporalNamespace,
        taskQueue: { name: presenceQueue(taskQueue) },
        taskQueueType: ACTIVITY_TASK_QUEUE,
      });
      return (pollers?.length ?? 0) > 0;
    },
  };
}
