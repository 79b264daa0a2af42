/**
 * What becomes of a parsed trigger (issue 26): the commit-selection rules decide, per ref the
 * delivery changed, from what the API knows of the repository (api/triggerKnowledge.ts), and
 * the plan (core/intake.ts) goes to Temporal before the answer. The API writes nothing:
 *
 * - each ref that builds goes to its suite's workflow (signal-with-start, batched per suite:
 *   temporal/enqueue.ts) with the ci_event and its session to record, and the suite records
 *   them, then queues the session;
 * - a delivery that builds nothing but leaves a record (a skip, a branch shown or hidden) goes
 *   to the repository's intake workflow, which records it;
 * - when every ref is dropped and no branch changes, nothing happens, and the caller answers
 *   422 `DROPPED`.
 *
 * A trigger is accepted once Temporal holds it, PostgreSQL answering or not; its records follow
 * within moments (at once, or when PostgreSQL is back). When Temporal cannot take it, the
 * caller hears 503 and may retry. One gap remains, narrow: for a delivery of several refs, one
 * suite may take its part before another refuses; the answer is then 503, yet that part builds.
 */
import { randomUUID } from 'node:crypto';
import { intakesOf, planDelivery, type EnqueueRequest, type Intake } from '../core/intake';
import { addressesBranch, triggerKind } from '../core/selection';
import type { TriggerEvent } from '../core/types';
import type { TriggerTarget } from '../db/triggerKnowledge';
import type { TriggerKnowledge } from './triggerKnowledge';

export class EnqueueFailed extends Error {
  constructor(cause: unknown) {
    super('could not queue the build', { cause });
  }
}

export interface IntakeDeps {
  knowledge: TriggerKnowledge;
  /** Hands a session (with its records) to its suite's queue. */
  enqueue: (req: EnqueueRequest) => Promise<void>;
  /** Hands a delivery that builds nothing to the repository's intake, to be recorded. */
  intake: (intake: Intake) => Promise<void>;
}

export type Accepted =
  | { recorded: false; decision: 'drop'; reasons: string[] }
  | { recorded: true; guid: string; decision: 'build' | 'skip'; reason: string | null; sessions: number };

export async function acceptTrigger(
  deps: IntakeDeps,
  delivery: { target: TriggerTarget; provider: string; events: [TriggerEvent, ...TriggerEvent[]] },
): Promise<Accepted> {
  const { target, provider, events } = delivery;
  const { repo } = target;
  const branchNames = [...new Set(events.filter((e) => addressesBranch(triggerKind(e))).map((e) => e.branch))];
  const branches = await deps.knowledge.branches(repo.id, branchNames);
  const suites = new Map(target.suites.map((s) => [s.branch, s]));
  const acceptedAt = Date.now();
  const guid = randomUUID();
  const plan = planDelivery(
    { guid, provider, acceptedAt, events },
    {
      repo: { id: repo.id, pullRequestOnly: repo.pull_request_only, branchBlacklist: repo.branch_blacklist },
      suiteFor: (branch) => suites.get(branch),
      branchState: (name) => branches.get(name) ?? null,
    },
  );
  const carried = intakesOf(plan, repo.id, acceptedAt);
  try {
    await Promise.all([
      ...carried.suites.map(({ session, intake }) =>
        deps.enqueue({
          suiteId: session.suiteId,
          intake,
          queuePosition: session.queuePosition,
          repoLabel: `${repo.org_name}/${repo.name}`,
          branch: session.branch,
        }),
      ),
      ...(carried.repo ? [deps.intake(carried.repo)] : []),
    ]);
  } catch (err) {
    throw new EnqueueFailed(err);
  }
  deps.knowledge.noteBranchUpdates(repo.id, plan.branchUpdates, acceptedAt);
  if (plan.decision === 'drop') return { recorded: false, decision: 'drop', reasons: plan.reasons };
  return { recorded: true, guid, decision: plan.decision, reason: plan.record.reason, sessions: plan.sessions.length };
}
