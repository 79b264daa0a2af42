import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { StopTarget, WorkflowIds } from '../core/workflowIds';
import { stopQueuedSignal, stopSignal } from '../workflows/signals';

/**
 * Asks a session to stop, queued or building. A queued session may have no workflow yet (the
 * suite starts it at its turn): then its suite is asked, and ends it as stopped. False when
 * neither is running (the build is over, or it never existed).
 */
export async function stopSession(client: Client, ids: WorkflowIds, target: StopTarget, stoppedBy: string): Promise<boolean> {
  try {
    await client.workflow.getHandle(ids.session(target.sessionId)).signal(stopSignal, { stoppedBy });
    return true;
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError)) throw err;
  }
  if (target.suiteId === null) return false;
  try {
    await client.workflow.getHandle(ids.suite(target.suiteId)).signal(stopQueuedSignal, { sessionId: target.sessionId, stoppedBy });
    return true;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return false;
    throw err;
  }
}
