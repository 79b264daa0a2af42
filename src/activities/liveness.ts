/**
 * What keeps a suite or a build from waiting forever (workflows/suite.ts, workflows/build.ts),
 * local activities of the worker that asks Temporal itself:
 *
 * - sessionGone: the suite's running session has a workflow no longer (an operator terminated
 *   it, or it failed for good) and never said it was done. Its record, if it still says queued
 *   or running, ends in `error` saying so, and the suite moves on.
 * - queueServed: whether any runner polls a build queue (`SLUICE_EXTRA_BUILD_QUEUES`, a
 *   trigger's `queue`): a checkout on a queue nobody serves ends its build in `error` after
 *   SLUICE_RUNNER_WAIT_MS, where runners that are merely busy make it wait as long as it takes.
 */
import { Context } from '@temporalio/activity';
import type { Pool } from 'pg';
import type { Config } from '../config';
import { endAbandonedSession } from '../db/sessions';

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
      if (state === 'RUNNING') return false;
      await endAbandonedSession(pool, sessionId, `its workflow ${workflowId} ended without finishing the build (${state.toLowerCase().replace(/_/g, ' ')} in Temporal)`);
      return true;
    },

    async queueServed(taskQueue: string): Promise<boolean> {
      const { pollers } = await Context.current().client.workflowService.describeTaskQueue({
        namespace: config.temporalNamespace,
        taskQueue: { name: taskQueue },
        taskQueueType: ACTIVITY_TASK_QUEUE,
      });
      return (pollers?.length ?? 0) > 0;
    },
  };
}
