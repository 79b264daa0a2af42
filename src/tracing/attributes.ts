/**
 * The span attributes Sluice adds, and how a session's id is read from the ids Temporal knows.
 * Pure: workflow code (workflows/tracing.ts) uses it as much as the processes do. Attributes
 * carry ids and names only: never a token, a URL, a payload or a webhook body.
 */

/** The guid a trigger was answered with (its sessions are recorded after the answer). */
export const TRIGGER_GUID = 'sluice.trigger.guid';
/** A session's id (Sluice's own name for it). */
export const SESSION_ID = 'sluice.session.id';
/** OpenTelemetry's CI/CD semantic conventions: one run of a pipeline, which a session is. */
export const PIPELINE_RUN_ID = 'cicd.pipeline.run.id';
/** OpenTelemetry's CI/CD semantic conventions: the task of a run (a Temporal activity's type). */
export const PIPELINE_TASK_NAME = 'cicd.pipeline.task.name';

export const WEBHOOK_ID = 'sluice.webhook.id';
export const WEBHOOK_EVENT = 'sluice.webhook.event';
export const DELIVERY_ATTEMPT = 'sluice.delivery.attempt';
export const DELIVERY_ORIGIN = 'sluice.delivery.origin';
export const DELIVERY_OUTCOME = 'sluice.delivery.outcome';

/** The attributes that name a session on a span. */
export function sessionAttributes(sessionId: number): Record<string, string | number> {
  return { [SESSION_ID]: sessionId, [PIPELINE_RUN_ID]: String(sessionId) };
}

/** `sluice-<installation>-session-<id>` (or an older `session-<id>`): a session's workflow. */
const SESSION_WORKFLOW_ID = /(?:^|-)session-(\d+)$/;

/** The session a workflow id names, or undefined for the suite's, a squash's or the cleanup's. */
export function sessionOfWorkflowId(workflowId: string): number | undefined {
  const m = SESSION_WORKFLOW_ID.exec(workflowId);
  return m ? Number(m[1]) : undefined;
}
