/**
 * Running one profile's tests, spread over runners (workflow code only): a runner writes the
 * session's list of test files to PostgreSQL; then `workers` lanes, each a long activity on the
 * build queue with its own checkout, take files from that list until it is done (queue mode,
 * build/tests/lane.ts). Per file nothing crosses Temporal, so a build of thousands of
 * files keeps a history of a few dozen events; the first failing file reaches the workflow as
 * one signal, and the counts come from the list, exact whichever runner ran what.
 */
import { CancellationScope, isCancellation, log, setHandler, workflowInfo } from '@temporalio/workflow';
import type { SessionContext, TreeRef } from '../activities/types';
import { countTests } from '../core/counts';
import type { SessionSnapshot } from '../core/payload';
import type { ResolvedProfile } from '../core/profiles';
import type { Counts, EventName, SessionStatus } from '../core/types';
import { lanes, records, runner } from './proxies';
import { firstFailSignal } from './signals';
import { failureMessage, now, setStatus } from './status';

export interface ProfileRun {
  /** Set when the run ended in error for a reason of its own (e.g. no file matched). */
  reason: string | null;
}

export async function runProfile(
  ctx: SessionContext,
  snap: SessionSnapshot,
  tree: TreeRef,
  profile: ResolvedProfile,
  /** The size of the list when the checkout made it already (CheckoutResult.listed). */
  listed: number | null,
  /** Sends an event; `runners` is what its payload's `workers` says. */
  emit: (event: EventName, runners: number) => void,
): Promise<ProfileRun> {
  const { total } =
    listed !== null ? { total: listed } : await runner(ctx).queueTests({ tree, suiteId: ctx.suiteId, profileName: profile.name, pattern: profile.test_pattern });
  // One lane per runner, never more lanes than files (the runner that listed none counts as one).
  const runners = Math.min(profile.workers, Math.max(total, 1));
  snap.counts = countTests(total, 0, []);
  snap.timing.exec = now();
  emit('test', runners);
  if (total === 0) {
    snap.timing.post_build = now();
    setStatus(snap, 'error');
    return { reason: `no file matches the test pattern ${JSON.stringify(profile.test_pattern)}` };
  }

  let failedOnce = false;
  const firstFail = (counts: Counts) => {
    if (failedOnce) return;
    failedOnce = true;
    snap.counts = counts;
    emit('first-fail', runners);
  };
  setHandler(firstFailSignal, ({ counts }) => {
    // A failure recorded as a stop came in is not the build's: its events end with `stop`.
    if (!snap.stoppedBy) firstFail(counts);
  });

  // Profile env under the trigger's env; the runner adds the repository's secrets over both
  // (none for a pull request).
  const env = { ...profile.env, ...ctx.env };
  const { runLane } = lanes(ctx);
  const ended = await Promise.all(
    Array.from({ length: runners }, (_, lane) =>
      runLane({
        tree,
        lane,
        workflowId: workflowInfo().workflowId,
        command: profile.test_command,
        env,
        secrets: ctx.trust.secrets,
        timeoutMs: ctx.settings.testTimeoutMs,
        junitPattern: profile.junit_pattern,
      }).then(
        () => null,
        (err: unknown) => err,
      ),
    ),
  );
  // Whatever the lanes came to, the counts are the list's.
  const counts = await CancellationScope.nonCancellable(() => records.testCounts(ctx.sessionId));
  snap.counts = { ...counts, started: 0, notstarted: counts.notstarted + counts.started };
  const cancelled = ended.find((e) => e !== null && isCancellation(e));
  if (cancelled) throw cancelled;
  snap.timing.post_build = now();
  if (profile.junit_pattern) snap.timing.artifact_collect = now();

  const failures = ended.filter((e) => e !== null);
  for (const err of failures) log.warn('test lane failed', { sessionId: ctx.sessionId, error: failureMessage(err) });
  // The signal was lost (the runner could not reach Temporal): `first-fail` still precedes `stop`.
  if (!failedOnce && counts.failed + counts.error > 0) firstFail(snap.counts);
  const status: SessionStatus = counts.failed > 0 ? 'failed' : counts.error > 0 ? 'error' : 'passed';
  const unrun = counts.notstarted + counts.started;
  if (unrun > 0) {
    // Every lane gave up (each retried its runner's loss many times): say why, not just "error".
    setStatus(snap, 'error');
    const why = failures.length > 0 ? failureMessage(failures[0]) : 'the lanes ended early';
    return { reason: `${unrun} of ${total} test files did not run: ${why}` };
  }
  setStatus(snap, status);
  return { reason: null };
}
