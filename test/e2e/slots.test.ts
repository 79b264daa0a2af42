/**
 * A burst of builds wider than the runner's slots (issue 49). When every worker of a build
 * waited at the rendezvous for its partners, four builds of `workers: 2` could each get one lane
 * into the four slots, each lane waiting for a partner that could never get a slot: nothing moved
 * again. Now no lane waits for another: the first one set up starts the tests and a late partner
 * joins (or finds the list done and ends at once), so every build ends.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { script, World, type Payload } from '../support/world';

let w: World;
beforeAll(async () => {
  w = await World.start({ runnerSlots: 4 });
});
afterAll(() => w?.stop());

const BUILDS = 20;

it(`${BUILDS} builds of workers: 2 triggered at once on 4 slots all end, each file run and counted once`, async () => {
  const log = path.join(w.tmp, 'burst-slots.log');
  // Each file takes a moment, so that lanes hold their slots while others are handed out.
  const file = (build: number, name: string) => script(`echo "build${build} ${name} $SLUICE_WORKER_ID" >> ${log}\nsleep 0.3`);
  const repos = await Promise.all(
    Array.from({ length: BUILDS }, (_, i) =>
      w.makeRepo({ 'a_test.sh': file(i, 'a'), 'b_test.sh': file(i, 'b'), 'c_test.sh': file(i, 'c') }, { suite: { branch: 'master', test_pattern: '*_test.sh', workers: 2 } }),
    ),
  );
  const builds = await Promise.all(repos.map((repo) => w.build(repo)));

  const stops: Payload[] = [];
  for (const b of builds) stops.push((await w.eventsOf(b.session)).at(-1)!);
  expect(stops.map((s) => s.status)).toEqual(Array(BUILDS).fill('passed'));
  for (const s of stops) expect(s.counts).toMatchObject({ passed: 3, failed: 0, error: 0, notstarted: 0, started: 0 });

  // Each file of each build ran once, on whichever of its workers got to it.
  const ran = (await readFile(log, 'utf8')).trim().split('\n').map((l) => l.split(' ').slice(0, 2).join(' '));
  expect(ran.sort()).toEqual(Array.from({ length: BUILDS }, (_, i) => ['a', 'b', 'c'].map((f) => `build${i} ${f}`)).flat().sort());
}, 300_000); // 27 s alone; 137 s once in the full suite beside other builds, past jest's 120 s: a deadlock still never ends
