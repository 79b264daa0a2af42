import type { Client } from '@temporalio/client';
import type { Config } from '../config';
import type { EnqueueRequest, Intake } from '../core/intake';
import type { WorkflowIds } from '../core/workflowIds';
import { enqueueManySignal, recordManySignal, type SuiteWorkflowInput } from '../workflows/signals';
import { SluiceBranch, SluiceRepo } from '../workflows/searchAttributes';

/** Sessions per signal at most: a signal's payload stays small. */
const MAX_BATCH = 200;

/** Sends one batch, all of one suite, in order: signalSuite, with whatever deadline the caller wants. */
export type SendBatch = (reqs: [EnqueueRequest, ...EnqueueRequest[]]) => Promise<void>;

export interface EnqueueOptions {
  /** A request still waiting for its batch after this long is dropped and rejected (its caller has given up). */
  timeoutMs?: number;
}

/**
 * Hands sessions to their suite workflow, starting the suite if it is not running. Durable once
 * the promise resolves: Temporal holds the signal even if every worker is down.
 *
 * Group commit: while one call for a suite is under way, the sessions that arrive for it wait
 * and go together, in arrival order, in the next call. One trigger alone waits for nothing;
 * a burst on one branch costs Temporal (and the suite's workflow tasks) one call per batch
 * instead of one per trigger. Each caller hears how its own batch went.
 */
export function createEnqueuer(send: SendBatch, opts: EnqueueOptions = {}): (req: EnqueueRequest) => Promise<void> {
  return createBatcher((req) => req.suiteId, send, opts);
}

/** Group commit of anything sent in batches per key (a suite's queue, a repository's intake). */
export function createBatcher<T>(keyOf: (item: T) => number, send: (batch: [T, ...T[]]) => Promise<void>, opts: EnqueueOptions = {}): (item: T) => Promise<void> {
  interface Waiter {
    req: T;
    resolve(): void;
    reject(err: unknown): void;
    gone: boolean;
  }
  const queues = new Map<number, Waiter[]>();

  async function drain(key: number, queue: Waiter[]): Promise<void> {
    for (;;) {
      const batch = queue.splice(0, MAX_BATCH).filter((w) => !w.gone);
      if (batch.length === 0) break;
      try {
        await send(batch.map((w) => w.req) as [T, ...T[]]);
        for (const w of batch) w.resolve();
      } catch (err) {
        for (const w of batch) w.reject(err);
      }
    }
    queues.delete(key);
  }

  return (req: T) =>
    new Promise<void>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const waiter: Waiter = {
        req,
        resolve: () => (clearTimeout(timer), resolve()),
        reject: (err) => (clearTimeout(timer), reject(err)),
        gone: false,
      };
      if (opts.timeoutMs !== undefined) {
        timer = setTimeout(() => {
          // Not sent yet: it never will be. Already in a call: that call may still land, as
          // any call that times out (api/acceptTrigger.ts says what follows).
          waiter.gone = true;
          reject(new Error(`no answer within ${opts.timeoutMs} ms`));
        }, opts.timeoutMs);
      }
      const key = keyOf(req);
      const queue = queues.get(key);
      if (queue) {
        queue.push(waiter);
        return;
      }
      const fresh = [waiter];
      queues.set(key, fresh);
      void drain(key, fresh);
    });
}

/** One signal-with-start of the suite, carrying `reqs` (all of that suite) in order. */
export async function signalSuite(client: Client, config: Config, ids: WorkflowIds, reqs: [EnqueueRequest, ...EnqueueRequest[]]): Promise<void> {
  const first = reqs[0];
  const label = `${first.repoLabel} @ ${first.branch}`;
  const input: SuiteWorkflowInput = { suiteId: first.suiteId, label, historyLimit: config.suiteHistoryLimit, livenessMs: config.suiteLivenessMs };
  await client.workflow.signalWithStart('suiteWorkflow', {
    workflowId: ids.suite(first.suiteId),
    taskQueue: config.taskQueue,
    args: [input],
    signal: enqueueManySignal,
    signalArgs: [
      reqs.map((r) => ({
        ...(r.intake ? { intake: r.intake } : { sessionId: r.sessionId }),
        queuePosition: r.queuePosition,
        ...(r.traceparent ? { traceparent: r.traceparent } : {}),
      })),
    ],
    staticSummary: label,
    typedSearchAttributes: [
      { key: SluiceRepo, value: first.repoLabel },
      { key: SluiceBranch, value: first.branch },
    ],
  });
}

/** One signal-with-start of a repository's intake workflow, carrying `intakes` (all of that repository) in order. */
export async function signalIntake(client: Client, config: Config, ids: WorkflowIds, intakes: [Intake, ...Intake[]]): Promise<void> {
  const repoId = intakes[0].repoId;
  await client.workflow.signalWithStart('intakeWorkflow', {
    workflowId: ids.intake(repoId),
    taskQueue: config.taskQueue,
    args: [{ repoId }],
    signal: recordManySignal,
    signalArgs: [intakes],
    staticSummary: `repository ${repoId}: records of triggers that build nothing`,
  });
}
