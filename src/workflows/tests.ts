/**
 * Running one profile's tests on the checkout's worker: discover the files, run them
 * `workers` at a time keeping counts live, send `first-fail` once, collect JUnit results.
 * Workflow code only.
 */
import { CancellationScope, CancelledFailure, isCancellation, log } from '@temporalio/workflow';
import type { Activities, CheckoutResult, SessionContext } from '../activities/types';
import { countTests, finalStatus, isFailure } from '../core/counts';
import type { SessionSnapshot } from '../core/payload';
import type { ResolvedProfile } from '../core/profiles';
import type { EventName, TestStatus } from '../core/types';
import { failureMessage, now, setStatus } from './status';

export interface ProfileRun {
  /** Set when the run ended in error for a reason of its own (e.g. no file matched). */
  reason: string | null;
}

export async function runProfile(
  ctx: SessionContext,
  snap: SessionSnapshot,
  on: Activities,
  checkout: CheckoutResult,
  profile: ResolvedProfile,
  emit: (event: EventName) => void,
): Promise<ProfileRun> {
  const tests = await on.discoverTests({ workdir: checkout.workdir, pattern: profile.test_pattern });
  const done: TestStatus[] = [];
  snap.counts = countTests(tests.length, 0, done);
  snap.timing.exec = now();
  emit('test');

  let next = 0;
  let running = 0;
  let failedOnce = false;
  // Profile env under the trigger's env; the activity adds the repository's secrets over both.
  const env = { ...profile.env, ...ctx.env };
  const lane = async () => {
    while (next < tests.length) {
      const path = tests[next++]!;
      running += 1;
      snap.counts = countTests(tests.length, running, done);
      let result: TestStatus;
      try {
        ({ status: result } = await on.runTest({
          sessionId: ctx.sessionId,
          repoId: ctx.repoId,
          workdir: checkout.workdir,
          path,
          command: profile.test_command,
          env,
          timeoutMs: ctx.settings.testTimeoutMs,
        }));
      } catch (err) {
        if (isCancellation(err)) throw err;
        // The worker died or lost the activity: the file did not run properly, which is the
        // file's verdict (`error`); the other files still run.
        log.warn('test file did not run', { sessionId: ctx.sessionId, path, error: failureMessage(err) });
        result = 'error';
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
  try {
    await Promise.all(Array.from({ length: Math.min(profile.workers, tests.length) }, lane));
  } catch (err) {
    if (isCancellation(err)) snap.counts = countTests(tests.length, 0, done); // cut short: not started
    throw err;
  }
  snap.timing.post_build = now();

  if (profile.junit_pattern) {
    await on.collectResults({ sessionId: ctx.sessionId, workdir: checkout.workdir, pattern: profile.junit_pattern });
    snap.timing.artifact_collect = now();
  }
  if (tests.length === 0) {
    setStatus(snap, 'error');
    return { reason: `no file matches the test pattern ${JSON.stringify(profile.test_pattern)}` };
  }
  setStatus(snap, finalStatus(done));
  return { reason: null };
}
