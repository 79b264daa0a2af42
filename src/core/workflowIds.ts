/**
 * Names of Sluice's workflows, pure so every side can compute them: workflow code from its own
 * id (idsOf), the API, the worker and the start-up check from the installation PostgreSQL keeps
 * (temporal/ids.ts).
 */

/**
 * The workflow ids of one Sluice installation (its id is kept in PostgreSQL, migration 014):
 * `sluice-<installation>-suite-<id>`, `-session-<id>`, `-squashed-<first id>`. Session and suite
 * numbers come from the database's sequences, so without the installation a fresh database
 * beside an old Temporal server (or two installations on one namespace) would signal workflows
 * of the other and builds would hang.
 */
export interface WorkflowIds {
  installation: string;
  suite(suiteId: number): string;
  session(sessionId: number): string;
  /** The first session of the batch names it: a session is squashed once. */
  squashed(sessionIds: number[]): string;
  /** A repository's intake: the records of deliveries that build nothing. */
  intake(repoId: number): string;
}

export function workflowIds(installation: string): WorkflowIds {
  const prefix = `sluice-${installation}`;
  return {
    installation,
    suite: (suiteId) => `${prefix}-suite-${suiteId}`,
    session: (sessionId) => `${prefix}-session-${sessionId}`,
    squashed: (sessionIds) => `${prefix}-squashed-${sessionIds[0]}`,
    intake: (repoId) => `${prefix}-intake-${repoId}`,
  };
}

const SCOPED_ID = /^sluice-([0-9a-f]{8})-/;

/** The installation a workflow id of Sluice belongs to; null for one that is not (or not scoped). */
export function installationOf(workflowId: string): string | null {
  return SCOPED_ID.exec(workflowId)?.[1] ?? null;
}

/**
 * Ids as they were before installations (`suite-1`, `session-2`): a workflow started then still
 * talks to its own kind, so what was in flight at an upgrade finishes instead of failing every
 * workflow task (docs/operating.md "Upgrading" asks to drain first; this is for when nobody did).
 */
const LEGACY_ID = /^(suite|session|squashed)-\d+$/;
const legacyIds: WorkflowIds = {
  installation: '',
  suite: (suiteId) => `suite-${suiteId}`,
  session: (sessionId) => `session-${sessionId}`,
  squashed: (sessionIds) => `squashed-${sessionIds[0]}`,
  intake: (repoId) => `intake-${repoId}`,
};

/** The ids of the installation the running workflow belongs to (workflow code: it knows its own id). */
export function idsOf(workflowId: string): WorkflowIds {
  const installation = installationOf(workflowId);
  if (installation !== null) return workflowIds(installation);
  if (LEGACY_ID.test(workflowId)) return legacyIds;
  throw new Error(`${workflowId} is not a workflow id of a Sluice installation`);
}

/** The session to stop, and the suite whose queue it may still wait in (null for a plan's part). */
export interface StopTarget {
  sessionId: number;
  suiteId: number | null;
}
