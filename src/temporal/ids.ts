/**
 * The workflow ids of this installation, for the processes that name workflows from outside
 * (the API's enqueue, stop and Temporal UI links; the start-up check): read once at start from
 * PostgreSQL (migration 014). Workflow code derives them from its own id (signals.ts, idsOf).
 */
import { loadInstallation } from '../db/installation';
import type { Db } from '../db/transaction';
import { workflowIds, type WorkflowIds } from '../core/workflowIds';

export async function loadWorkflowIds(db: Db): Promise<WorkflowIds> {
  return workflowIds(await loadInstallation(db));
}
