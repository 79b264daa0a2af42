/**
 * The `postCommitStatus` activity: one attempt (delivery/postStatus.ts) under the retry policy
 * the session workflow gives it (workflows/commitStatus.ts). Posted: it returns. Otherwise it
 * throws: retryable while the policy allows another attempt and one may mend it (the wait from
 * the provider's Retry-After or rate-limit reset, else the jittered backoff), non-retryable once
 * the provider refused for good or the last attempt failed. Each attempt is logged by the
 * attempt itself, so the log has it whatever Temporal does next. The token is read here, from
 * PostgreSQL, never from the input: it crosses no Temporal history.
 */
import { ApplicationFailure } from '@temporalio/common';
import { attemptStatus, type StatusDeps } from '../delivery/postStatus';
import { countNotification } from '../metrics/counts';
import { currentAttempt } from './attempt';
import { FAILURE_TYPES } from './failures';
import type { CommitStatusInput, CommitStatusResult } from '../core/commitStatus';

export function createCommitStatusActivity(deps: StatusDeps): (input: CommitStatusInput) => Promise<CommitStatusResult> {
  return async (input) => {
    const { attempt, maximumAttempts, retry } = currentAttempt();
    const done = await attemptStatus(deps, { ...input, attempt, maxAttempts: maximumAttempts, retry });
    if (!done) return { posted: false, detail: 'the repository has no status provider, repository path or token (any more)' };
    countNotification('commit_status', done.outcome);
    const what = `commit status ${done.state} (${input.context}) for ${input.commitId.slice(0, 12)}, attempt ${attempt}`;
    switch (done.outcome) {
      case 'delivered':
        return { posted: true, detail: `${what}: posted (HTTP ${done.statusCode})` };
      case 'retrying':
        throw ApplicationFailure.create({
          message: `${what}: ${done.error}`,
          type: FAILURE_TYPES.commitStatusRetrying,
          nonRetryable: false,
          nextRetryDelay: done.nextDelayMs,
        });
      case 'gave_up':
        throw ApplicationFailure.nonRetryable(`${what}: ${done.error}`, FAILURE_TYPES.commitStatusGaveUp);
      case 'dropped':
        throw ApplicationFailure.nonRetryable(`${what}: ${done.error}`, FAILURE_TYPES.commitStatusDropped);
    }
  };
}
