/**
 * At start-up, whether PostgreSQL and Temporal agree on what is running. Workflow ids are
 * scoped by the installation (signals.ts), so a fresh database beside an old Temporal server no
 * longer signals workflows of the old one; what is left to say plainly is when they disagree:
 *
 * - builds in progress in PostgreSQL whose suite Temporal is not running (this is not the
 *   Temporal server, or its database, this PostgreSQL was used with; or a workflow was
 *   terminated by hand): they will not go on by themselves;
 * - workflows of other Sluice installations in the namespace: fine, ids do not mix, but each
 *   installation needs task queues of its own, or its workers run the other's workflows;
 * - suite workflows with unscoped ids (a Sluice from before installation ids).
 */
import { Client, Connection } from '@temporalio/client';
import type { Config } from '../config';
import { suitesInProgress } from '../db/installation';
import type { Db } from '../db/transaction';
import { installationOf, type WorkflowIds } from '../core/workflowIds';

export interface InstallationReport {
  installation: string;
  /** Suites with builds in progress in PostgreSQL that Temporal does not run a workflow for. */
  orphanSuites: number[];
  /** Other installations running suite workflows in the namespace, with how many each. */
  others: Record<string, number>;
  /** Running suite workflows whose id names no installation. */
  unscoped: number;
}

/** How many running suite workflows are looked at, at most: enough to tell, cheap to list. */
const LIST_LIMIT = 10_000;

export async function checkInstallation(client: Client, db: Db, ids: WorkflowIds): Promise<InstallationReport> {
  const ours = new Set<string>();
  const others: Record<string, number> = {};
  let unscoped = 0;
  let seen = 0;
  for await (const wf of client.workflow.list({ query: `WorkflowType = 'suiteWorkflow' AND ExecutionStatus = 'Running'` })) {
    const installation = installationOf(wf.workflowId);
    if (installation === ids.installation) ours.add(wf.workflowId);
    else if (installation === null) unscoped += 1;
    else others[installation] = (others[installation] ?? 0) + 1;
    if (++seen >= LIST_LIMIT) break;
  }
  // Visibility lags a little behind: a suite counts as missing only when Temporal does not
  // know its workflow at all, asked directly.
  const missing: number[] = [];
  for (const suiteId of await suitesInProgress(db)) {
    if (ours.has(ids.suite(suiteId))) continue;
    const running = await client.workflow
      .getHandle(ids.suite(suiteId))
      .describe()
      .then((d) => d.status.name === 'RUNNING')
      .catch(() => false);
    if (!running) missing.push(suiteId);
  }
  return { installation: ids.installation, orphanSuites: missing, others, unscoped };
}

/** The report as log lines: one saying who this is, then one per disagreement. */
export function describeInstallation(report: InstallationReport, config: Pick<Config, 'temporalAddress' | 'temporalNamespace'>): { info: string; warnings: string[] } {
  const where = `Temporal at ${config.temporalAddress} (namespace ${config.temporalNamespace})`;
  const warnings: string[] = [];
  if (report.orphanSuites.length > 0) {
    const some = report.orphanSuites.slice(0, 10).join(', ') + (report.orphanSuites.length > 10 ? ', …' : '');
    warnings.push(
      `PostgreSQL has builds in progress on ${report.orphanSuites.length} suite(s) (${some}) that ${where} is not running: ` +
        'it is not the Temporal server (or database) this PostgreSQL was used with, or their workflows were terminated. ' +
        'Those builds will not go on by themselves: stop them (POST /api/v1/sessions/:id/stop) or trigger them again.',
    );
  }
  const otherIds = Object.keys(report.others);
  if (otherIds.length > 0) {
    warnings.push(
      `${where} also runs the suites of ${otherIds.length} other Sluice installation(s) (${otherIds.join(', ')}); their workflow ids ` +
        "do not mix with this one's, but every installation needs task queues of its own (SLUICE_TASK_QUEUE, SLUICE_BUILD_QUEUE).",
    );
  }
  if (report.unscoped > 0) {
    warnings.push(`${where} runs ${report.unscoped} suite workflow(s) of a Sluice from before installation ids; this version does not take part in them.`);
  }
  return { info: `installation ${report.installation}: workflow ids sluice-${report.installation}-…`, warnings };
}

/** Checks and logs; never fails the start (a role must come up even when Temporal's visibility lags). */
export async function reportInstallation(config: Config, db: Db, ids: WorkflowIds, log: (line: string) => void): Promise<InstallationReport | null> {
  const connection = await Connection.connect({ address: config.temporalAddress });
  try {
    const report = await checkInstallation(new Client({ connection, namespace: config.temporalNamespace }), db, ids);
    const { info, warnings } = describeInstallation(report, config);
    log(info);
    for (const warning of warnings) log(`warning: ${warning}`);
    return report;
  } catch (err) {
    log(`warning: could not compare PostgreSQL with Temporal: ${err instanceof Error ? err.message : String(err)}`);
    return null;
  } finally {
    await connection.close().catch(() => undefined);
  }
}
