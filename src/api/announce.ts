/**
 * The API's `received` (delivery/received.ts), sent after the trigger is accepted, and:
 *
 * - Backpressure. Under a burst the API accepts triggers faster than it can send their
 *   `received`, and the sends queue up behind new triggers: `received` then came seconds after
 *   its trigger's answer. So at most `backlog` sends are under way; a trigger accepted beyond
 *   that is answered once one of them ends (or after `maxWaitMs`, so that a slow receiver never
 *   holds a provider's hook anywhere near its own timeout). A burst is then acknowledged at the
 *   pace `received` goes out, and each `received` follows its answer closely.
 * - A receiver that did not get it: the session waits in its suite's queue with no workflow yet,
 *   so the suite is asked to start it now, and its delivery lane retries on schedule instead of
 *   at the session's turn.
 */
import type { Client } from '@temporalio/client';
import type { Config } from '../config';
import type { DeliverDeps } from '../delivery/attempt';
import { announceReceived } from '../delivery/received';
import { retryReceived } from '../temporal/enqueue';
import type { WorkflowIds } from '../temporal/ids';

/** Starts sending `received` of an accepted session; resolves when its trigger may be answered. */
export type Announce = (sessionId: number, onError: (err: unknown) => void) => Promise<void>;

export interface AnnounceLimits {
  /** Sends under way at most before a trigger's answer waits. */
  backlog: number;
  /** The longest an answer waits for room. */
  maxWaitMs: number;
}

export const DEFAULT_ANNOUNCE_LIMITS: AnnounceLimits = { backlog: 8, maxWaitMs: 2_000 };

export function announcer(deps: DeliverDeps & { config: Config }, client: Client, ids: WorkflowIds, limits = DEFAULT_ANNOUNCE_LIMITS): Announce {
  return backpressured(async (sessionId) => {
    const { suiteId, settled } = await announceReceived(deps, sessionId);
    if (!settled) await retryReceived(client, ids, suiteId, sessionId);
  }, limits);
}

/** `send` run in the background, at most `limits.backlog` at once before an admission waits. */
export function backpressured(send: (sessionId: number) => Promise<void>, limits: AnnounceLimits): Announce {
  let underWay = 0;
  const waiting: (() => void)[] = [];
  const room = () =>
    new Promise<void>((resolve) => {
      const go = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        const at = waiting.indexOf(go);
        if (at >= 0) waiting.splice(at, 1);
        resolve();
      }, limits.maxWaitMs);
      waiting.push(go);
    });
  return async (sessionId, onError) => {
    if (underWay >= limits.backlog) await room();
    underWay += 1;
    void send(sessionId)
      .catch(onError)
      .finally(() => {
        underWay -= 1;
        waiting.shift()?.();
      });
  };
}
