/**
 * Group commit of enqueues (temporal/enqueue.ts createEnqueuer). The batch sender stands in
 * for Temporal's signal-with-start here, which e2e tests exercise for real (burst.test.ts);
 * what is checked is the batching itself: what goes together, in what order, and who hears what.
 */
import type { EnqueueRequest } from '../../src/core/intake';
import { createEnqueuer, type SendBatch } from '../../src/temporal/enqueue';

const req = (suiteId: number, sessionId: number): EnqueueRequest => ({ suiteId, sessionId, queuePosition: 'tail', repoLabel: 'acme/app', branch: 'master' });

/** A sender whose calls stay open until the test lets each one go. */
function heldSender() {
  const calls: { ids: number[]; finish(err?: Error): void }[] = [];
  const send: SendBatch = (reqs) =>
    new Promise<void>((resolve, reject) => calls.push({ ids: reqs.map((r) => r.sessionId!), finish: (err) => (err ? reject(err) : resolve()) }));
  return { calls, send };
}

const tick = () => new Promise((r) => setImmediate(r));

it('sends a lone request at once, and those that arrive meanwhile together, in arrival order, in the next call', async () => {
  const { calls, send } = heldSender();
  const enqueue = createEnqueuer(send);
  const first = enqueue(req(1, 10));
  await tick();
  expect(calls.map((c) => c.ids)).toEqual([[10]]);

  const later = [enqueue(req(1, 11)), enqueue(req(1, 12)), enqueue(req(1, 13))];
  await tick();
  expect(calls).toHaveLength(1); // one call at a time per suite
  calls[0]!.finish();
  await first;
  await tick();
  expect(calls.map((c) => c.ids)).toEqual([[10], [11, 12, 13]]);
  calls[1]!.finish();
  await Promise.all(later);
});

it('keeps suites apart: another suite does not wait for this one', async () => {
  const { calls, send } = heldSender();
  const enqueue = createEnqueuer(send);
  const a = enqueue(req(1, 20));
  const b = enqueue(req(2, 21));
  await tick();
  expect(calls.map((c) => c.ids)).toEqual([[20], [21]]);
  calls.forEach((c) => c.finish());
  await Promise.all([a, b]);
});

it('tells every caller of a failed batch, and only those', async () => {
  const { calls, send } = heldSender();
  const enqueue = createEnqueuer(send);
  const first = enqueue(req(1, 30));
  await tick();
  const batch = [enqueue(req(1, 31)), enqueue(req(1, 32))];
  calls[0]!.finish();
  await first;
  await tick();
  calls[1]!.finish(new Error('Temporal is unavailable'));
  for (const p of batch) await expect(p).rejects.toThrow('Temporal is unavailable');
  // The suite's queue is free again.
  const after = enqueue(req(1, 33));
  await tick();
  expect(calls.at(-1)!.ids).toEqual([33]);
  calls.at(-1)!.finish();
  await after;
});

it('drops a request whose caller gave up before its batch went out: it is never sent', async () => {
  const { calls, send } = heldSender();
  const enqueue = createEnqueuer(send, { timeoutMs: 50 });
  const first = enqueue(req(1, 40)).catch((err: Error) => err);
  await tick();
  const waited = enqueue(req(1, 41));
  await expect(waited).rejects.toThrow('no answer within 50 ms');
  calls[0]!.finish();
  await first;
  await tick();
  expect(calls.map((c) => c.ids)).toEqual([[40]]);
});
