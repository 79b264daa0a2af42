/**
 * A checkout on a build queue that no runner serves would wait forever (a trigger's `queue`
 * naming a pool that was never started, or whose runners are all gone). While it waits, the
 * workflow asks every so often whether any runner polls the queue; once none has for
 * `runnerWaitMs` in a row, the checkout is cancelled and the build ends in `error`, saying so.
 * Runners that are only busy keep the queue served (temporal/presence.ts), so a build waits for
 * them as long as it takes.
 */
import { ApplicationFailure, CancellationScope, sleep } from '@temporalio/workflow';
import type { SessionContext } from '../core/session';
import { records } from './proxies';

/** How often the queue is looked at while work waits on it, at most. */
const CHECK_MS = 30_000;

export async function whileServed<T>(ctx: SessionContext, work: () => Promise<T>): Promise<T> {
  const waitMs = ctx.settings.runnerWaitMs;
  if (!waitMs) return work();
  const every = Math.max(100, Math.min(CHECK_MS, Math.floor(waitMs / 4)));
  const working = new CancellationScope();
  const watching = new CancellationScope();
  const result = working.run(work);
  const watch = watching.run(async (): Promise<never> => {
    let unserved = 0;
    for (;;) {
      await sleep(every);
      // Temporal not answering is no proof of an empty queue: the build waits, as it would have.
      if (await records.queueServed(ctx.buildQueue).catch(() => true)) unserved = 0;
      else if ((unserved += every) >= waitMs) {
        throw ApplicationFailure.nonRetryable(
          `no runner serves the build queue "${ctx.buildQueue}": none polled it for ${Math.round(waitMs / 1000)} s ` +
            '(start one with SLUICE_BUILD_QUEUE or SLUICE_EXTRA_BUILD_QUEUES naming it)',
          'NoRunner',
        );
      }
    }
  });
  // Whichever loses is cancelled; its rejection is expected and not to be reported.
  result.catch(() => undefined);
  watch.catch(() => undefined);
  try {
    return await Promise.race([result, watch]);
  } catch (err) {
    working.cancel();
    throw err;
  } finally {
    watching.cancel();
  }
}
