/**
 * Running one profile's tests, spread over runners (workflow code only): a runner writes the
 * session's list of test files to PostgreSQL; then `workers` lanes, each a long activity on the
 * build queue with its own checkout, set their worker up (cache, packages, services, hooks:
 * steps/lifecycle.ts) and take files from that list until it is done (queue mode). No lane waits
 * for another: the first one set up starts the tests, and the others join as they get a runner's
 * slot and are set up, so a burst of builds can never hold every slot waiting for partners.
 * Per file nothing crosses Temporal, so a build of thousands of files keeps a history of a few
 * dozen events; the rendezvous (`test`) and the first failing file reach the workflow as one
 * signal each, and the counts come from the list, exact whichever runner ran what.
 *
 * A setup that fails ends the build in `error` once: the first lane to report it cancels the
 * others, their running tests too, and no test starts after it.
 */
import { CancellationScope, isCancellation, log, setHandler, workflowInfo } from '@temporalio/workflow';
import type { AffectedPlan, QueueTestsResult, RunLaneResult } from '../activities/types';
import type { ResolvedImage, SessionContext, TreeRef } from '../core/session';
import { cacheScopes, imageOf, type BuildSetup } from '../core/buildSetup';
import { countTests } from '../core/counts';
import type { SessionSnapshot } from '../core/payload';
import type { ResolvedProfile } from '../core/profiles';
import type { Counts, EventName, SessionStatus, Timing } from '../core/types';
import { resolveBuildImage } from './image';
import { lanes, records, runner } from './proxies';
import { firstFailSignal, workersReadySignal } from './signals';
import { failureMessage, now, setStatus } from './status';

export interface ProfileRun {
  /** Set when the run ended in error for a reason of its own (e.g. no file matched). */
  reason: string | null;
  /** A setup step failed: no test ran, so the commit does not count as built. */
  setupFailed?: boolean;
  /** The image its hooks and tests ran in, as resolved (the post_build hook runs there too). */
  image?: ResolvedImage;
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
  /** What each worker sets up before its tests. */
  setup: BuildSetup,
  /** Selection of affected files (issue 40), when the profile asks for it. */
  affected?: AffectedPlan,
): Promise<ProfileRun> {
  // The list and the image (a registry round trip) at once: neither needs the other.
  const imageName = imageOf(profile, setup);
  const [{ total, skipped = 0, mapping = false }, image] = await Promise.all([
    listed !== null
      ? ({ total: listed } as QueueTestsResult)
      : runner(ctx).queueTests({ tree, suiteId: ctx.suiteId, profileName: profile.name, pattern: profile.test_pattern, ...(affected ? { affected } : {}) }),
    imageName !== null ? resolveBuildImage(ctx, imageName) : undefined,
  ]);
  // One lane per runner, never more lanes than files (the runner that listed none counts as one).
  const runners = Math.min(profile.workers, Math.max(total, 1));
  snap.counts = { ...countTests(total, 0, []), skipped };
  if (total === 0 && skipped > 0) {
    // The change affects none of the test files: nothing to run, nothing failed.
    snap.timing.exec = now();
    emit('test', 0);
    snap.timing.post_build = now();
    setStatus(snap, 'passed');
    return { reason: null, image };
  }
  if (total === 0) {
    snap.timing.exec = now();
    emit('test', runners);
    snap.timing.post_build = now();
    setStatus(snap, 'error');
    return { reason: `no file matches the test pattern ${JSON.stringify(profile.test_pattern)}`, image };
  }

  // `test` goes out when the first worker is set up (that lane says so, with the setup's timing);
  // a first failure, or the end, sends it if that signal was lost.
  let testSent = false;
  const sendTest = () => {
    if (testSent) return;
    testSent = true;
    snap.timing.exec ??= now();
    emit('test', runners);
  };
  setHandler(workersReadySignal, ({ timing }) => {
    if (snap.stoppedBy || testSent) return;
    snap.timing = { ...snap.timing, ...timing };
    sendTest();
  });
  let failedOnce = false;
  const firstFail = (counts: Counts) => {
    if (failedOnce) return;
    failedOnce = true;
    sendTest();
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
  const cache = cacheScopes({ branch: ctx.branch, defaultBranch: ctx.defaultBranch ?? 'master', mayWrite: ctx.trust.cache === true });
  const { runLane } = lanes(ctx);
  // Cancelled by the first setup failure (the other workers stop what they are setting up), or
  // with the session's scope by a stop.
  const lanesScope = new CancellationScope();
  let setupFailure: string | null = null;
  // A lane's setup failed: whenever it comes, the build's setup does not work (a lane's retry
  // after a lost runner that fails while others test reports none: steps/lifecycle.ts failSetup).
  const failSetup = (reason: string) => {
    if (setupFailure !== null) return;
    setupFailure = reason;
    lanesScope.cancel();
  };
  const ended: unknown[] = await lanesScope.run(() =>
    Promise.all(
      Array.from({ length: runners }, (_, lane) =>
        runLane({
          tree,
          lane,
          lanes: runners,
          setup,
          cache,
          workflowId: workflowInfo().workflowId,
          command: profile.test_command,
          env,
          secrets: ctx.trust.secrets,
          timeoutMs: ctx.settings.testTimeoutMs,
          junitPattern: profile.junit_pattern,
          retryFailed: profile.retry_failed,
          ...(image ? { image } : {}),
          ...(mapping ? { trace: true } : {}),
          // Lane 0's tree is the session's first checkout, which a post_build hook runs in afterwards.
          ...(lane > 0 || !setup.hooks.post_build ? { lastUse: true } : {}),
        }).then(
          (result): unknown => {
            if (result.setupFailure) failSetup(result.setupFailure);
            return result;
          },
          (err: unknown) => {
            // A lane lost for good before any test began: the build's setup could not be done.
            if (!isCancellation(err) && !testSent) failSetup(`worker ${lane + 1} could not be set up: ${failureMessage(err)}`);
            return err;
          },
        ),
      ),
    ),
  );
  const results = ended.filter(isLaneResult);
  snap.timing = { ...snap.timing, ...latest(results.map((r) => r.timing ?? {}), snap.timing.exec) };
  // Whatever the lanes came to, the counts are the list's.
  const counts = await CancellationScope.nonCancellable(() => records.testCounts(ctx.sessionId));
  snap.counts = { ...counts, started: 0, notstarted: counts.notstarted + counts.started };
  if (setupFailure !== null) {
    setStatus(snap, 'error');
    return { reason: setupFailure, setupFailed: true, image };
  }
  const cancelled = ended.find((e) => !isLaneResult(e) && isCancellation(e));
  if (cancelled) throw cancelled;
  snap.timing.post_build ??= now();
  if (counts.passed + counts.failed + counts.error > 0) sendTest();

  const failures = ended.filter((e) => !isLaneResult(e));
  for (const err of failures) log.warn('test lane failed', { sessionId: ctx.sessionId, error: failureMessage(err) });
  // The signal was lost (the runner could not reach Temporal): `first-fail` still precedes `stop`.
  if (!failedOnce && counts.failed + counts.error > 0) firstFail(snap.counts);
  const status: SessionStatus = counts.failed > 0 ? 'failed' : counts.error > 0 ? 'error' : 'passed';
  const unrun = counts.notstarted + counts.started;
  if (unrun > 0) {
    // Every lane gave up (each retried its runner's loss many times): say why, not just "error".
    setStatus(snap, 'error');
    const why = failures.length > 0 ? failureMessage(failures[0]) : 'the lanes ended early';
    return { reason: `${unrun} of ${total} test files did not run: ${why}`, image };
  }
  setStatus(snap, status);
  return { reason: null, image };
}

function isLaneResult(e: unknown): e is RunLaneResult {
  return typeof e === 'object' && e !== null && 'runner' in e && 'ran' in e;
}

/**
 * The build's timing keys from its workers': each step is done when every worker has done it
 * (the latest), except `exec`, the tests' start, which the rendezvous already set.
 */
function latest(timings: Timing[], exec: number | undefined): Timing {
  const out: Timing = {};
  for (const t of timings) {
    for (const [key, value] of Object.entries(t)) {
      if (value === undefined || (key === 'exec' && exec !== undefined)) continue;
      out[key] = key === 'exec' ? Math.min(out[key] ?? value, value) : Math.max(out[key] ?? 0, value);
    }
  }
  return out;
}
