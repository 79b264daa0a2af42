/**
 * intakeWorkflow, one per repository while deliveries arrive: records the deliveries that build
 * nothing (a skip, a branch shown again or hidden), in the order they were accepted (issue 26:
 * the API answers without writing; a delivery that builds is recorded by its suite instead,
 * workflows/suite.ts). Each batch is one local activity, retried until PostgreSQL answers. Idle
 * for a while, it ends; the next delivery starts it again.
 */
import { condition, continueAsNew, setHandler, workflowInfo } from '@temporalio/workflow';
import type { Intake } from '../core/intake';
import { recordManySignal } from './signals';
import { intakeRecords } from './proxies';

/** How long it waits for another delivery before it ends. */
const IDLE_MS = 60_000;
const MAX_HISTORY_EVENTS = 2_000;

export async function intakeWorkflow(input: { repoId: number; pending?: Intake[] }): Promise<void> {
  const arrived: Intake[] = [...(input.pending ?? [])];
  setHandler(recordManySignal, (intakes) => void arrived.push(...intakes));
  for (;;) {
    // Ending with a signal unhandled is refused by Temporal, which runs this again with it.
    if (!(await condition(() => arrived.length > 0, IDLE_MS))) return;
    await intakeRecords.recordIntakes(arrived.splice(0));
    const info = workflowInfo();
    if (info.continueAsNewSuggested || info.historyLength > MAX_HISTORY_EVENTS) {
      await continueAsNew<typeof intakeWorkflow>({ repoId: input.repoId, pending: arrived.splice(0) });
    }
  }
}
