/**
 * What the API's routes are given: the configuration, the pool and everything with I/O beyond
 * PostgreSQL. Its own module, so route modules never import app.ts (which imports them).
 */
import type { Pool } from 'pg';
import type { Config } from '../config';
import type { EnqueueRequest, Intake } from '../core/intake';
import type { WorkflowIds } from '../temporal/ids';
import type { StopTarget } from '../temporal/stop';
import type { ApiLogOptions } from './logging';
import type { PendingTriggers } from './pendingTriggers';
import type { TriggerKnowledge } from './triggerKnowledge';

export interface HealthReport {
  ok: boolean;
  /** What did not answer, e.g. `postgresql`, `temporal`. */
  missing: string[];
}

export interface ApiDeps {
  config: Config;
  pool: Pool;
  /** Hands a session (with its records to write, or recorded already) to its suite's queue in the orchestrator. */
  enqueue: (req: EnqueueRequest) => Promise<void>;
  /** Hands a delivery that builds nothing to its repository's intake, to be recorded. */
  intake: (intake: Intake) => Promise<void>;
  /** What triggers are decided from, PostgreSQL answering or not (api/triggerKnowledge.ts). */
  knowledge: TriggerKnowledge;
  /** Triggers accepted here whose records may not be written yet (buildApp makes one when absent). */
  pending?: PendingTriggers;
  /** Signals a session to stop; false when it is no longer running. Absent: 503 on stop. */
  stop?: (target: StopTarget, stoppedBy: string) => Promise<boolean>;
  /** Default: PostgreSQL only. */
  health?: () => Promise<HealthReport>;
  /** This installation's workflow ids, for links to the Temporal UI; none in tests without Temporal. */
  workflowIds?: WorkflowIds;
  /** Signals a workflow (a token runner's build telling its session something: api/routes/runnerApi.ts). Absent: 503 there. */
  signalWorkflow?: (workflowId: string, name: string, payload: unknown) => Promise<void>;
  /** Request logging; none by default (the api process turns it on). */
  log?: ApiLogOptions;
}
