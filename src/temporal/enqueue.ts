import type { Client } from '@temporalio/client';
import type { Config } from '../config';
import type { EnqueueRequest } from '../core/types';
import { enqueueSignal, suiteWorkflowId, type SuiteWorkflowInput } from '../workflows/signals';
import { SluiceBranch, SluiceRepo } from './searchAttributes';

/**
 * Hands a session to its suite workflow, starting the suite if it is not running. Durable once
 * this returns: Temporal holds the signal even if every worker is down.
 */
export async function enqueueSession(client: Client, config: Config, req: EnqueueRequest): Promise<void> {
  const label = `${req.repoLabel} @ ${req.branch}`;
  const input: SuiteWorkflowInput = { suiteId: req.suiteId, label, historyLimit: config.suiteHistoryLimit };
  await client.workflow.signalWithStart('suiteWorkflow', {
    workflowId: suiteWorkflowId(req.suiteId),
    taskQueue: config.taskQueue,
    args: [input],
    signal: enqueueSignal,
    signalArgs: [{ sessionId: req.sessionId, queuePosition: req.queuePosition }],
    staticSummary: label,
    typedSearchAttributes: [
      { key: SluiceRepo, value: req.repoLabel },
      { key: SluiceBranch, value: req.branch },
    ],
  });
}
