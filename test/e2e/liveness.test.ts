/**
 * Nothing waits forever: a suite whose running session's workflow was terminated by hand goes
 * on with its queue (the session's record ends in error, saying why), and a checkout on a build
 * queue no runner serves ends its build in error. Real Temporal, a workflow terminated for real.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import path from 'node:path';
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
