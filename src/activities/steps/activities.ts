/**
 * Build activities, run by runners from the session's build queue: the first checkout (with
 * sluice.yml, parsed), the list of test files, and the lanes that run them. None relies on a
 * tree an earlier activity left on some runner: each gets its tree through tree.ts, so any
 * runner can take any of them and a runner's death costs a re-fetch, never a stuck build.
 *
 * They load what is secret (the SSH key, build secrets) through the runner's build records
 * themselves, so it never enters Temporal's history, and store test output (secrets masked)
 * there, returning only what the workflow decides on.
 */
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { DEFAULT_HOOK_TIMEOUT_MS, DEFAULT_IMAGE_DIR, DEFAULT_IMAGE_MAX_BYTES, DEFAULT_MAX_TEST_FILES, type Config } from '../../config';
import { medianMs } from '../../core/batches';
import type { BuildSetup } from '../../core/buildSetup';
import { orderFirstFailures } from '../../core/firstFailures';
import { FIRST_FAIL_SIGNAL, WORKERS_READY_SIGNAL } from '../../core/signalNames';
import type { Counts, Timing } from '../../core/types';
import { FAILURE_TYPES } from '../failures';
import { runningActivity, withHeartbeat } from '../heartbeat';
import { readRepoConfig } from '../../steps/checkout/repoConfig';
import type { AffectedPlan, CheckoutInput, CheckoutResult, PostBuildHookInput, QueueTestsInput, QueueTestsResult, ResolveImageInput, RunLaneInput, RunLaneResult, WorkersReady } from '../types';
import type { ResolvedImage } from '../../core/session';
import type { ArtifactDeps } from '../../steps/artifacts';
import type { CacheDeps } from '../../steps/cache';
import { ensureTree, fetchTree, holdTree, homeDir, markUsed, retireTreeLater, treeDeps, TreeGoneError, treeDir } from '../../steps/checkout/tree';
import { GitPullError } from '../../steps/checkout/git';
import { RegistryError, resolveImage, type ImageDeps } from '../../steps/image';
import { DOCKER_AUTH_CONFIG } from '../../steps/image/credentials';
import { runPostBuildHook, runWorker } from '../../steps/lifecycle';
import type { BuildUser, ProcessGroups } from '../../steps/isolation/process';
import type { BuildRecords } from '../../steps/records';
import type { Sandbox } from '../../steps/isolation/sandbox';
import { discoverTests, InvalidPatternError } from '../../steps/tests/discover';
import { laneHasWork } from '../../steps/tests/lane';
import { chooseAffected } from '../../steps/tests/selection';
import { firstFailureHints } from '../../steps/tests/firstFailures';
import { exists } from '../../steps/checkout/scmProcess';
import { join } from 'node:path';

export interface BuildDeps {
  config: Config;
  /** What the build steps read and write about builds (steps/records.ts). */
  records: BuildRecords;
  /** This runner's name (host-pid), recorded with each test file it runs. */
  runner: string;
  /** Where test process groups are reported so that none outlives this runner. */
  processGroups?: ProcessGroups;
  /** The unprivileged user tests run as (SLUICE_BUILD_USER), if any. */
  runAs?: BuildUser;
  /** The further sandbox tests run in (SLUICE_SANDBOX=bwrap), if any. */
  sandbox?: Sandbox;
  /** Where dependency caches live; null: this runner keeps none. */
  cache?: CacheDeps | null;
  /** Where artifacts go; null: none are kept. */
  artifacts?: ArtifactDeps | null;
  /** The crane executable builds' images are pulled with (runner/crane.ts); none: builds with an image fail saying so. */
  crane?: string | null;
}

/** A build that sets nothing up: what lanes of histories recorded before setups run with. */
const NO_SETUP: BuildSetup = { hooks: { package_setup: false }, cache: false, services: [], artifacts: [] };

/** Where this runner keeps and pulls images, from its configuration and the crane its role found. */
export function imageDeps(config: Pick<Config, 'images'>, crane: string | null): ImageDeps {
  const images = config.images;
  return {
    store: { dir: images?.dir ?? DEFAULT_IMAGE_DIR, maxBytes: images?.maxBytes ?? DEFAULT_IMAGE_MAX_BYTES },
    crane,
    mirror: images?.mirror ?? null,
  };
}

/** What a registry's answer means for the activity: worth another attempt (it did not answer), or final. */
export function imageFailure(err: unknown): Error {
  if (err instanceof RegistryError) {
    return err.retryable ? ApplicationFailure.retryable(err.message, FAILURE_TYPES.imageUnavailable) : ApplicationFailure.nonRetryable(err.message, FAILURE_TYPES.imageRefused);
  }
  return err instanceof Error ? err : new Error(String(err));
}

/** What a failed fetch means for the activity: stopped, worth another attempt, or final. */
export function checkoutFailure(err: unknown): Error {
  // Stopped: git or hg (and its ssh) were killed through the signal.
  if (err instanceof GitPullError && err.reason === 'aborted') return new CancelledFailure('stopped while checking out');
  // A wrong key, an unknown commit or a bad URL do not mend by retrying; an unreachable host
  // might. git.ts and hg.ts scrub their messages of anything secret.
  if (err instanceof GitPullError && err.retryable) return ApplicationFailure.retryable(err.message, FAILURE_TYPES.checkoutUnreachable);
  if (err instanceof GitPullError || err instanceof TreeGoneError) return ApplicationFailure.nonRetryable(err.message, FAILURE_TYPES.checkoutFailed);
  return err instanceof Error ? err : new Error(String(err));
}

export function createBuildActivities({ config, records, runner, processGroups, runAs, sandbox, cache = null, artifacts = null, crane = null }: BuildDeps) {
  const trees = treeDeps(config, records);
  const images = imageDeps(config, crane);
  // This installation's id names the services' databases; read once.
  let installationId: Promise<string> | undefined;
  const installation = () => (installationId ??= records.installationId());

  /**
   * The session's list of the files in `workdir` that match `pattern`, written to PostgreSQL
   * (queueTests, or the checkout when it knows the profile); its size.
   */
  async function listTests(
    workdir: string,
    sessionId: number,
    suiteId: number,
    profileName: string,
    pattern: string,
    /** A profile that selects affected files: the workflow's plan, and the tree's commit. */
    affected?: { plan: AffectedPlan; commitId: string; signal?: AbortSignal },
  ): Promise<QueueTestsResult> {
    let paths: string[];
    try {
      paths = await discoverTests(workdir, pattern);
    } catch (err) {
      if (err instanceof InvalidPatternError) throw ApplicationFailure.nonRetryable(err.message, FAILURE_TYPES.invalidPattern);
      throw err;
    }
    const max = config.maxTestFiles ?? DEFAULT_MAX_TEST_FILES;
    if (paths.length > max) {
      throw ApplicationFailure.nonRetryable(
        `${paths.length} files match the test pattern ${JSON.stringify(pattern)}; a build runs at most ${max} (SLUICE_MAX_TEST_FILES)`,
        FAILURE_TYPES.tooManyTestFiles,
      );
    }
    const scm = (await exists(join(workdir, '.hg'))) ? 'hg' : 'git';
    const choice = affected
      ? await chooseAffected(records, { sessionId, profileName, commitId: affected.commitId, workdir, scm, paths, plan: affected.plan, signal: affected.signal })
      : null;
    const toRun = choice?.run ?? paths;
    const [known, hints] = await Promise.all([
      records.recordedDurations(suiteId, profileName, toRun),
      // A mapping run takes one file at a time whatever the order: nothing to gain there. A build
      // that selected runs only affected files: the map tells nothing more about their order.
      choice?.mapping ? null : firstFailureHints(records, { sessionId, suiteId, profileName, workdir, scm, paths: toRun, maps: affected !== undefined && choice?.summary.mode !== 'selected', signal: affected?.signal }),
    ]);
    // A file never run is taken to last as long as the suite's middle file (null: no history at all).
    const median = medianMs([...known.values()]);
    const byHistory = toRun.map((path) => ({ path, estimateMs: known.get(path) ?? median }));
    // Longest first, which packs the lanes; stable: equal estimates keep discovery's (path) order.
    byHistory.sort((a, b) => (b.estimateMs ?? Infinity) - (a.estimateMs ?? Infinity) || 0);
    // Then the likeliest failures ahead of them, within a bound on what that may cost (issue 49).
    const files = hints ? orderFirstFailures(byHistory, hints) : byHistory;
    const total = await records.enqueueTests(sessionId, files, choice?.skipped ?? []);
    if (!choice) return { total };
    await records.recordAffected(sessionId, choice.summary);
    return { total, skipped: choice.skipped.length, ...(choice.mapping ? { mapping: true } : {}) };
  }

  return {
    /** The session's first checkout: which commit builds, who wrote it, and its sluice.yml. */
    async checkout(input: CheckoutInput): Promise<CheckoutResult> {
      const workdir = treeDir(config.workspaceDir, input.sessionId);
      const got = await withHeartbeat((signal) => fetchTree(trees, input, workdir, signal)).catch((err: unknown) => {
        throw checkoutFailure(err);
      });
      const result: CheckoutResult = { commitId: got.commitId, committers: got.committers, message: got.message, repoConfig: await readRepoConfig(workdir) };
      const { list } = input;
      if (list && 'config' in result.repoConfig && result.repoConfig.config === null && got.commitId !== list.unlessCommit) {
        // A list that cannot be made (a bad pattern, too many files) is left to queueTests, whose
        // failure the build reports in its place (a build skipped after all never gets there).
        const total = await listTests(workdir, input.sessionId, list.suiteId, list.profileName, list.pattern).then((r) => r.total, () => null);
        if (total !== null) result.listed = { profileName: list.profileName, pattern: list.pattern, total };
      }
      return result;
    },

    /**
     * The session's list of test files, longest first by the durations the suite's earlier
     * builds recorded (a file never run counts as the median one), written to PostgreSQL for its
     * lanes to share. Only the count crosses Temporal, however many files there are.
     */
    async queueTests(input: QueueTestsInput): Promise<QueueTestsResult> {
      const workdir = treeDir(config.workspaceDir, input.tree.sessionId);
      return withHeartbeat(async (signal) => {
        await ensureTree(trees, input.tree, workdir, 'pristine', signal).catch((err: unknown) => {
          throw checkoutFailure(err);
        });
        const affected = input.affected ? { plan: input.affected, commitId: input.tree.commitId, signal } : undefined;
        return listTests(workdir, input.tree.sessionId, input.suiteId, input.profileName, input.pattern, affected);
      });
    },

    /**
     * The build's image: its tag resolved to a digest, or a rebuild's digest checked, with the
     * build's registry logins (none for a build that may not have secrets). Only the reference
     * and the digest cross Temporal.
     */
    async resolveImage(input: ResolveImageInput): Promise<ResolvedImage> {
      const run = runningActivity();
      const secrets = input.secrets ? (await records.buildSecrets(input.repoId)).values : {};
      const credentials = input.secrets
        ? { logins: await records.registryLogins(input.repoId), ...(secrets[DOCKER_AUTH_CONFIG] !== undefined ? { dockerAuthConfig: secrets[DOCKER_AUTH_CONFIG] } : {}) }
        : { logins: [] };
      return withHeartbeat(async (signal) => {
        try {
          const resolved = await resolveImage(images, input.image, input.digest, credentials, signal);
          for (const note of resolved.notes) run?.log.warn(note, { sessionId: input.sessionId });
          return { reference: resolved.reference, digest: resolved.digest };
        } catch (err) {
          throw imageFailure(err);
        }
      }, 1_000);
    },

    /**
     * One lane: a worker of the build on its own checkout, through the whole of its lifecycle
     * (steps/lifecycle.ts): cache, package setup, services, hooks, the rendezvous with the other
     * workers, files from the shared list until none is left, artifacts, the cache saved.
     */
    async runLane(input: RunLaneInput): Promise<RunLaneResult> {
      const run = runningActivity();
      const { sessionId } = input.tree;
      // A retry after a lost runner may find every file done by the other lanes.
      if (!(await laneHasWork(records, sessionId))) return { ran: 0, runner };
      const workdir = treeDir(config.workspaceDir, sessionId, input.lane);
      const signalSession = (name: string) => async (payload: unknown) => {
        // Best effort: the workflow also sends `test` and `first-fail` at the end if these never arrived.
        try {
          await run?.signalWorkflow(input.workflowId, name, payload);
        } catch (err) {
          run?.log.warn(`${name} signal not delivered`, { sessionId, error: String(err) });
        }
      };
      return withHeartbeat(async (signal) => {
        await ensureTree(trees, input.tree, workdir, 'pristine', signal).catch((err: unknown) => {
          throw checkoutFailure(err);
        });
        await markUsed(workdir, runAs);
        const out = await runWorker(
          {
            records,
            runner,
            processGroups,
            runAs,
            sandbox,
            hookTimeoutMs: config.hookTimeoutMs ?? DEFAULT_HOOK_TIMEOUT_MS,
            cache,
            artifacts,
            services: config.services ?? {},
            images,
            signal,
            firstFailure: (counts: Counts) => signalSession(FIRST_FAIL_SIGNAL)({ counts }),
            testsStarted: (timing: Timing) => signalSession(WORKERS_READY_SIGNAL)({ timing } satisfies WorkersReady),
          },
          {
            sessionId,
            repoId: input.tree.repoId,
            worker: input.lane + 1,
            workers: input.lanes ?? 1,
            attempt: run?.attempt ?? 1,
            tree: workdir,
            home: homeDir(workdir),
            command: input.command,
            env: input.env,
            secrets: input.secrets,
            timeoutMs: input.timeoutMs,
            junitPattern: input.junitPattern,
            retryFailed: input.retryFailed ?? 0,
            ...(input.trace ? { trace: true } : {}),
            setup: input.setup ?? NO_SETUP,
            cache: input.cache ?? { readScopes: [], writeScope: null },
            savesCache: input.lane === 0,
            installation: await installation(),
            ...(input.image ? { image: input.image } : {}),
          },
        );
        // Stopped: running tests' process groups are dead; the session reports it as stopped.
        if (out.stopped) throw new CancelledFailure('stopped while running');
        // Lane 0's tree is the session's first checkout: kept for a post_build hook, if any, and
        // swept when the session ends. A push fetches the commit again where the tree is gone.
        if (input.lane > 0 || input.lastUse) await retireTreeLater(trees, workdir);
        return { ran: out.ran, runner, setupFailure: out.setupFailure, timing: out.timing };
      }, 1_000);
    },

    /** The `post_build` hook, once a build: in the session's first checkout when this runner still has it. */
    async postBuildHook(input: PostBuildHookInput): Promise<{ status: string }> {
      const workdir = treeDir(config.workspaceDir, input.tree.sessionId);
      return withHeartbeat(async (signal) => {
        const release = holdTree(workdir);
        try {
          await ensureTree(trees, input.tree, workdir, 'objects', signal).catch((err: unknown) => {
            throw checkoutFailure(err);
          });
          await markUsed(workdir, runAs);
          return await runPostBuildHook(
            { records, runner, processGroups, runAs, sandbox, images, hookTimeoutMs: config.hookTimeoutMs ?? DEFAULT_HOOK_TIMEOUT_MS, signal },
            {
              sessionId: input.tree.sessionId,
              repoId: input.tree.repoId,
              tree: workdir,
              home: homeDir(workdir),
              command: input.command,
              env: input.env,
              secrets: input.secrets,
              status: input.status,
              ...(input.image ? { image: input.image } : {}),
            },
          );
        } finally {
          release();
        }
      }, 1_000);
    },
  };
}
