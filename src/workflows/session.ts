/**
 * sessionWorkflow: one build of a suite. Started by the suite at its turn (or earlier, to
 * retry `received`, and then it waits for `go`; or stopped while it waited); makes sure
 * `received` went out (the API sends it first), builds (see building.ts), records the outcome and
 * tells the suite it is done, then pushes when it passed, chats and e-mails, sends `stop` (after
 * those, or after postBuildWaitMs if they take longer) and waits for its webhook deliveries.
 * A `stop` signal ends it whether it is queued or building; `squashed` while it is queued. A
 * plan's part (input.part) skips the queue: its parent holds the suite's turn.
 */
import { CancellationScope, condition, getExternalWorkflowHandle, isCancellation, log, setHandler, uuid4, workflowInfo } from '@temporalio/workflow';
import { emptyCounts } from '../core/counts';
import { squashReason } from '../core/squash';
import { buildPayload, queuedSnapshot, type SessionSnapshot } from '../core/payload';
import type { EventName } from '../core/types';
import { build, type Emit, type Outcome, type SessionProfile, type SessionResult } from './building';
import { openCommitStatuses } from './commitStatus';
import { BuildDeadline } from './deadline';
import { openDeliveryLanes } from './deliveryLanes';
import { notify, postBuildHook, pushIfPassed } from './postBuild';
import { records } from './proxies';
import { idsOf } from '../core/workflowIds';
import { buildDoneSignal, goSignal, partDoneSignal, squashedSignal, stopSignal, type SessionWorkflowInput } from './signals';
import { failureMessage, now, setStatus } from './status';

export async function sessionWorkflow(input: SessionWorkflowInput): Promise<SessionResult> {
  /**
   * The build is over: its suite's queue moves on. A plan's part has no turn of its own; it
   * tells its parent its outcome instead (`result`, once recorded), before its deliveries drain.
   */
  const tellSuite = async (result?: SessionResult) => {
    if (!input.part) {
      await getExternalWorkflowHandle(idsOf(workflowInfo().workflowId).suite(input.suiteId)).signal(buildDoneSignal, { sessionId: input.sessionId });
      return;
    }
    const parent = workflowInfo().parent;
    if (!result || !parent) return;
    // A parent that is gone has nobody to sum up for; one that lives also sees this part's end.
    await getExternalWorkflowHandle(parent.workflowId)
      .signal(partDoneSignal, { sessionId: input.sessionId, status: result.status, counts: result.counts })
      .catch((err: unknown) => log.info('plan parent not told of its part', { session: input.sessionId, error: failureMessage(err) }));
  };
  const ctx = await records.loadSession(input.sessionId).catch(async (err: unknown) => {
    // No such session (its trigger's transaction failed after the enqueue): the suite must
    // not wait for it.
    await tellSuite();
    throw err;
  });
  if (ctx.status !== undefined && ctx.status !== 'queued') {
    // Ended already (CI squash ended it in a batch) and enqueued again: nothing to build.
    await tellSuite();
    return { status: ctx.status, counts: emptyCounts() };
  }
  const snap: SessionSnapshot = queuedSnapshot({ ci_received_at: ctx.receivedAt, queue_first_seen_at: input.queuedAt ?? now() }, input.stoppedBy ?? null);
  const lanes = openDeliveryLanes(ctx.webhookIds, ctx.sessionId, ctx.settings.webhookRetry);
  const statuses = openCommitStatuses(ctx);
  // Until the build chooses a profile (and for a plan's parent, which runs none of its own),
  // the session names the one it was queued with.
  const queuedProfile: SessionProfile = { name: ctx.profileName, workers: ctx.workers };
  const emit: Emit = (event: EventName, profile?: SessionProfile) => {
    const named = profile ?? queuedProfile;
    lanes.push(() => buildPayload(event, { ...ctx, profileName: named.name, workers: named.workers }, snap, uuid4(), new Date()));
    // The tests start: the commit's status on the hosting site says it builds. A plan's parent
    // emits its `test` without a profile (building.ts runPlan): its status sums up its parts'.
    if (event === 'test') statuses?.running(snap, profile ? profile.name : null);
  };

  let allowed = input.part !== undefined || input.go === true;
  let squashedInto: number | null = null;
  let finished = false;
  const buildScope = new CancellationScope();
  const deadline = new BuildDeadline(ctx.deadlineMinutes ?? null);
  setHandler(goSignal, () => {
    allowed = true;
  });
  setHandler(squashedSignal, ({ into }) => {
    if (!allowed) squashedInto ??= into;
  });
  setHandler(stopSignal, ({ stoppedBy }) => {
    if (finished || snap.stoppedBy || deadline.passed) return;
    snap.stoppedBy = stoppedBy;
    buildScope.cancel();
  });

  emit('received');
  await condition(() => allowed || squashedInto !== null || snap.stoppedBy !== null);

  let outcome: Outcome = { reason: null, profile: null, builtCommit: null, tree: null };
  const ran = allowed && !snap.stoppedBy;
  if (ran) {
    snap.timing.queue_first_allowed_at = now();
    // Past the suite's deadline the build is cancelled as by a stop, and ends in `error`.
    deadline.start(() => buildScope.cancel());
    outcome = await buildScope.run(() => build(ctx, snap, emit, input.part)).catch((err: unknown) => {
      // A stop that came before the build had anything to show.
      if (!isCancellation(err)) throw err;
      return outcome;
    });
    deadline.end();
  }
  if (snap.stoppedBy) {
    setStatus(snap, 'stopped');
    outcome.reason = `stopped by ${snap.stoppedBy}`;
  } else if (deadline.passed) {
    setStatus(snap, 'error');
    outcome.reason = deadline.reason;
  } else if (!allowed) {
    setStatus(snap, 'skipped');
    outcome.reason = squashReason(squashedInto!);
  }
  finished = true; // the status is final: a stop from now on has nothing to stop
  const profile = outcome.profile ?? queuedProfile;

  // Whatever happened, and even if a stop arrives now, the records are written and the suite
  // moves on; the post-build steps and the deliveries below must never hold it up.
  await CancellationScope.nonCancellable(async () => {
    try {
      snap.timing.done = now();
      await records.recordFinish({
        sessionId: ctx.sessionId,
        status: snap.status,
        reason: outcome.reason,
        profileName: profile.name,
        workers: profile.workers,
        commitId: snap.commitId,
        committers: [...snap.committers],
        counts: snap.counts,
        timing: snap.timing,
        stoppedBy: snap.stoppedBy,
        builtCommit: outcome.builtCommit,
      });
    } finally {
      await tellSuite({ status: snap.status, counts: snap.counts });
    }
  });
  // The outcome on the hosting site, as recorded (push, chat and e-mail never change it).
  statuses?.finished(snap, profile.name, outcome.reason);

  // Spec §1 steps 4–6 for builds that ran (a plan's parts are told by their parent's): push
  // when it passed, then chat, then e-mail, each under its own retry policy. `stop` waits for
  // them at most postBuildWaitMs: a mail server that keeps failing must not hold it (it held
  // `stop` for 12 s); they go on after it, and their outcome is in the report either way.
  let stepsDone = false;
  const steps = CancellationScope.nonCancellable(async () => {
    if (!ran || input.part) return;
    if (outcome.tree) await pushIfPassed(ctx, snap, outcome.tree);
    await postBuildHook(ctx, snap, outcome);
    if (snap.status !== 'skipped') await notify(ctx, snap, outcome.reason, profile.name);
  }).finally(() => {
    stepsDone = true;
  });
  await CancellationScope.nonCancellable(() => condition(() => stepsDone, ctx.settings.postBuildWaitMs));

  emit('stop', profile);
  await steps;
  await lanes.drain();
  await statuses?.drain();
  return { status: snap.status, counts: snap.counts };
}
