/**
 * What the API's routes are given: the application layer's dependencies (app/deps.ts) and what
 * only HTTP needs. Its own module, so route modules never import app.ts (which imports them).
 */
import type { AppDeps } from '../app/deps';
import type { HealthReport } from '../app/health';
import type { Intake } from '../core/intake';
import type { HookHealth } from './hookHealth';
import type { ApiLogOptions } from './logging';
import type { PendingTriggers } from './pendingTriggers';
import type { TriggerKnowledge } from './triggerKnowledge';

export interface ApiDeps extends AppDeps {
  /** Hands a delivery that builds nothing to its repository's intake, to be recorded. */
  intake: (intake: Intake) => Promise<void>;
  /** What triggers are decided from, PostgreSQL answering or not (api/triggerKnowledge.ts). */
  knowledge: TriggerKnowledge;
  /** Triggers accepted here whose records may not be written yet (buildApp makes one when absent). */
  pending?: PendingTriggers;
  /** When hooks last arrived and how many were refused, per repository (buildApp makes one when absent). */
  hookHealth?: HookHealth;
  /** Default: PostgreSQL only. */
  health?: () => Promise<HealthReport>;
  /** Signals a workflow (a token runner's build telling its session something: api/routes/runnerApi.ts). Absent: 503 there. */
  signalWorkflow?: (workflowId: string, name: string, payload: unknown) => Promise<void>;
  /** Request logging; none by default (the api process turns it on). */
  log?: ApiLogOptions;
}
