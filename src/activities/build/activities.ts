/**
 * Build activities: the Temporal-facing wrappers of git.ts, discover.ts and runTestFile.ts.
 * They load what is secret (the SSH key) from PostgreSQL themselves, so it never enters
 * Temporal's history, and they store test output in PostgreSQL, returning only the verdict.
 */
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import type { Pool } from 'pg';
import type { Config } from '../../config';
import { unseal } from '../../crypto/sealed';
import { withHeartbeat } from '../heartbeat';
import type { CheckoutInput, CheckoutResult, DiscoverInput, RunTestInput, RunTestResult } from '../types';
import { discoverTests, InvalidPatternError } from './discover';
import { fetchRepository, GitPullError } from './git';
import { runTestFile } from './runTestFile';

export interface BuildDeps {
  config: Config;
  pool: Pool;
  /** The task queue only this worker process listens on; returned by checkout. */
  workerQueue: string;
}

export function createBuildActivities({ config, pool, workerQueue }: BuildDeps) {
  return {
    async checkout(input: CheckoutInput): Promise<CheckoutResult> {
      const { rows } = await pool.query<{ pull_url: string; ssh_private_key_sealed: string }>(
        'SELECT pull_url, ssh_private_key_sealed FROM repos WHERE id = $1',
        [input.repoId],
      );
      const repo = rows[0];
      if (!repo) throw ApplicationFailure.nonRetryable(`repository ${input.repoId} no longer exists`, 'CheckoutFailed');
      const workdir = path.resolve(config.workspaceDir, `session-${input.sessionId}`);
      try {
        const got = await withHeartbeat(() =>
          fetchRepository({
            pullUrl: repo.pull_url,
            privateKey: unseal(config.secretKey, repo.ssh_private_key_sealed),
            workdir,
            branch: input.branch,
            head: input.head,
          }),
        );
        return { workerQueue, workdir, commitId: got.commitId, committers: got.committers };
      } catch (err) {
        // A wrong key, an unknown commit or a bad URL do not mend by retrying; an unreachable
        // host might. git.ts's messages are already scrubbed of anything secret.
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
      const result = await withHeartbeat((signal) =>
        runTestFile({
          workdir: input.workdir,
          path: input.path,
          command: input.command,
          env: input.env,
          timeoutMs: input.timeoutMs,
          signal,
        }),
      );
      // Stopped: the process group is dead now; the session reports it as stopped, not failed.
      if (ctx.cancellationSignal.aborted) throw new CancelledFailure('stopped while running');
      await pool.query(
        `INSERT INTO test_results (session_id, path, status, exit_code, duration_ms, output)
         VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (session_id, path) DO UPDATE
           SET status = EXCLUDED.status, exit_code = EXCLUDED.exit_code, duration_ms = EXCLUDED.duration_ms,
               output = EXCLUDED.output, finished_at = now()`,
        // PostgreSQL text cannot hold NUL; test output sometimes does.
        [input.sessionId, input.path, result.status, result.exitCode, Math.round(result.durationMs), result.output.replace(/\0/g, '')],
      );
      return { path: input.path, status: result.status, exitCode: result.exitCode, durationMs: result.durationMs };
    },

    async cleanupWorkspace(workdir: string): Promise<void> {
      // Only ever remove what checkout made.
      if (path.dirname(path.resolve(workdir)) !== path.resolve(config.workspaceDir)) throw new Error('not a workspace');
      await rm(workdir, { recursive: true, force: true });
    },
  };
}
