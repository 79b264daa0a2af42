/**
 * A suite that lives long: with a low history limit the suite workflow continues-as-new every
 * few sessions, while a burst of triggers keeps arriving during the hand-overs. None may be
 * lost, and builds must still run one at a time.
 */
import { script, World, type Payload } from '../support/world';

let w: World;
beforeAll(async () => {
  w = await World.start({ suiteHistoryLimit: 40 });
});
afterAll(() => w?.stop());

it('keeps every trigger of a burst across continue-as-new, building them one at a time', async () => {
  const repo = await w.makeRepo({ 'a_test.sh': script('true') }, { suite: { branch: 'master', test_pattern: '*_test.sh' } });
  const BURST = 20;
  const builds = await Promise.all(Array.from({ length: BURST }, () => w.build(repo, { force: true })));

  const stops: Payload[] = [];
  for (const b of builds) stops.push((await w.eventsOf(b.session)).at(-1)!);
  expect(stops.map((s) => s.status)).toEqual(Array(BURST).fill('passed'));

  // One at a time: ordered by when their tests started, each ended before the next began.
  const windows = stops
    .map((s) => s.timing as Record<string, number>)
    .map((t) => ({ from: t.exec!, to: t.post_build! }))
    .sort((a, b) => a.from - b.from);
  for (let i = 1; i < windows.length; i++) expect(windows[i]!.from).toBeGreaterThanOrEqual(windows[i - 1]!.to);

  // The suite really did hand over to new runs on the way.
  const { rows } = await w.sluice.pool.query('SELECT suite_id FROM sessions WHERE id = $1', [builds[0]!.session]);
  let runs = 0;
  for await (const _ of w.sluice.client.workflow.list({ query: `WorkflowId = "suite-${rows[0].suite_id}"` })) runs += 1;
  expect(runs).toBeGreaterThan(2);
});
