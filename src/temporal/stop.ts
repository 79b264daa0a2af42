import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { sessionWorkflowId, stopSignal } from '../workflows/signals';

/**
 * Asks a session to stop, queued or building. False when its workflow is no longer running
 * (the build is over, or it never existed).
 */
export async function stopSession(client: Client, sessionId: number, stoppedBy: string): Promise<boolean> {
  try {
    await client.workflow.getHandle(sessionWorkflowId(sessionId)).signal(stopSignal, { stoppedBy });
    return true;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return false;
    throw err;
  }
}
