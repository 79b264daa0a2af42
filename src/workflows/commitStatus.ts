/**
 * A session's commit statuses on the hosting site (workflow code; issue 13, docs/builds.md,
 * "Commit statuses"): `running` when its tests start, its outcome once it is recorded. One lane, in
 * that order: the outcome goes out after the `running` post was delivered or given up, so the
 * site never ends up showing `running` over the outcome. Each post is a postCommitStatus
 * activity under the session's status retry policy; a post that fails for good is in the log
 * (commit_status_attempts) and never holds up or changes the build.
 *
 * Not opened (null) when the repository posts no statuses (SessionContext.commitStatus): then
 * the session schedules nothing more than it did before statuses existed.
 */
import { log, proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities/types';
import type { CommitStatusInput } from '../core/commitStatus';
import type { SessionContext } from '../core/session';
import { DEFAULT_STATUS_RETRY, finalPhase, statusContext, statusDescription, type StatusPhase } from '../core/commitStatus';
import type { SessionSnapshot } from '../core/payload';
import { orderedLane } from './orderedLane';
import { retryPolicy } from './proxies';
import { failureMessage } from './status';

export interface CommitStatuses {
  /**
   * The session's tests start (its `test`): `running`, under the context of the profile it runs
   * (null: a plan's parent, whose status sums up its parts').
   */
  running(snap: SessionSnapshot, profileName: string | null): void;
  /**
   * The session ended and is recorded: its outcome, under the context `running` used (else the
   * profile's). None for a skipped session, nor for one without a commit.
   */
  finished(snap: SessionSnapshot, profileName: string, reason: string | null): void;
  /** Resolves once every post is delivered or given up. */
  drain(): Promise<void>;
}

export function openCommitStatuses(ctx: SessionContext): CommitStatuses | null {
  if (!ctx.commitStatus) return null;
  const { postCommitStatus } = proxyActivities<Activities>({
    // One attempt: an HTTP request with a 10 s deadline.
    startToCloseTimeout: '1 minute',
    summary: 'commit status',
    retry: retryPolicy(ctx.settings.statusRetry ?? DEFAULT_STATUS_RETRY),
  });

  const lane = orderedLane<CommitStatusInput>(postCommitStatus, (next, err) =>
    // Refused or given up: every attempt and why is in the log; the outcome still goes out.
    log.info('commit status not posted', { sessionId: ctx.sessionId, phase: next.phase, error: failureMessage(err) }),
  );
  let context: string | null = null;
  const post = (phase: StatusPhase, snap: SessionSnapshot, profileName: string | null, reason: string | null) => {
    if (snap.commitId === null) return;
    context ??= statusContext(profileName);
    lane.push({
      sessionId: ctx.sessionId,
      commitId: snap.commitId,
      phase,
      context,
      description: statusDescription(phase, { session: ctx.sessionId, counts: snap.counts, reason, stoppedBy: snap.stoppedBy }),
      targetUrl: ctx.url,
      // The branch means something to the site only for a build of a push to it.
      ref: ctx.trust.push ? ctx.branch : null,
    });
  };

  return {
    running(snap, profileName) {
      if (context === null) post('running', snap, profileName, null);
    },
    finished(snap, profileName, reason) {
      const phase = finalPhase(snap.status);
      if (phase) post(phase, snap, profileName, reason);
    },
    drain: () => lane.drain(),
  };
}
