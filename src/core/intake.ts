/**
 * Intake (issue 26): what becomes of a delivery, decided from what the API knows of the
 * repository, and the records it leaves, written later by whoever carries them (db/intake.ts).
 * Pure: the API gathers what it knows (api/triggerKnowledge.ts), plans here, hands the plan to
 * Temporal and answers; the suite's workflow records the trigger and its session before it
 * queues it. So a trigger costs the API no write, and PostgreSQL may be away meanwhile.
 *
 * The rules are core/selection's, per ref of the delivery; a delivery of several refs becomes
 * one ci_event and a session per ref that builds, as before.
 */
import { addressesBranch, combineSelections, selectTrigger, triggerKind, type BranchState, type Selection, type SelectionRepo } from './selection';
import type { TriggerEvent } from './types';

/** The ci_event of an accepted delivery. Carried in Temporal's history: nothing secret. */
export interface TriggerRecord {
  guid: string;
  repoId: number;
  provider: string;
  decision: 'build' | 'skip';
  reason: string | null;
  /** The ref that decided (the first that builds, else the first skipped), as received. */
  trigger: TriggerEvent;
  /** When the API accepted it, in ms since the epoch: the ci_event's `received_at`. */
  acceptedAt: number;
}

/** A branch row's visibility as a trigger says it (a push shows, a delete hides). */
export interface BranchUpdate {
  branch: string;
  hidden: boolean;
}

/** A session to record, in the queue of suite `suiteId`. */
export interface SessionIntake {
  /** `<guid>:<index of its ref in the delivery>`: the same session however often it is recorded. */
  key: string;
  suiteId: number;
  branch: string;
  ref: string | null;
  head: string;
  force: boolean;
  profileName: string;
  workers: number;
}

/** What one carrier records in one go; every part of it is written idempotently. */
export interface Intake {
  repoId: number;
  acceptedAt: number;
  /** Absent for a dropped delivery that only shows a branch again (nothing else of it is kept). */
  record?: TriggerRecord;
  branchUpdates: BranchUpdate[];
  sessions: SessionIntake[];
}

/** What the API knows of the repository a delivery is for. */
export interface DeliveryKnowledge {
  repo: { id: number } & SelectionRepo;
  suiteFor(branch: string): { id: number; workers: number } | undefined;
  /** The branch's row; null when it has none. */
  branchState(name: string): BranchState | null;
}

export type DeliveryPlan =
  | { decision: 'drop'; reasons: string[]; branchUpdates: BranchUpdate[] }
  | {
      decision: 'build' | 'skip';
      record: TriggerRecord;
      branchUpdates: BranchUpdate[];
      /** In the delivery's order, each with the queue position its ref asked for. */
      sessions: (SessionIntake & { queuePosition: 'tail' | 'head' })[];
    };

/**
 * Decides every ref of a delivery and says what to record: a ci_event unless all are dropped,
 * a session per ref that builds, and the branch rows to show or hide whatever the decision,
 * in name order (a blacklisted branch's row is left alone: selection says no update for it).
 */
export function planDelivery(
  delivery: { guid: string; provider: string; acceptedAt: number; events: readonly [TriggerEvent, ...TriggerEvent[]] },
  known: DeliveryKnowledge,
): DeliveryPlan {
  const items = delivery.events.map((event) => {
    const suite = known.suiteFor(event.branch);
    const selection: Selection = selectTrigger({
      trigger: event,
      repo: known.repo,
      branch: addressesBranch(triggerKind(event)) ? known.branchState(event.branch) : null,
      hasSuite: suite !== undefined,
    });
    return { event, suite, selection };
  });
  const branchUpdates = items
    .filter((i) => i.selection.branchUpdate)
    .map((i) => ({ branch: i.event.branch, hidden: i.selection.branchUpdate!.hidden }))
    .sort((a, b) => (a.branch < b.branch ? -1 : a.branch > b.branch ? 1 : 0));

  const combined = combineSelections(items.map((i) => ({ label: i.event.ref ?? i.event.branch, selection: i.selection })));
  if (combined.decision === 'drop') return { decision: 'drop', reasons: items.map((i) => i.selection.reason ?? ''), branchUpdates };

  const primary = items.find((i) => i.selection.decision === 'build') ?? items.find((i) => i.selection.decision === 'skip')!;
  const record: TriggerRecord = {
    guid: delivery.guid,
    repoId: known.repo.id,
    provider: delivery.provider,
    decision: combined.decision,
    reason: combined.reason,
    trigger: primary.event,
    acceptedAt: delivery.acceptedAt,
  };
  const sessions = items.flatMap(({ event, suite, selection }, index) =>
    // selectTrigger builds only when a suite exists.
    selection.decision === 'build' && suite
      ? [
          {
            key: `${delivery.guid}:${index}`,
            suiteId: suite.id,
            branch: event.branch,
            ref: event.ref ?? null,
            head: event.head,
            force: event.force,
            profileName: event.profileName ?? 'default',
            workers: suite.workers,
            queuePosition: event.queuePosition,
          },
        ]
      : [],
  );
  return { decision: combined.decision, record, branchUpdates, sessions };
}

/**
 * What each carrier takes: every suite with a session gets the record and its own session (the
 * record and the branch updates are written by whichever comes first, and found by the other);
 * a plan with no session goes whole to the repository's intake. Nothing to record: none.
 */
export interface Carried {
  /** One a session: its suite's queue records it, then queues it. */
  suites: { session: SessionIntake & { queuePosition: 'tail' | 'head' }; intake: Intake }[];
  /** The repository's intake workflow records it; null when there is nothing to record. */
  repo: Intake | null;
}

export function intakesOf(plan: DeliveryPlan, repoId: number, acceptedAt: number): Carried {
  if (plan.decision === 'drop') {
    return { suites: [], repo: plan.branchUpdates.length > 0 ? { repoId, acceptedAt, branchUpdates: plan.branchUpdates, sessions: [] } : null };
  }
  if (plan.sessions.length === 0) return { suites: [], repo: { repoId, acceptedAt, record: plan.record, branchUpdates: plan.branchUpdates, sessions: [] } };
  return {
    suites: plan.sessions.map(({ queuePosition, ...session }) => ({
      session: { ...session, queuePosition },
      intake: { repoId, acceptedAt, record: plan.record, branchUpdates: plan.branchUpdates, sessions: [session] },
    })),
    repo: null,
  };
}

/**
 * A session for a suite's queue: one whose records the suite writes first (`intake`: a trigger
 * just accepted, core/intake.ts), or one recorded already (`sessionId`: histories from before
 * intakes).
 */
export interface EnqueueRequest {
  suiteId: number;
  intake?: Intake;
  sessionId?: number;
  queuePosition: 'tail' | 'head';
  /** `org/repo`, for the Temporal UI. */
  repoLabel: string;
  branch: string;
  /**
   * The trigger's trace (a W3C traceparent) when tracing is on: the session waits in its
   * suite's queue, and its workflow joins the trace of the request that asked for it.
   */
  traceparent?: string;
}
