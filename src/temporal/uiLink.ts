/**
 * Where the Temporal UI shows a session's workflow: `/namespaces/<ns>/workflows/<id>`, which
 * the UI sends on to the workflow's latest run. None when no UI address is configured
 * (SLUICE_TEMPORAL_UI_URL; `npm start` sets it to its dev server's UI), or no installation's
 * ids (the API's tests without Temporal).
 */
import type { Config } from '../config';
import type { WorkflowIds } from '../core/workflowIds';

export function sessionWorkflowLink(config: Pick<Config, 'temporalUiUrl' | 'temporalNamespace'>, ids: WorkflowIds | undefined, sessionId: number): string | null {
  if (!config.temporalUiUrl || !ids) return null;
  return `${config.temporalUiUrl}/namespaces/${encodeURIComponent(config.temporalNamespace)}/workflows/${encodeURIComponent(ids.session(sessionId))}`;
}
