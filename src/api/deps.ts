/**
 * What the API's routes are given: the configuration, the pool and everything with I/O beyond
 * PostgreSQL. Its own module, so route modules never import app.ts (which imports them).
 */
import type { Pool } from 'pg';
import type { Config } from '../config';
import type { EnqueueRequest } from '../core/types';
import type { WorkflowIds } from '../temporal/ids';
import type { StopTarget } from '../temporal/stop';
import type { Announce } from './announce';
import type { ApiLogOptions } from './logging';

export interface HealthReport {
  ok: boolean;
  /** What did not answer, e.g. `postgresql`, `temporal`. */
  missing: string[];
}

export interface ApiDeps {
  config: Config;
  pool: Pool;
  /** Makes the build durable in the orchestrator; called inside the trigger's transaction. */
  enqueue: (req: EnqueueRequest) => Promise<void>;
  /** Signals a session to stop; false when it is no longer running. Absent: 503 on stop. */
  stop?: (target: StopTarget, stoppedBy: string) => Promise<boolean>;
  /** Default: PostgreSQL only. */
  health?: () => Promise<HealthReport>;
  /**
   * Starts sending `received` of an accepted session (api/announce.ts); resolves when the
   * trigger may be answered. Absent: the session workflow sends it (tests of the API alone).
   */
  announceReceived?: Announce;
  /** This installation's workflow ids, for links to the Temporal UI; none in tests without Temporal. */
  workflowIds?: WorkflowIds;
  /** Signals a workflow (a token runner's build telling its session something: api/routes/runnerApi.ts). Absent: 503 there. */
  signalWorkflow?: (workflowId: string, name: string, payload: unknown) => Promise<void>;
  /** Request logging; none by default (the api process turns it on). */
  log?: ApiLogOptions;
}
