/**
 * Workflow ids carry the installation (kept in PostgreSQL), and at start-up a worker says when
 * PostgreSQL and Temporal disagree: builds in progress whose suite Temporal does not run, and
 * other installations in the namespace. Real Temporal, real builds, workflows terminated by hand.
 */
import { randomBytes } from 'node:crypto';
import { loadInstallation } from '../../src/db/installation';
import { checkInstallation, describeInstallation } from '../../src/temporal/installationCheck';
import { workflowIds } from '../../src/core/workflowIds';
import { eventually } from '../support/sluice';
import { script, World } from '../support/world';

let w: World;
beforeAll(async () => {
  w = await World.start();
});
afterAll(() => w?.stop());

it("names a build's workflows after the database's installation", async () => {
  expect(w.sluice.ids.installation).toBe(await loadInstallation(w.sluice.pool));
  const repo = await w.makeRepo({ 'a_test.sh': script('true') }, { suite: { branch: 'master', test_pattern: '*_test.sh' } });
  const { session } = await w.build(repo);
  await w.eventsOf(session);
  const described = await w.sluice.client.workflow.getHandle(`sluice-${w.sluice.ids.installation}-session-${session}`).describe();
  expect(described.type).toBe('sessionWorkflow');
});

it('reports builds in progress whose suite Temporal does not run, and other installations in the namespace', async () => {
  const repo = await w.makeRepo({ 'slow_test.sh': script('sleep 300') }, { suite: { branch: 'master', test_pattern: '*_test.sh' } });
  const { session } = await w.build(repo);
  const { rows } = await w.sluice.pool.query<{ suite_id: string }>('SELECT suite_id FROM sessions WHERE id = $1', [session]);
  const suiteId = Number(rows[0]!.suite_id);
  await eventually('the build to run', async () => (await w.session(session)).status === 'running');
  expect((await checkInstallation(w.sluice.client, w.sluice.pool, w.sluice.ids)).orphanSuites).not.toContain(suiteId);

  // Its workflows terminated by hand, as an operator might (or Temporal's database lost): PostgreSQL still says running.
  const other = workflowIds(randomBytes(4).toString('hex'));
  const foreign = await w.sluice.client.workflow.start('suiteWorkflow', {
    workflowId: other.suite(1),
    taskQueue: `nobody-polls-${randomBytes(4).toString('hex')}`,
    args: [{ suiteId: 1, label: 'another installation' }],
  });
  try {
    for (const id of [w.sluice.ids.session(session), w.sluice.ids.suite(suiteId)]) await w.sluice.client.workflow.getHandle(id).terminate('installation.test');
    const report = await eventually('visibility to list the other installation', async () => {
      const r = await checkInstallation(w.sluice.client, w.sluice.pool, w.sluice.ids);
      return (r.others[other.installation] ?? 0) >= 1 ? r : undefined;
    });
    expect(report.orphanSuites).toContain(suiteId);
    const { info, warnings } = describeInstallation(report, w.sluice.config);
    expect(info).toContain(`installation ${w.sluice.ids.installation}`);
    expect(warnings.find((l) => l.includes('PostgreSQL has builds in progress'))).toContain(String(suiteId));
    expect(warnings.find((l) => l.includes('other Sluice installation'))).toContain(other.installation);
  } finally {
    await foreign.terminate('installation.test');
    // Not left running in the e2e database other files share.
    await w.sluice.pool.query("UPDATE sessions SET status = 'error', reason = 'terminated by installation.test' WHERE id = $1", [session]);
  }
});

it("finds builds in Temporal with the ready-made queries of docs/operating.md", async () => {
  const repo = await w.makeRepo({ 'bad_test.sh': script('exit 1') }, { suite: { branch: 'master', test_pattern: '*_test.sh' } });
  const { session } = await w.build(repo);
  expect((await w.eventsOf(session)).at(-1)).toMatchObject({ status: 'failed' });
  const label = `${w.org.name}/${repo.name}`;
  const today = `${new Date().toISOString().slice(0, 10)}T00:00:00Z`;
  const list = async (query: string) => {
    const found: string[] = [];
    for await (const wf of w.sluice.client.workflow.list({ query })) found.push(wf.workflowId);
    return found;
  };
  const id = w.sluice.ids.session(session);
  // docs/operating.md, "Finding builds in the Temporal UI": each query, as written there, finds this build.
  const queries = [
    `WorkflowType = "sessionWorkflow" AND SluiceRepo = "${label}" AND SluiceStatus = "failed" AND StartTime >= "${today}"`,
    `SluiceSession = ${session}`,
    `SluiceRepo = "${label}" AND SluiceBranch = "master"`,
    `WorkflowId STARTS_WITH "sluice-${w.sluice.ids.installation}-session-"`,
  ];
  for (const query of queries) await eventually(query, async () => (await list(query)).includes(id));
  expect(await list(`WorkflowType = "sessionWorkflow" AND SluiceRepo = "${label}" AND SluiceStatus = "passed"`)).not.toContain(id);
  // The list's summary says which build it is.
  const described = await w.sluice.client.workflow.getHandle(id).describe();
  expect(await described.staticSummary()).toBe(`${label} @ master #${session}`);
});
