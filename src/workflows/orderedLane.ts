/**
 * One lane of sends in order (workflow code): each item goes out after the previous one was sent
 * or given up, a failure is `failed`'s to log and the lane goes on. A session's commit statuses
 * are one lane, each webhook's deliveries another (commitStatus.ts, deliveryLanes.ts).
 */
import { condition } from '@temporalio/workflow';

export interface OrderedLane<T> {
  push(item: T): void;
  /** Closes the lane; resolves once everything pushed was sent or given up. */
  drain(): Promise<void>;
}

export function orderedLane<T>(send: (item: T) => Promise<unknown>, failed: (item: T, err: unknown) => void): OrderedLane<T> {
  const pending: T[] = [];
  let closed = false;
  const done = (async () => {
    for (;;) {
      await condition(() => pending.length > 0 || closed);
      if (pending.length === 0) return;
      const next = pending.shift()!;
      try {
        await send(next);
      } catch (err) {
        failed(next, err);
      }
    }
  })();
  return {
    push: (item) => void pending.push(item),
    async drain() {
      closed = true;
      await done;
    },
  };
}
