/**
 * Build activities: the Temporal-facing wrappers of git.ts / hg.ts, discover.ts,
 * runTestFile.ts and junit.ts. They load what is secret (the SSH key, build secrets) from
 * PostgreSQL themselves, so it never enters Temporal's history, and they store test output
 * (with every secret masked) in PostgreSQL, returning only the verdict.
 */
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import type { Pool } from 'pg';
import type { Config } from '../../config';
import { unseal } from '../../crypto/sealed';
import { withHeartbeat } from '../heartbeat';
import { maskSecrets } from '../../core/mask';
import type {
  CheckoutInput,
  CheckoutResult,
  CollectResultsInput,
  CollectResultsResult,
  DiscoverInput,
  RunTestInput,
  RunTestResult,
} from '../types';
import { discoverTests, InvalidPatternError } from './discover';
import { fetchRepository, GitPullError } from './git';
import { fetchHgRepository } from './hg';
import { collectJUnitResults } from './junit';
import { runTestFile } from './runTestFile';
import { buildEnvironment, loadBuildSecrets } from './secrets';
import { repoIdOfSession, upsertTestResult } from '../../db/sessions';
import { loadPullSource } from '../../db/repos';

/** How runTestFile marks output it cut at the front (TailBuffer). */
const TRUNCATED_MARKER = /^\[sluice\] output truncated: [^\n]*\n/;

/** Test output with every secret value masked; a front cut may have split one. */
export function maskOutput(output: string, secrets: string[]): string {
  if (secrets.length === 0) return output;
  const marker = TRUNCATED_MARKER.exec(output);
  if (!marker) return maskSecrets(output, secrets);
  return marker[0] + maskSecrets(output.slice(marker[0].length), secrets, { cutAtStart: true });
}

export interface BuildDeps {
  config: Config;
  pool: Pool;
  /** The task queue only this worker process listens on; returned by checkout. */
  workerQueue: string;
}

export function createBuildActivities({ config, pool, workerQueue }: BuildDeps) {
  return {
    async checkout(input: CheckoutInput): Promise<CheckoutResult> {
      const repo = await loadPullSource(pool, input.repoId);
      if (!repo) throw ApplicationFailure.nonRetryable(`repository ${input.repoId} no longer exists`, 'CheckoutFailed');
      const workdir = path.resolve(config.workspaceDir, `session-${input.sessionId}`);
      try {
        // The repository's SCM decides (the API refuses a trigger naming the other one).
        const privateKey = unseal(config.secretKey, repo.ssh_private_key_sealed);
        const common = { pullUrl: repo.pull_url, privateKey, workdir, branch: input.branch, head: input.head };
        const got = await withHeartbeat((signal) =>
          repo.scm === 'hg'
            ? fetchHgRepository({ ...common, signal })
            : fetchRepository({ ...common, refspecs: input.refspecs ?? [], signal }),
        );
        return { workerQueue, workdir, commitId: got.commitId, committers: got.committers, message: got.message };
      } catch (err) {
        // Stopped: git or hg (and its ssh) were killed through the signal.
        if (err instanceof GitPullError && err.reason === 'aborted') throw new CancelledFailure('stopped while checking out');
        // A wrong key, an unknown commit or a bad URL do not mend by retrying; an unreachable
        // host might. git.ts and hg.ts scrub their messages of anything secret.
        if (err instanceof GitPullError && err.retryable) throw ApplicationFailure.retryable(err.message, 'CheckoutUnreachable');
        throw ApplicationFailure.nonRetryable((err as Error).message, 'CheckoutFailed');
      }
    },

    async discoverTests(input: DiscoverInput): Promise<string[]> {
      try {
        return await discoverTests(input.workdir, input.pattern);
      } catch (err) {
        if (err instanceof InvalidPatternError) throw ApplicationFailure.nonRetryable(err.message, 'InvalidPattern');
        throw err;
      }
    },

    async runTest(input: RunTestInput): Promise<RunTestResult> {
      const ctx = Context.current();
      // Build secrets come from PostgreSQL, never through Temporal (see secrets.ts).
      const repoId = input.repoId ?? (await repoIdOfSession(pool, input.sessionId));
      const secrets = repoId === null ? { values: {}, unreadable: [] } : await loadBuildSecrets(pool, config.secretKey, repoId);
      const result = await withHeartbeat((signal) =>
        runTestFile({
          workdir: input.workdir,
          path: input.path,
          command: input.command,
          env: buildEnvironment(input.env, secrets.values),
          timeoutMs: input.timeoutMs,
          signal,
        }),
      );
      // Stopped: the process group is dead now; the session reports it as stopped, not failed.
      if (ctx.cancellationSignal.aborted) throw new CancelledFailure('stopped while running');
      let output = maskOutput(result.output, Object.values(secrets.values));
      for (const name of secrets.unreadable) {
        output += `[sluice] secret ${name} could not be decrypted (was SLUICE_SECRET_KEY changed?); it was not set\n`;
      }
      await upsertTestResult(pool, {
        sessionId: input.sessionId,
        path: input.path,
        status: result.status,
        exitCode: result.exitCode,
        durationMs: result.durationMs,
        output,
      });
      return { path: input.path, status: result.status, exitCode: result.exitCode, durationMs: result.durationMs };
    },

    async collectResults(input: CollectResultsInput): Promise<CollectResultsResult> {
      // Only where checkout put it: the tree is the only place reports are read from.
      if (path.dirname(path.resolve(input.workdir)) !== path.resolve(config.workspaceDir)) {
        throw ApplicationFailure.nonRetryable('not a workspace', 'InvalidWorkdir');
      }
      return withHeartbeat(() => collectJUnitResults({ pool, secretKey: config.secretKey }, input));
    },

    async cleanupWorkspace(workdir: string): Promise<void> {
      // Only ever remove what checkout made.
      if (path.dirname(path.resolve(workdir)) !== path.resolve(config.workspaceDir)) throw new Error('not a workspace');
      await rm(workdir, { recursive: true, force: true });
    },
  };
}
