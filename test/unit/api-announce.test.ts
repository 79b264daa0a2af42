/**
 * The backpressure of the API's `received` (api/announce.ts `backpressured`): the send is a
 * stand-in here (the real one, against a real receiver, is in delivery-received.test.ts and
 * burst.test.ts); what is checked is when a trigger's answer may go.
 */
import { backpressured } from '../../src/api/announce';

function heldSends() {
  const open = new Map<number, (err?: Error) => void>();
  const send = (id: number) => new Promise<void>((resolve, reject) => open.set(id, (err) => (err ? reject(err) : resolve())));
  return { open, send };
}
const tick = () => new Promise((r) => setImmediate(r));
const settledYet = async (p: Promise<unknown>) => {
  let done = false;
  void p.then(() => (done = true));
  await tick();
  return done;
};

it('answers at once while few sends are under way; beyond the backlog, once one of them ends', async () => {
  const { open, send } = heldSends();
  const announce = backpressured(send, { backlog: 2, maxWaitMs: 60_000 });
  const errors: unknown[] = [];
  const onError = (err: unknown) => void errors.push(err);
  expect(await settledYet(announce(1, onError))).toBe(true);
  expect(await settledYet(announce(2, onError))).toBe(true);
  const third = announce(3, onError);
  expect(await settledYet(third)).toBe(false);
  expect([...open.keys()]).toEqual([1, 2]); // not sent before its turn either

  open.get(1)!(new Error('receiver down')); // a failed send ends too, and is reported
  expect(await settledYet(third)).toBe(true);
  expect([...open.keys()]).toEqual([1, 2, 3]);
  expect(errors).toEqual([new Error('receiver down')]);
});

it('never holds an answer longer than maxWaitMs, however slow the sends', async () => {
  const { open, send } = heldSends();
  const announce = backpressured(send, { backlog: 1, maxWaitMs: 50 });
  await announce(1, () => undefined);
  const t0 = Date.now();
  await announce(2, () => undefined);
  expect(Date.now() - t0).toBeGreaterThanOrEqual(45);
  expect([...open.keys()]).toEqual([1, 2]);
  // The one that timed out left the queue: the next end lets a newcomer through at once.
  const third = announce(3, () => undefined);
  open.get(1)!();
  expect(await settledYet(third)).toBe(true);
});
