/**
 * sessionWorkflow: one build of a suite. Started by the suite as soon as the trigger is queued;
 * sends `received`, waits for its turn (`go`), builds (checkout → discover → tests), tells the
 * suite it is done, then sends `stop` and waits for its webhook deliveries to finish. A `stop`
 * signal ends it whether it is queued or building; a `squashed` one while it is queued.
 */
import {
  ActivityCancellationType,
  CancellationScope,
  CancelledFailure,
  condition,
  getExternalWorkflowHandle,
  isCancellation,
  proxyActivities,
  setHandler,
  upsertSearchAttributes,
  uuid4,
} from '@temporalio/workflow';
import type { Activities, CheckoutResult, SessionContext } from '../activities/types';
import { countTests, emptyCounts, finalStatus, isFailure } from '../core/counts';
import { buildPayload, epochSeconds, type SessionSnapshot } from '../core/payload';
import type { EventName, SessionStatus, TestStatus } from '../core/types';
import { SluiceStatus } from '../temporal/searchAttributes';
import { openDeliveryLanes } from './deliveryLanes';
import {
  buildDoneSignal,
  goSignal,
  squashedSignal,
  stopSignal,
  suiteWorkflowId,
  type SessionWorkflowInput,
} from './signals';

const records = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  // Bounded: the API commits the session row just after it enqueues, so a first loadSession may
  // find nothing yet; a row that never appears (the commit failed) ends the workflow instead.
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds', maximumAttempts: 20 },
});

/** What the build part decided, beyond what the snapshot carries. */
interface Outcome {
  reason: string | null;
  builtCommit: string | null;
  checkout: CheckoutResult | null;
}

export async function sessionWorkflow(input: SessionWorkflowInput): Promise<SessionStatus> {
  const ctx = await records.loadSession(input.sessionId);
  const snap: SessionSnapshot = {
    status: 'queued',
    counts: emptyCounts(),
    commitId: null,
    committers: [],
    timing: { ci_received_at: ctx.receivedAt, queue_first_seen_at: now() },
    stoppedBy: null,
  };
  const lanes = openDeliveryLanes(ctx.webhookIds, ctx.sessionId, ctx.settings.webhookRetry);
  const emit = (event: EventName) => lanes.push(() => buildPayload(event, ctx, snap, uuid4(), new Date()));

  let allowed = false;
  let squashedInto: number | null = null;
  let finished = false;
  const buildScope = new CancellationScope();
  setHandler(goSignal, () => {
    allowed = true;
  });
  setHandler(squashedSignal, ({ into }) => {
    if (!allowed) squashedInto ??= into;
  });
  setHandler(stopSignal, ({ stoppedBy }) => {
    if (finished || snap.stoppedBy) return;
    snap.stoppedBy = stoppedBy;
    buildScope.cancel();
  });

  emit('received');
  await condition(() => allowed || squashedInto !== null || snap.stoppedBy !== null);

  let outcome: Outcome = { reason: null, builtCommit: null, checkout: null };
  if (allowed && !snap.stoppedBy) {
    snap.timing.queue_first_allowed_at = now();
    outcome = await buildScope.run(() => build(ctx, snap, emit)).catch((err: unknown) => {
      // A stop that came before the build had anything to show.
      if (!isCancellation(err)) throw err;
      return outcome;
    });
  }
  if (snap.stoppedBy) {
    setStatus(snap, 'stopped');
    outcome.reason = `stopped by ${snap.stoppedBy}`;
  } else if (!allowed) {
    setStatus(snap, 'skipped');
    outcome.reason = `squashed into session ${squashedInto} (CI squash builds only the newest queued trigger)`;
  }
  finished = true; // the status is final: a stop from now on has nothing to stop

  // Whatever happened, and even if a stop arrives now, the records are written and the suite
  // moves on; the deliveries below must never hold it up.
  await CancellationScope.nonCancellable(async () => {
    try {
      if (outcome.checkout) await cleanup(outcome.checkout);
      snap.timing.done = now();
      await records.recordFinish({
        sessionId: ctx.sessionId,
        status: snap.status,
        reason: outcome.reason,
        commitId: snap.commitId,
        committers: [...snap.committers],
        counts: snap.counts,
        timing: snap.timing,
        stoppedBy: snap.stoppedBy,
        builtCommit: outcome.builtCommit,
      });
    } finally {
      await getExternalWorkflowHandle(suiteWorkflowId(input.suiteId)).signal(buildDoneSignal, { sessionId: ctx.sessionId });
    }
  });

  emit('stop');
  await lanes.drain();
  return snap.status;
}

type Emit = (event: EventName) => void;

/** Checkout, discovery and tests. Runs in a scope that a `stop` cancels. */
async function build(ctx: SessionContext, snap: SessionSnapshot, emit: Emit): Promise<Outcome> {
  const outcome: Outcome = { reason: null, builtCommit: null, checkout: null };
  setStatus(snap, 'running');
  const { lastBuiltCommit } = await records.recordStart(ctx.sessionId, snap.timing);

  const remote = proxyActivities<Activities>({
    taskQueue: ctx.buildQueue,
    startToCloseTimeout: '30 minutes',
    heartbeatTimeout: '1 minute',
    summary: 'checkout',
    // checkout throws non-retryable for what retrying cannot mend (wrong key, unknown commit).
    retry: { maximumAttempts: 3, initialInterval: '2 seconds' },
  });
  const done: TestStatus[] = [];
  let tests: string[] = [];

  try {
    snap.timing.workers_assigned_at = now();
    emit('start');
    const checkout = await remote.checkout({ sessionId: ctx.sessionId, repoId: ctx.repoId, branch: ctx.branch, head: ctx.head });
    outcome.checkout = checkout;
    snap.commitId = checkout.commitId;
    snap.committers = checkout.committers;
    snap.timing.setup = now();

    if (!ctx.force && lastBuiltCommit === checkout.commitId) {
      setStatus(snap, 'skipped');
      outcome.reason = `no new commits since the last build (${checkout.commitId.slice(0, 12)}); trigger with force to build anyway`;
      return outcome;
    }
    // The checkout lives on one worker's disk: what reads it must run on that worker.
    const local = proxyActivities<Activities>({
      taskQueue: checkout.workerQueue,
      scheduleToStartTimeout: '5 minutes',
      startToCloseTimeout: ctx.settings.testTimeoutMs + 60_000,
      heartbeatTimeout: '30 seconds',
      // On stop, wait until the test's process group is dead before the suite moves on.
      cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
      retry: { maximumAttempts: 1 },
    });
    tests = await local.discoverTests({ workdir: checkout.workdir, pattern: ctx.testPattern });
    snap.counts = countTests(tests.length, 0, []);
    snap.timing.exec = now();
    emit('test');
    await runTests(ctx, snap, local, checkout.workdir, tests, done, emit);
    snap.timing.post_build = now();
    outcome.builtCommit = checkout.commitId;
    if (tests.length === 0) {
      setStatus(snap, 'error');
      outcome.reason = `no file matches the test pattern ${JSON.stringify(ctx.testPattern)}`;
    } else {
      setStatus(snap, finalStatus(done));
    }
  } catch (err) {
    if (isCancellation(err)) {
      snap.counts = countTests(tests.length, 0, done); // what was cut short counts as not started
      return outcome; // stopped: the caller says so
    }
    setStatus(snap, 'error');
    outcome.reason = failureMessage(err);
  }
  return outcome;
}

/** Runs the test files, `ctx.workers` at a time, keeping counts live and sending `first-fail` once. */
async function runTests(
  ctx: SessionContext,
  snap: SessionSnapshot,
  local: Activities,
  workdir: string,
  tests: string[],
  done: TestStatus[],
  emit: Emit,
): Promise<void> {
  let next = 0;
  let running = 0;
  let failedOnce = false;
  const lane = async () => {
    while (next < tests.length) {
      const path = tests[next++]!;
      running += 1;
      snap.counts = countTests(tests.length, running, done);
      let result: TestStatus;
      try {
        ({ status: result } = await local.runTest({
          sessionId: ctx.sessionId,
          workdir,
          path,
          command: ctx.testCommand,
          env: ctx.env,
          timeoutMs: ctx.settings.testTimeoutMs,
        }));
      } catch (err) {
        if (isCancellation(err)) throw err;
        result = 'error'; // the worker died or lost the activity: the file did not run properly
      } finally {
        running -= 1;
      }
      // A stop asked for while this test ran: its result is not the build's.
      if (CancellationScope.current().consideredCancelled) throw new CancelledFailure('stopped');
      done.push(result);
      snap.counts = countTests(tests.length, running, done);
      if (isFailure(result) && !failedOnce) {
        failedOnce = true;
        emit('first-fail');
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(ctx.workers, tests.length) }, lane));
}

async function cleanup({ workdir, workerQueue }: CheckoutResult): Promise<void> {
  const { cleanupWorkspace } = proxyActivities<Activities>({
    taskQueue: workerQueue,
    scheduleToStartTimeout: '1 minute',
    startToCloseTimeout: '5 minutes',
  });
  await cleanupWorkspace(workdir).catch(() => undefined); // a worker that is gone took its disk with it
}

function setStatus(snap: SessionSnapshot, status: SessionStatus): void {
  snap.status = status;
  upsertSearchAttributes([{ key: SluiceStatus, value: status }]);
}

/** Workflow time (deterministic), in the seconds-with-fraction of spec §2 `timing`. */
function now(): number {
  return epochSeconds(Date.now());
}

/** The most specific message of a failure chain (ActivityFailure → ApplicationFailure → ...). */
function failureMessage(err: unknown): string {
  let e = err as { message?: string; cause?: unknown } | undefined;
  while (e && e.cause) e = e.cause as typeof e;
  return e?.message || 'unknown error';
}
