/**
 * The API's head start on `received` (api/herald.ts): which sessions it records, in what order,
 * and when it leaves a suite to its workflow. Its PostgreSQL and receivers are functions here,
 * the ordering rules being the subject; test/integration/api-herald.test.ts runs it for real.
 */
import { createHerald, type HeraldDeps } from '../../src/api/herald';
import type { Intake } from '../../src/core/intake';

const intake = (key: string): Intake => ({
  repoId: 1,
  acceptedAt: 0,
  branchUpdates: [],
  sessions: [{ key, suiteId: 1, profileName: 'default', branch: 'main', ref: 'refs/heads/main', head: 'h', force: false, workers: 1 }],
});

/** Retries an expectation while the herald's promises settle (a second at most). */
async function eventually(check: () => void): Promise<void> {
  for (let tries = 0; ; tries++) {
    try {
      return check();
    } catch (err) {
      if (tries >= 200) throw err;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }
}

/** A database of sessions by key, a list of what each record call carried, and of what was announced and woken. */
function world(overrides: Partial<HeraldDeps> = {}) {
  const ids = new Map<string, number>();
  const calls: string[][] = [];
  const announced: number[] = [];
  const woken: number[] = [];
  const answered: boolean[] = [];
  let failing = false;
  let gate: Promise<void> = Promise.resolve();
  const deps: HeraldDeps = {
    async record(intakes) {
      const keys = intakes.map((i) => i.sessions[0]!.key);
      calls.push(keys);
      await gate;
      if (failing) throw new Error('PostgreSQL is away');
      const fresh: number[] = [];
      for (const k of keys) if (!ids.has(k)) fresh.push(ids.set(k, ids.size + 1).get(k)!);
      return { ids: new Map(keys.map((k) => [k, ids.get(k)!])), fresh };
    },
    recorded: async (key) => (answered.push(ids.has(key)), ids.has(key)),
    announce: async (sessionIds) => {
      announced.push(...sessionIds);
      return sessionIds.filter((id) => id % 2 === 0); // even sessions' receivers did not answer
    },
    wake: async (_suite, sessionId) => void woken.push(sessionId),
    recheckMs: 0,
    ...overrides,
  };
  return {
    deps,
    ids,
    calls,
    announced,
    woken,
    /** What the herald heard each time it asked whether a left suite had caught up. */
    answered,
    /** What the suite's workflow does later: records in order whatever the API did not. */
    suiteRecords: (...keys: string[]) => keys.forEach((k) => ids.has(k) || ids.set(k, ids.size + 1)),
    fail: (yes: boolean) => void (failing = yes),
    hold: () => {
      let open!: () => void;
      gate = new Promise((resolve) => (open = resolve));
      return () => open();
    },
  };
}

test("records each suite's batches one after another, in order, and announces what it wrote", async () => {
  const w = world();
  const herald = createHerald(w.deps);
  const open = w.hold();
  herald.took(1, [intake('a')]);
  herald.took(1, [intake('b'), intake('c')]); // arrives while `a` is being written: goes next, together
  herald.took(2, [intake('x')]); // another suite does not wait for the first
  await eventually(() => expect(w.calls).toEqual([['a'], ['x']]));
  open();
  await eventually(() => expect(w.announced.sort()).toEqual([1, 2, 3, 4]));
  expect(w.calls).toEqual([['a'], ['x'], ['b', 'c']]);
  expect([w.ids.get('a'), w.ids.get('b'), w.ids.get('c')]).toEqual([1, 3, 4]); // a before b before c
  await eventually(() => expect(w.woken.sort()).toEqual([2, 4]));
  await herald.close();
});

test('announces only sessions it wrote: one its suite recorded first is the suite’s to announce', async () => {
  const w = world();
  w.suiteRecords('a');
  const herald = createHerald(w.deps);
  herald.took(1, [intake('a'), intake('b')]);
  await herald.close();
  expect(w.calls).toEqual([['a', 'b']]);
  expect(w.announced).toEqual([2]);
});

test('a batch PostgreSQL refused leaves the suite to its workflow until that batch is recorded there, so ids keep the arrival order', async () => {
  const w = world();
  const herald = createHerald(w.deps);
  w.fail(true);
  herald.took(1, [intake('a')]);
  await eventually(() => expect(w.calls).toEqual([['a']]));
  w.fail(false);
  await new Promise((resolve) => setImmediate(resolve));
  herald.took(1, [intake('b')]); // `a` is not recorded yet: `b` must not get a lower id
  await eventually(() => expect(w.answered).toEqual([false]));
  await new Promise((resolve) => setImmediate(resolve)); // the answer heard
  expect(w.calls).toEqual([['a']]);
  w.suiteRecords('a', 'b'); // the suite catches up, in order
  herald.took(1, [intake('c')]); // `b`, the newest left, is recorded: the API takes the suite back
  await eventually(() => expect(w.calls).toEqual([['a'], ['c']]));
  await herald.close();
  expect([w.ids.get('a'), w.ids.get('b'), w.ids.get('c')]).toEqual([1, 2, 3]);
  expect(w.announced).toEqual([3]);
});

test('a signal whose fate is unknown leaves its suite; what arrives while the API asks about it waits, in order', async () => {
  const w = world();
  const herald = createHerald(w.deps);
  herald.lost(1, [intake('a')]);
  w.suiteRecords('a');
  herald.took(1, [intake('b')]); // asks whether `a` is recorded…
  herald.took(1, [intake('c')]); // …and `c` waits behind `b` meanwhile
  await herald.close();
  expect(w.calls).toEqual([['b', 'c']]);
  expect([w.ids.get('b'), w.ids.get('c')]).toEqual([2, 3]);
});

test('a suite left to its workflow is asked about at most once per recheckMs', async () => {
  const recorded = jest.fn(async () => false);
  const w = world({ recorded, recheckMs: 60_000 });
  const herald = createHerald(w.deps);
  herald.lost(1, [intake('a')]);
  herald.took(1, [intake('b')]);
  await eventually(() => expect(recorded).toHaveBeenCalledTimes(1));
  herald.took(1, [intake('c')]);
  await herald.close();
  expect(recorded).toHaveBeenCalledTimes(1);
  expect(w.calls).toEqual([]);
});

test('a backlog beyond its bound leaves the suite that would exceed it', async () => {
  const w = world({ maxBacklog: 2, concurrency: 1 });
  const herald = createHerald(w.deps);
  const open = w.hold();
  herald.took(1, [intake('a')]); // being written: not waiting
  herald.took(2, [intake('x'), intake('y')]); // waits (one at a time)
  herald.took(3, [intake('q')]); // would be the third waiting: left to suite 3's workflow
  open();
  await herald.close();
  expect(w.calls).toEqual([['a'], ['x', 'y']]);
});

test('announces a session the API recorded on its own (a rebuild), waking its suite when a receiver did not get it', async () => {
  const w = world();
  const herald = createHerald(w.deps);
  herald.announce(7, [41, 42]);
  await herald.close();
  expect(w.calls).toEqual([]); // nothing to record: it is recorded
  expect(w.announced).toEqual([41, 42]);
  expect(w.woken).toEqual([42]);
});
