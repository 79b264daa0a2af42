/**
 * What becomes of a parsed trigger: the commit-selection rules (core/selection) decide, per
 * ref the delivery changed, whether it builds, is skipped or dropped; this records the outcome
 * and hands the builds to the orchestrator, all or nothing, in one transaction:
 *
 * - branch rows are created, hidden (branch-delete) or shown again (push) as the rules say,
 *   whatever the decision (a blacklisted branch's row is left alone);
 * - when every ref is dropped nothing else is stored, and the caller answers 422 `DROPPED`;
 * - otherwise one ci_event records the delivery: `build` when any ref builds, else `skip`,
 *   with the reason (null for a plain build; for a delivery of several refs, the refs that
 *   were not built and why); each ref that builds gets a session, enqueued before COMMIT.
 *
 * The enqueue runs inside the transaction, before COMMIT: if Temporal cannot take it, nothing
 * is stored and the caller hears 503 and may retry; once it has taken it, the rows commit. Two
 * gaps remain, both narrow: the suite workflow may ask for the session a moment before COMMIT
 * lands (its loadSession activity fails and is retried), and COMMIT (or, for a delivery of
 * several refs, a later enqueue) may fail after a successful enqueue (that session never
 * appears; at its turn its workflow's load keeps failing until its retries run out, then it
 * tells the suite it is done, and nothing is built).
 */
import { randomUUID } from 'node:crypto';
import type { Pool } from 'pg';
import { addressesBranch, combineSelections, selectTrigger, triggerKind, type Selection } from '../core/selection';
import type { EnqueueRequest, TriggerEvent } from '../core/types';
import { findBranch, setBranchHidden } from '../db/branches';
import { withTransaction } from '../db/transaction';
import type { RepoRow } from '../db/repos';
import { insertCiEvent, insertSession } from '../db/sessions';
import { findSuiteForBranch, type SuiteRow } from '../db/suites';

export class EnqueueFailed extends Error {
  constructor(cause: unknown) {
    super('could not queue the build', { cause });
  }
}

export type Accepted =
  | { recorded: false; decision: 'drop'; reasons: string[] }
  | { recorded: true; guid: string; decision: 'build' | 'skip'; reason: string | null; sessionIds: number[] };

export async function acceptTrigger(
  pool: Pool,
  enqueue: (req: EnqueueRequest) => Promise<void>,
  delivery: { repo: RepoRow; provider: string; events: [TriggerEvent, ...TriggerEvent[]] },
): Promise<Accepted> {
  const { repo, provider, events } = delivery;
  return withTransaction(pool, async (client) => {
    const items: { event: TriggerEvent; suite: SuiteRow | undefined; selection: Selection }[] = [];
    for (const event of events) {
      const kind = triggerKind(event);
      const suite = await findSuiteForBranch(client, repo.id, event.branch);
      const branch = addressesBranch(kind) ? await findBranch(client, repo.id, event.branch) : null;
      const selection = selectTrigger({
        trigger: event,
        repo: { pullRequestOnly: repo.pull_request_only, branchBlacklist: repo.branch_blacklist },
        branch,
        hasSuite: suite !== undefined,
      });
      items.push({ event, suite, selection });
    }
    // In name order, so two deliveries touching the same branches never wait on each other in a circle.
    const updates = items
      .filter((i) => i.selection.branchUpdate)
      .sort((a, b) => (a.event.branch < b.event.branch ? -1 : a.event.branch > b.event.branch ? 1 : 0));
    for (const { event, selection } of updates) {
      await setBranchHidden(client, repo.id, event.branch, selection.branchUpdate!.hidden);
    }

    const combined = combineSelections(items.map((i) => ({ label: i.event.ref ?? i.event.branch, selection: i.selection })));
    if (combined.decision === 'drop') {
      return { recorded: false, decision: 'drop', reasons: items.map((i) => i.selection.reason ?? '') };
    }

    const primary = items.find((i) => i.selection.decision === 'build') ?? items.find((i) => i.selection.decision === 'skip')!;
    const guid = randomUUID();
    const ciEventId = await insertCiEvent(client, {
      guid,
      repoId: repo.id,
      provider,
      decision: combined.decision,
      reason: combined.reason,
      trigger: primary.event,
    });

    const sessionIds: number[] = [];
    for (const { event, suite, selection } of items) {
      if (selection.decision !== 'build') continue;
      // selectTrigger builds only when a suite exists.
      const s = suite!;
      const sessionId = await insertSession(client, {
        ciEventId,
        suiteId: s.id,
        branch: event.branch,
        ref: event.ref ?? null,
        head: event.head,
        force: event.force,
        profileName: event.profileName ?? 'default',
        workers: s.workers,
      });
      try {
        await enqueue({
          suiteId: s.id,
          sessionId,
          queuePosition: event.queuePosition,
          repoLabel: `${repo.org_name}/${repo.name}`,
          branch: event.branch,
        });
      } catch (err) {
        throw new EnqueueFailed(err);
      }
      sessionIds.push(sessionId);
    }
    return { recorded: true, guid, decision: combined.decision, reason: combined.reason, sessionIds };
  });
}
