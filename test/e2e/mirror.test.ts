/**
 * A build of four workers on one runner asks the git server once (issue 39): the first checkout
 * fetches the branch's tip into the runner's mirror, and every worker's tree is made from it
 * (steps/checkout/mirror.ts). A whole Sluice with one runner process and a real SSH git server,
 * whose every upload-pack is counted.
 */
import { script, World } from '../support/world';

let w: World;
beforeAll(async () => {
  w = await World.start({ runners: 1 });
});
afterAll(() => w?.stop());

const uploads = () => w.ssh.commands.filter((c) => c.startsWith('git-upload-pack')).length;

it('fetches once for four workers, and a rebuild of the same branch fetches only what is new', async () => {
  // Each file takes a moment: the first worker set up starts the tests, and the others join it.
  const files = Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`t${i}_test.sh`, script('sleep 0.5; echo fine')]));
  const repo = await w.makeRepo(files, { suite: { branch: 'master', test_pattern: '*_test.sh', workers: 4 } });
  const before = uploads();
  const { session } = await w.build(repo);
  const stop = (await w.eventsOf(session)).at(-1)!;
  expect(stop).toMatchObject({ status: 'passed', workers: 4 });
  const view = (await w.session(session)) as unknown as { tests: { worker: number }[] };
  expect(new Set(view.tests.map((t) => t.worker)).size).toBeGreaterThan(1);
  expect(uploads() - before).toBe(1);

  // Again: the branch's tip is asked for (once), the workers' trees come from the mirror.
  const again = await w.build(repo, { force: true });
  expect((await w.eventsOf(again.session)).at(-1)).toMatchObject({ status: 'passed' });
  expect(uploads() - before).toBe(2);
});
