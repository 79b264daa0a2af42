/**
 * Nothing waits forever: a suite whose running session's workflow was terminated by hand goes
 * on with its queue (the session's record ends in error, saying why), and a checkout on a build
 * queue no runner serves ends its build in error, where one whose runner is only busy waits.
 * Real Temporal, a workflow terminated for real.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import { presenceQueue } from '../../src/core/queues';
import { eventually } from '../support/sluice';
import { script, World } from '../support/world';

let w: World;
beforeAll(async () => {
  // The suite checks on its running session every second; a queue nobody polls fails a checkout after 2 s.
  w = await World.start({ suiteLivenessMs: 1_000, runnerWaitMs: 2_000 });
});
afterAll(() => w?.stop());

const suite = { branch: 'master', test_pattern: '*_test.sh' };

it("goes on with a suite's queue when its running session's workflow was terminated by hand", async () => {
  const flags = await mkdtemp(path.join(w.tmp, 'flags-'));
  // Hangs until the flag exists, then passes.
  const repo = await w.makeRepo({ 'wait_test.sh': script(`while [ ! -e ${flags}/go ]; do sleep 0.1; done`) }, { suite });
  const stuck = await w.build(repo);
  await eventually('the build to run', async () => (await w.session(stuck.session)).status === 'running');
  const queued = await w.build(repo, { force: true });
  expect((await w.session(queued.session)).status).toBe('queued');

  await w.sluice.client.workflow.getHandle(w.sluice.ids.session(stuck.session)).terminate('an operator, by hand');
  const ended = await eventually('the suite to notice', async () => {
    const s = await w.session(stuck.session);
    return s.status === 'error' ? s : undefined;
  });
  expect(ended.reason).toBe(`its workflow ${w.sluice.ids.session(stuck.session)} ended without finishing the build (terminated in Temporal)`);

  // The queue moves on: the next build runs and ends as usual.
  await eventually('the queued build to run', async () => (await w.session(queued.session)).status === 'running');
  await writeFile(path.join(flags, 'go'), '');
  expect((await w.eventsOf(queued.session)).at(-1)).toMatchObject({ status: 'passed' });
});

it("notices a terminated running session on a branch whose triggers keep coming faster than it checks", async () => {
  const flags = await mkdtemp(path.join(w.tmp, 'flags-'));
  const repo = await w.makeRepo({ 'wait_test.sh': script(`while [ ! -e ${flags}/go ]; do sleep 0.1; done`) }, { suite });
  const stuck = await w.build(repo);
  await eventually('the build to run', async () => (await w.session(stuck.session)).status === 'running');
  await w.sluice.client.workflow.getHandle(w.sluice.ids.session(stuck.session)).terminate('an operator, by hand');

  // A trigger every 300 ms, each waking the suite, while it should check every second: the
  // check is due by the clock, so the triggers cannot put it off. At most 30 of them.
  let noticed = false;
  for (let i = 0; i < 30 && !noticed; i++) {
    await w.build(repo, { force: true });
    await new Promise((resolve) => setTimeout(resolve, 300));
    noticed = (await w.session(stuck.session)).status === 'error';
  }
  expect(noticed).toBe(true);
  await writeFile(path.join(flags, 'go'), '');
});

it('ends a build whose checkout waits on a queue that no runner serves, saying which', async () => {
  const repo = await w.makeRepo({ 'a_test.sh': script('true') }, { suite });
  const { session } = await w.build(repo, { queue: 'nobody-serves-this' });
  const events = await w.eventsOf(session);
  expect(events.map((e) => e.event)).toEqual(['received', 'stop']);
  expect(events.at(-1)).toMatchObject({ status: 'error' });
  expect((await w.session(session)).reason).toContain('no runner serves the build queue "nobody-serves-this": none polled it for 2 s');
  // The suite is free again: a build on the served queue passes.
  const next = await w.build(repo, { force: true });
  expect((await w.eventsOf(next.session)).at(-1)).toMatchObject({ status: 'passed' });
});

it('keeps a checkout waiting, past the runner wait, behind a runner whose every slot is busy', async () => {
  const flags = await mkdtemp(path.join(w.tmp, 'flags-'));
  const hang = script(`while [ ! -e ${flags}/go ]; do sleep 0.1; done`);
  // Four files on four lanes take the runner's four slots.
  const busy = await w.makeRepo(
    { 'a_test.sh': hang, 'b_test.sh': hang, 'c_test.sh': hang, 'd_test.sh': hang },
    { suite: { ...suite, workers: 4 } },
  );
  const first = await w.build(busy);
  await eventually('all four lanes to run', async () => (await w.session(first.session)).tests.length === 0 &&
    (await w.sluice.pool.query("SELECT count(*)::int AS n FROM test_queue WHERE session_id = $1 AND state = 'claimed'", [first.session])).rows[0].n === 4);

  const other = await w.makeRepo({ 'ok_test.sh': script('true') }, { suite });
  const waiting = await w.build(other);
  // The checkout's watch asks every 500 ms; four "unserved" answers in a row would end the build.
  // Wait until it has asked eight times, with no free slot anywhere.
  const handle = w.sluice.client.workflow.getHandle(w.sluice.ids.session(waiting.session));
  await eventually('the watch to ask eight times', async () => (await localActivitiesOf(handle, 'queueServed')) >= 8, 30_000);
  expect((await w.session(waiting.session)).status).toBe('running');
  // Busy, the runner still says it is there, on the queue's presence queue.
  const { pollers } = await w.sluice.client.workflowService.describeTaskQueue({
    namespace: 'default',
    taskQueue: { name: presenceQueue(w.sluice.config.buildQueue) },
    taskQueueType: 2, // activity
  });
  expect(pollers?.length).toBeGreaterThan(0);

  await writeFile(path.join(flags, 'go'), '');
  expect((await w.eventsOf(first.session)).at(-1)).toMatchObject({ status: 'passed' });
  expect((await w.eventsOf(waiting.session)).at(-1)).toMatchObject({ status: 'passed' });
});

/** How many times the workflow ran local activity `type` so far, from its history's markers. */
async function localActivitiesOf(handle: WorkflowHandle, type: string): Promise<number> {
  const { events } = await handle.fetchHistory();
  return (events ?? []).filter((e) => {
    const data = e.markerRecordedEventAttributes?.details?.data?.payloads?.[0]?.data;
    // The SDK's marker of a local activity: its attempt, with the activity's type.
    return data ? (JSON.parse(Buffer.from(data).toString('utf8')) as { activity_type?: string }).activity_type === type : false;
  }).length;
}
