/**
 * Build activities, run by runners from the session's build queue: the first checkout (with
 * sluice.yml, parsed), the list of test files, and the lanes that run them. None relies on a
 * tree an earlier activity left on some runner: each gets its tree through tree.ts, so any
 * runner can take any of them and a runner's death costs a re-fetch, never a stuck build.
 *
 * They load what is secret (the SSH key, build secrets) from PostgreSQL themselves, so it
 * never enters Temporal's history, and store test output (secrets masked) in PostgreSQL,
 * returning only what the workflow decides on.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import type { Pool } from 'pg';
import { DEFAULT_MAX_TEST_FILES, type Config } from '../../config';
import { FIRST_FAIL_SIGNAL } from '../../core/signalNames';
import type { Counts } from '../../core/types';
import { enqueueTests, recordedDurations } from '../../db/testQueue';
import { FAILURE_TYPES } from '../failures';
import { withHeartbeat } from '../heartbeat';
import { readRepoConfig } from '../post/repoConfig';
import type { CheckoutInput, CheckoutResult, QueueTestsInput, QueueTestsResult, RunLaneInput, RunLaneResult } from '../types';
import { discoverTests, InvalidPatternError } from '../../build/tests/discover';
import { GitPullError } from '../../build/checkout/git';
import { collectJUnitResults } from '../../build/tests/junit';
import { laneHasWork, runLane } from '../../build/tests/lane';
import type { BuildUser, ProcessGroups } from '../../build/tests/runTestFile';
import type { Sandbox } from '../../build/sandbox';
import { ensureTree, fetchTree, markUsed, removeTree, treeDeps, TreeGoneError, treeDir } from '../../build/checkout/tree';

export interface BuildDeps {
  config: Config;
  pool: Pool;
  /** This runner's name (host-pid), recorded with each test file it runs. */
  runner: string;
  /** Where test process groups are reported so that none outlives this runner. */
  processGroups?: ProcessGroups;
  /** The unprivileged user tests run as (SLUICE_BUILD_USER), if any. */
  runAs?: BuildUser;
  /** The further sandbox tests run in (SLUICE_SANDBOX=bwrap), if any. */
  sandbox?: Sandbox;
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

export function createBuildActivities({ config, pool, runner, processGroups, runAs, sandbox }: BuildDeps) {
  const trees = treeDeps(config, pool);

  /**
   * The session's list of the files in `workdir` that match `pattern`, written to PostgreSQL
   * (queueTests, or the checkout when it knows the profile); its size.
   */
  async function listTests(workdir: string, sessionId: number, suiteId: number, profileName: string, pattern: string): Promise<number> {
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
    const known = await recordedDurations(pool, suiteId, profileName, paths);
    const files = paths.map((path) => ({ path, estimateMs: known.get(path) ?? null }));
    // Stable: equal estimates keep discovery's (path) order.
    files.sort((a, b) => (b.estimateMs ?? Infinity) - (a.estimateMs ?? Infinity) || 0);
    return enqueueTests(pool, sessionId, files);
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
        const total = await listTests(workdir, input.sessionId, list.suiteId, list.profileName, list.pattern).catch(() => null);
        if (total !== null) result.listed = { profileName: list.profileName, pattern: list.pattern, total };
      }
      return result;
    },

    /**
     * The session's list of test files, longest first by the durations the suite's earlier
     * builds recorded (files never run first: they may be long), written to PostgreSQL for its
     * lanes to share. Only the count crosses Temporal, however many files there are.
     */
    async queueTests(input: QueueTestsInput): Promise<QueueTestsResult> {
      const workdir = treeDir(config.workspaceDir, input.tree.sessionId);
      await withHeartbeat((signal) => ensureTree(trees, input.tree, workdir, 'pristine', signal)).catch((err: unknown) => {
        throw checkoutFailure(err);
      });
      return { total: await listTests(workdir, input.tree.sessionId, input.suiteId, input.profileName, input.pattern) };
    },

    /** One lane: its own checkout, files from the shared list until none is left, its JUnit reports. */
    async runLane(input: RunLaneInput): Promise<RunLaneResult> {
      const ctx = Context.current();
      const { sessionId } = input.tree;
      // A retry after a lost runner may find every file done by the other lanes.
      if (!(await laneHasWork(pool, sessionId))) return { ran: 0, runner };
      const workdir = treeDir(config.workspaceDir, sessionId, input.lane);
      return withHeartbeat(async (signal) => {
        await ensureTree(trees, input.tree, workdir, 'pristine', signal).catch((err: unknown) => {
          throw checkoutFailure(err);
        });
        await markUsed(workdir, runAs);
        const firstFailure = async (counts: Counts) => {
          // Best effort: the workflow also sends `first-fail` at the end if this never arrived.
          try {
            await ctx.client.workflow.getHandle(input.workflowId).signal(FIRST_FAIL_SIGNAL, { counts });
          } catch (err) {
            ctx.log.warn('first-fail signal not delivered', { sessionId, error: String(err) });
          }
        };
        const out = await runLane(
          { pool, secretKey: config.secretKey, runner, processGroups, runAs, sandbox, firstFailure, signal },
          {
            sessionId,
            repoId: input.tree.repoId,
            lane: input.lane,
            attempt: ctx.info.attempt,
            workdir,
            command: input.command,
            env: input.env,
            secrets: input.secrets,
            timeoutMs: input.timeoutMs,
          },
        );
        // Stopped: running tests' process groups are dead; the session reports it as stopped.
        if (out.stopped) throw new CancelledFailure('stopped while running');
        if (input.junitPattern && out.ran > 0) {
          await collectJUnitResults({ pool, secretKey: config.secretKey }, { sessionId, workdir, pattern: input.junitPattern, lane: input.lane });
        }
        // Lane 0's tree is the session's first checkout: kept for the push, swept when the session ends.
        if (input.lane > 0) await removeTree(workdir);
        return { ran: out.ran, runner };
      }, 1_000);
    },
  };
}
