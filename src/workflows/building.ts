/**
 * The build part of a session (workflow code), run in a scope that a `stop` cancels:
 * checkout; decide whether there is anything to build; pick the profile(s) (suite settings,
 * the repository's sluice.yml, the trigger's profile_name); then run one profile's tests here,
 * or a plan's profiles as child sessions.
 */
import {
  CancellationScope,
  ChildWorkflowCancellationType,
  condition,
  getExternalWorkflowHandle,
  isCancellation,
  log,
  ParentClosePolicy,
  setHandler,
  startChild,
  workflowInfo,
} from '@temporalio/workflow';
import type { AffectedPlan, CheckoutInput, CheckoutResult } from '../activities/types';
import type { ResolvedImage, SessionContext, TreeRef } from '../core/session';
import type { RepoConfigResult } from '../core/profiles';
import { cacheScopes, imageOf, resolveBuildSetup, type BuildSetup } from '../core/buildSetup';
import { checkoutTarget } from '../core/checkoutTarget';
import { planStatus, sumCounts } from '../core/counts';
import type { SessionSnapshot } from '../core/payload';
import { FULL_RUN_MARKER, resolveProfiles, type ResolvedProfile } from '../core/profiles';
import { skipTagReason } from '../core/skipTags';
import type { Counts, EventName, SessionStatus } from '../core/types';
import { records, runner } from './proxies';
import { whileServed } from './runnerWatch';
import { idsOf } from '../core/workflowIds';
import { partDoneSignal, stopSignal, type PlanPart } from './signals';
import { failureMessage, now, setStatus } from './status';
import { runProfile } from './tests';

/** What a session's payloads and records name as its profile. */
export interface SessionProfile {
  name: string;
  workers: number;
}

/** Emits a lifecycle event; `profile` is the one the session runs, once chosen (else the one it was queued with). */
export type Emit = (event: EventName, profile?: SessionProfile) => void;

export interface Outcome {
  reason: string | null;
  /** The profile that ran, once chosen (a plan's parent runs none of its own: null). */
  profile: SessionProfile | null;
  /** Set when tests ran: becomes the suite's last built commit. */
  builtCommit: string | null;
  /** The commit checked out, for the push and the post_build hook. */
  tree: TreeRef | null;
  /** What the build set up (its post_build hook runs after the results are recorded), once known. */
  setup?: BuildSetup;
  /** The variables the build's hooks had (the profile's and the trigger's). */
  env?: Record<string, string>;
  /** The image the build's hooks ran in (its post_build hook runs there too); null: none. */
  imageName?: string | null;
  /** That image as resolved, once it was (a plan's parent resolves it for its post_build hook only). */
  image?: ResolvedImage;
}

export interface SessionResult {
  status: SessionStatus;
  counts: Counts;
}

export async function build(
  ctx: SessionContext,
  snap: SessionSnapshot,
  emit: Emit,
  part: PlanPart | undefined,
): Promise<Outcome> {
  const outcome: Outcome = { reason: null, profile: null, builtCommit: null, tree: null };
  setStatus(snap, 'running');
  const { lastBuiltCommit } = await records.recordStart(ctx.sessionId, snap.timing);
  try {
    snap.timing.workers_assigned_at = now();
    const target = checkoutTarget({ scm: ctx.repo.scm, branch: ctx.branch, head: ctx.head, ref: ctx.ref, refspecs: ctx.refspecs });
    // A runner's kept trees follow the cache's scopes (steps/checkout/kept.ts).
    const scopes = cacheScopes({ branch: ctx.branch, defaultBranch: ctx.defaultBranch ?? 'master', mayWrite: ctx.trust.cache === true });
    const checkout = await whileServed(ctx, () =>
      runner(ctx).checkout({
        sessionId: ctx.sessionId,
        repoId: ctx.repoId,
        branch: ctx.branch,
        // A plan's sessions build exactly the commit their parent checked out.
        head: part?.commitId ?? target.head,
        refspecs: target.refspecs,
        scopes,
        ...listAhead(ctx, part, lastBuiltCommit),
      }),
    );
    // Every lane fetches what the checkout did, so the commit is there for each of them.
    const tree: TreeRef = { sessionId: ctx.sessionId, repoId: ctx.repoId, branch: ctx.branch, commitId: checkout.commitId, refspecs: target.refspecs, scopes };
    outcome.tree = tree;
    snap.commitId = checkout.commitId;
    snap.committers = checkout.committers;
    snap.timing.setup = now();
    // Spec §6: `start` is "the build started work on a worker": a runner has the tree, and the
    // payload names the commit it holds. A checkout that fails sends none (received, then stop).
    emit('start');

    let profile: ResolvedProfile;
    let setup: BuildSetup;
    if (part) {
      profile = part.profile;
      setup = part.setup ?? resolveBuildSetup(ctx.suiteSetup, undefined);
    } else {
      const skip = nothingToBuild(ctx, checkout, lastBuiltCommit);
      if (skip) {
        setStatus(snap, 'skipped');
        outcome.reason = skip;
        return outcome;
      }
      const chosen = chooseProfiles(ctx, checkout.repoConfig);
      if ('error' in chosen) {
        setStatus(snap, 'error');
        outcome.reason = chosen.error;
        return outcome;
      }
      setup = resolveBuildSetup(ctx.suiteSetup, 'config' in checkout.repoConfig ? checkout.repoConfig.config?.setup : undefined);
      outcome.setup = setup;
      outcome.env = ctx.env;
      if (chosen.isPlan) {
        outcome.imageName = setup.image ?? null;
        await runPlan(ctx, snap, emit, checkout, chosen.profiles, setup);
        outcome.builtCommit = checkout.commitId;
        return outcome;
      }
      profile = chosen.profiles[0]!;
      outcome.env = { ...profile.env, ...ctx.env };
    }
    outcome.profile = { name: profile.name, workers: profile.workers };
    outcome.imageName = imageOf(profile, setup);
    // From `test` on, the payload's `workers` is the number of runners the build uses.
    const listed = checkout.listed?.profileName === profile.name && checkout.listed.pattern === profile.test_pattern ? checkout.listed.total : null;
    const run = await runProfile(
      ctx,
      snap,
      tree,
      profile,
      listed,
      (event, runners) => {
        outcome.profile = { name: profile.name, workers: runners };
        emit(event, outcome.profile);
      },
      setup,
      affectedPlan(ctx, profile, checkout.message),
    );
    outcome.reason = run.reason;
    outcome.image = run.image;
    if (!run.setupFailed) outcome.builtCommit = checkout.commitId;
  } catch (err) {
    if (isCancellation(err)) return outcome; // stopped: the caller says so
    // A checkout or test step that failed for good ends the build in `error`, saying why; the
    // session still records it, pushes nothing, tells its receivers.
    log.warn('build failed', { sessionId: ctx.sessionId, error: failureMessage(err) });
    setStatus(snap, 'error');
    outcome.reason = failureMessage(err);
  }
  return outcome;
}

/**
 * The profile that runs when the repository has no sluice.yml, if the suite's settings alone
 * say which (not a plan): the checkout then lists its files itself, one round trip fewer
 * before the first test.
 */
function listAhead(ctx: SessionContext, part: PlanPart | undefined, lastBuiltCommit: string | null): Pick<CheckoutInput, 'list'> {
  const unlessCommit = part || ctx.force ? null : lastBuiltCommit;
  // A profile that selects affected files lists them once it knows the message ([ci full]).
  if (part) return part.profile.affected ? {} : { list: { suiteId: ctx.suiteId, profileName: part.profile.name, pattern: part.profile.test_pattern, unlessCommit } };
  const chosen = chooseProfiles(ctx, { config: null });
  if ('error' in chosen || chosen.isPlan) return {};
  const profile = chosen.profiles[0]!;
  if (profile.affected) return {};
  return { list: { suiteId: ctx.suiteId, profileName: profile.name, pattern: profile.test_pattern, unlessCommit } };
}

/**
 * What the build does about selecting affected test files (issue 40), when its profile asks:
 * a push to the default branch runs everything (and may record a map: only a push with no env of
 * its own, so no pull request, a fork's least of all, ever writes one); so does a trigger's
 * `full: true` or `[ci full]` in the commit message; anything else selects.
 */
function affectedPlan(ctx: SessionContext, profile: ResolvedProfile, message: string): AffectedPlan | undefined {
  if (!profile.affected) return undefined;
  const defaultBranch = ctx.defaultBranch ?? 'master';
  const pushToDefault = ctx.branch === defaultBranch && ctx.trust.push;
  const fullBecause = pushToDefault
    ? `${defaultBranch} is the default branch, which always runs in full`
    : ctx.fullRun
      ? 'the trigger asked for a full run (full: true)'
      : message.includes(FULL_RUN_MARKER)
        ? `${FULL_RUN_MARKER} in the commit message`
        : null;
  return { settings: profile.affected, mayMap: pushToDefault && ctx.trust.cache === true, fullBecause };
}

/** Why this checkout needs no build, if it does not: already built, or a skip tag. */
function nothingToBuild(ctx: SessionContext, checkout: CheckoutResult, lastBuiltCommit: string | null): string | null {
  if (ctx.force) return null;
  if (lastBuiltCommit === checkout.commitId) {
    return `no new commits since the last build (${checkout.commitId.slice(0, 12)}); trigger with force to build anyway`;
  }
  // Provider hooks are checked on arrival; a generic trigger names no message, so look here.
  const tag = skipTagReason(checkout.message);
  return tag ? `${tag}; trigger with force to build anyway` : null;
}

/** The profile(s) this build runs: the suite's settings, the repository's sluice.yml (parsed by the activity) and the trigger's profile_name. */
function chooseProfiles(ctx: SessionContext, repoConfig: RepoConfigResult) {
  if ('error' in repoConfig) return { error: `sluice.yml: ${repoConfig.error}` };
  return resolveProfiles({
    suiteDefault: {
      name: 'default',
      test_pattern: ctx.testPattern,
      test_command: ctx.testCommand,
      workers: ctx.workers,
      junit_pattern: ctx.junitPattern,
      retry_failed: ctx.retryFailed ?? 0,
    },
    suiteProfiles: ctx.suiteProfiles,
    suitePlan: ctx.suitePlan,
    fileConfig: repoConfig.config,
    requestedProfile: ctx.requestedProfile,
  });
}

/**
 * A plan: one child session per profile, each with its own checkout of the same commit (so
 * they spread over workers), its own events (carrying parent_session) and report. This
 * session's counts and status are theirs, summed.
 */
async function runPlan(
  ctx: SessionContext,
  snap: SessionSnapshot,
  emit: Emit,
  checkout: CheckoutResult,
  profiles: ResolvedProfile[],
  setup: BuildSetup,
): Promise<void> {
  // The parts' workflow ids, in this session's installation.
  const partWorkflowId = idsOf(workflowInfo().workflowId).session;
  const ids = await records.createPlanSessions({
    parentId: ctx.sessionId,
    commitId: checkout.commitId,
    profiles: profiles.map((p) => ({ name: p.name, workers: p.workers })),
  });
  snap.timing.exec = now();
  emit('test');
  // Each part says how it ended as soon as that is recorded (session.ts), before it waits for
  // its deliveries: the plan must not wait on a receiver that is down.
  const reported = new Map<number, SessionResult>();
  setHandler(partDoneSignal, ({ sessionId, status, counts }) => void reported.set(sessionId, { status, counts }));
  const children = await Promise.all(
    ids.map((id, i) =>
      startChild('sessionWorkflow', {
        workflowId: partWorkflowId(id),
        args: [{ sessionId: id, suiteId: ctx.suiteId, part: { commitId: checkout.commitId, profile: profiles[i]!, setup } }],
        // A stop reaches the parts as a stop signal (below), not as a cancellation they could
        // not record; and they finish whatever happens to this workflow.
        cancellationType: ChildWorkflowCancellationType.ABANDON,
        parentClosePolicy: ParentClosePolicy.ABANDON,
        staticSummary: `${ctx.repo.orgName}/${ctx.repo.name} @ ${ctx.branch} #${id} (${profiles[i]!.name}, part of #${ctx.sessionId})`,
      }),
    ),
  );
  /** A part's outcome: as it reported it, or as its workflow returned it (one that ended otherwise). */
  const resultOf = (i: number): Promise<SessionResult> =>
    Promise.race([condition(() => reported.has(ids[i]!)).then(() => reported.get(ids[i]!)!), children[i]!.result() as Promise<SessionResult>]);
  let results: SessionResult[];
  try {
    results = await Promise.all(children.map((_, i) => resultOf(i)));
  } catch (err) {
    if (!isCancellation(err)) throw err;
    await CancellationScope.nonCancellable(async () => {
      const stoppedBy = snap.stoppedBy ?? 'sluice';
      await Promise.all(
        ids.map((id) =>
          getExternalWorkflowHandle(partWorkflowId(id))
            .signal(stopSignal, { stoppedBy })
            // A part that already ended has nothing to stop; the others still must be told.
            .catch((err: unknown) => log.info('plan part not signalled to stop', { session: id, error: failureMessage(err) })),
        ),
      );
      const ended = await Promise.all(
        children.map((_, i) =>
          resultOf(i).catch((err: unknown) => {
            // A part that failed (or was terminated) adds nothing to the counts; the stop goes on.
            log.warn('plan part ended without a result', { session: ids[i], error: failureMessage(err) });
            return null;
          }),
        ),
      );
      snap.counts = sumCounts(ended.filter((r): r is SessionResult => r !== null).map((r) => r.counts));
    });
    throw err;
  }
  snap.timing.post_build = now();
  snap.counts = sumCounts(results.map((r) => r.counts));
  setStatus(snap, planStatus(results.map((r) => r.status)));
}
