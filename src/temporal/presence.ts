/**
 * Whether a build queue has a runner, busy or not (workflows/runnerWatch.ts).
 *
 * A runner polls its build queue only while it has a free slot, and Temporal lists a poller
 * for five minutes after its last poll. A runner whose every slot ran a long build would drop
 * off its queue's pollers, and a checkout waiting behind it would be failed for want of a
 * runner. So each runner also polls a presence queue per build queue it serves: nothing is
 * ever sent there, its one poller is never busy, and it is listed for as long as the runner
 * process lives.
 */
import type { NativeConnection } from '@temporalio/worker';
import { presenceQueue } from '../core/queues';
import { Worker } from '@temporalio/worker';


/** Runner side: polls the presence queue of `buildQueue` until shut down. */
export function createPresenceWorker(connection: NativeConnection, namespace: string, buildQueue: string): Promise<Worker> {
  return Worker.create({
    connection,
    namespace,
    taskQueue: presenceQueue(buildQueue),
    // Never scheduled; a worker needs something to serve.
    activities: { present: async () => undefined },
    maxConcurrentActivityTaskExecutions: 1,
    maxConcurrentActivityTaskPolls: 1,
  });
}
