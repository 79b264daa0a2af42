/**
 * Determinism guard: workflow histories must replay against the current workflow code.
 * Two sources: histories recorded just now by a real build (catches nondeterminism in code
 * paths the build took), and histories committed under test/fixtures/histories (catches a
 * change that would break workflows already running in production; when such a change is
 * meant, guard it with `patched()` — or, for an unreleased change, record the fixtures again
 * with SLUICE_RECORD_HISTORIES=1).
 */
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { requireEnv } from '../support/sluice';
import { script, World } from '../support/world';

type History = Awaited<ReturnType<WorkflowHandle['fetchHistory']>>;
const FIXTURES = path.join(__dirname, '..', 'fixtures', 'histories');
/** Beside the histories: the workflow id each was recorded under. */
const WORKFLOW_IDS = 'workflow-ids.json';

let w: World;
beforeAll(async () => {
  w = await World.start();
});
afterAll(() => w?.stop());

async function replay(histories: Array<{ workflowId: string; history: History }>): Promise<void> {
  const bundle = { workflowBundle: { codePath: requireEnv('SLUICE_TEST_WORKFLOW_BUNDLE') } };
  for (const { workflowId, history } of histories) {
    // runReplayHistory throws DeterminismViolationError (or the workflow's own failure) on a mismatch.
    await expect(Worker.runReplayHistory(bundle, history, workflowId)).resolves.toBeUndefined();
  }
}

it('replays the histories of a real build (suite and session) against the current code', async () => {
  const repo = await w.makeRepo(
    { 'a_test.sh': script('true'), 'b_test.sh': script('exit 1') },
    { suite: { branch: 'master', test_pattern: '*_test.sh', workers: 2 } },
  );
  const first = await w.build(repo);
  const second = await w.build(repo); // skipped: already built
  await w.eventsOf(first.session);
  await w.eventsOf(second.session);
  const suiteId = (await w.sluice.pool.query('SELECT suite_id FROM sessions WHERE id = $1', [first.session])).rows[0].suite_id;
  const ids = [w.sluice.ids.suite(suiteId), w.sluice.ids.session(first.session), w.sluice.ids.session(second.session)];
  // A session's workflow closes once its deliveries are done, shortly after `stop` arrived.
  for (const id of ids.slice(1)) await w.sluice.client.workflow.getHandle(id).result();
  const histories = await Promise.all(
    ids.map(async (workflowId) => ({ workflowId, history: await w.sluice.client.workflow.getHandle(workflowId).fetchHistory() })),
  );
  await replay(histories);

  if (process.env.SLUICE_RECORD_HISTORIES === '1') {
    await mkdir(FIXTURES, { recursive: true });
    const recorded: Record<string, string> = {};
    for (const { workflowId, history } of histories) {
      const name = (workflowId === ids[0] ? 'suite' : 'session') + (workflowId === ids[2] ? '-skipped' : '');
      await writeFile(path.join(FIXTURES, `${name}.bin`), temporal.api.history.v1.History.encode(history).finish());
      recorded[`${name}.bin`] = workflowId;
    }
    // Workflow code reads its installation from its own id: a history replays under the id it ran with.
    await writeFile(path.join(FIXTURES, WORKFLOW_IDS), `${JSON.stringify(recorded, null, 2)}\n`);
  }
});

it('replays the committed histories of earlier releases', async () => {
  const files = (await readdir(FIXTURES)).filter((f) => f.endsWith('.bin')).sort();
  expect(files).toEqual(['session-skipped.bin', 'session.bin', 'suite.bin']);
  const workflowIds = JSON.parse(await readFile(path.join(FIXTURES, WORKFLOW_IDS), 'utf8')) as Record<string, string>;
  const histories = await Promise.all(
    files.map(async (f) => {
      const history = temporal.api.history.v1.History.decode(await readFile(path.join(FIXTURES, f)));
      return { workflowId: workflowIds[f]!, history };
    }),
  );
  await replay(histories);
});
