/**
 * What the application layer's operations are given: the configuration, the pool, and what
 * reaches beyond PostgreSQL (the orchestrator's queue and stop, what triggers are decided
 * from). The HTTP front ends' dependencies (api/deps.ts) are these and more.
 */
import type { Pool } from 'pg';
import type { Config } from '../config';
import type { EnqueueRequest } from '../core/intake';
import type { BranchState } from '../core/selection';
import type { StopTarget, WorkflowIds } from '../core/workflowIds';

export interface AppDeps {
  config: Config;
  pool: Pool;
  /** Hands a session (with its records to write, or recorded already) to its suite's queue in the orchestrator. */
  enqueue: (req: EnqueueRequest) => Promise<void>;
  /** The named branches' rows as triggers see them (api/triggerKnowledge.ts: PostgreSQL, or memory while it is away). */
  knowledge: { branches(repoId: number, names: readonly string[]): Promise<Map<string, BranchState>> };
  /**
   * Sends `received` of sessions recorded here, not by their suite (a rebuild): whoever records
   * a session announces it (api/herald.ts). Absent: its session's lane sends it at its turn.
   */
  announce?: (suiteId: number, sessionIds: readonly number[]) => void;
  /** Signals a session to stop; false when it is no longer running. Absent: refused as unavailable. */
  stop?: (target: StopTarget, stoppedBy: string) => Promise<boolean>;
  /** This installation's workflow ids, for links to the Temporal UI; none in tests without Temporal. */
  workflowIds?: WorkflowIds;
}
