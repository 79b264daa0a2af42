/**
 * suiteWorkflow: the entity workflow of one suite (repository + branch). It owns the queue and
 * guarantees one build at a time. A queued session gets its workflow only when it is needed:
 * at its turn (started with its turn given), when a newer one squashes it (a batch of them ends
 * in one squashedWorkflow), when it is stopped, or when its `received` must be retried. A burst
 * of triggers thus costs the suite one signal each and nothing more until the queue moves.
 *
 * A trigger arrives with its records still to write (issue 26: the API answers without
 * PostgreSQL): the suite writes them (the ci_event and the session, one local activity for all
 * that arrived together, retried until PostgreSQL answers) and queues the sessions by the ids
 * they got. That activity also starts their `received`, which the worker sends beside the suite
 * (activities/received.ts); a session whose receiver did not get it is woken here
 * (retryReceived).
 */
import { idsOf } from '../core/workflowIds';
import {
  condition,
  continueAsNew,
  patched,
  getExternalWorkflowHandle,
  log,
  ParentClosePolicy,
  proxyLocalActivities,
  setHandler,
  startChild,
  workflowInfo,
  WorkflowIdReusePolicy,
} from '@temporalio/workflow';
import { SluiceBranch, SluiceRepo, SluiceSession, SluiceStatus } from './searchAttributes';
import { sessionWorkflow } from './session';
import { squashedWorkflow } from './squashed';
import type { Activities } from '../activities/types';
import {
  buildDoneSignal,
  enqueueManySignal,
  enqueueSignal,
  goSignal,
  retryReceivedSignal,
  squashedSignal,
  stopQueuedSignal,
  stopSignal,
  type EnqueueRequest,
  type SessionWorkflowInput,
  type SuiteWorkflowInput,
} from './signals';
import { failureMessage, now } from './status';
import { intakeRecords } from './proxies';

/** Continue-as-new well before Temporal would suggest it; a suite can live for years. */
const MAX_HISTORY_EVENTS = 2_000;
/** How often, while a session builds, the suite makes sure its workflow still exists. */
const LIVENESS_MS = 60_000;
/** Sessions per squashedWorkflow: its payloads stay well under Temporal's size limits. */
const SQUASH_BATCH = 50;

/** A read of the suite's settings: local, as the session's recorders (proxies.ts). */
const settings = proxyLocalActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '100 milliseconds', maximumInterval: '30 seconds' },
});

/** Asks Temporal whether a session's workflow is gone: a few tries, then the suite goes on. */
const liveness = proxyLocalActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '10 seconds', maximumAttempts: 3 },
});

export async function suiteWorkflow(input: SuiteWorkflowInput): Promise<void> {
  const ids = idsOf(workflowInfo().workflowId);
  const waiting: number[] = [...(input.waiting ?? [])];
  let running: number | null = input.running ?? null;
  /** Waiting sessions whose workflow runs already (it waits for `go` or `squashed`). */
  const started = new Set<number>(input.started ?? []);
  /** When each waiting session joined the queue: its `queue_first_seen_at`. */
  const queuedAt = new Map<number, number>(input.queuedAt ?? []);
  /** The sessions that arrived, oldest first (those carried over without it: by id), for CI squash's newest. */
  let arrivals: number[] = input.arrivals ?? [...waiting].sort((a, b) => a - b);
  const arrived: EnqueueRequest[] = [];
  const toWake: number[] = [];
  const toStop: { sessionId: number; stoppedBy: string }[] = [];

  setHandler(enqueueSignal, (req) => void arrived.push(req));
  setHandler(enqueueManySignal, (reqs) => void arrived.push(...reqs));
  setHandler(retryReceivedSignal, ({ sessionId }) => void toWake.push(sessionId));
  setHandler(stopQueuedSignal, (req) => void toStop.push(req));
  setHandler(buildDoneSignal, ({ sessionId }) => {
    if (running === sessionId) running = null;
    // A queued session that was stopped leaves the queue.
    const at = waiting.indexOf(sessionId);
    if (at >= 0) waiting.splice(at, 1);
    started.delete(sessionId);
    queuedAt.delete(sessionId);
  });

  const [repo, branch] = splitLabel(input.label);

  const wakeUp = () =>
    arrived.length > 0 || toWake.length > 0 || toStop.length > 0 || (running === null && waiting.length > 0) || historyIsLong(input.historyLimit);

  // While a session builds, the suite makes sure now and then that its workflow still exists:
  // one terminated by hand would never say it is done, and the queue would wait forever. The
  // check is due by the clock, whatever else wakes the suite meanwhile (a busy branch's triggers).
  const livenessMs = input.livenessMs ?? LIVENESS_MS;
  let watched = null as { session: number; due: number } | null;

  for (;;) {
    if (running === null) await condition(wakeUp);
    else {
      if (watched?.session !== running) watched = { session: running, due: Date.now() + livenessMs };
      const left = watched.due - Date.now();
      if (left <= 0 || !(await condition(wakeUp, left))) {
        watched.due = Date.now() + livenessMs;
        if (running !== null) await checkRunning(running);
      }
    }

    if (arrived.length > 0) {
      const reqs = arrived.splice(0);
      const intakes = reqs.flatMap((req) => (req.intake ? [req.intake] : []));
      const recorded = new Map(intakes.length > 0 ? await intakeRecords.recordIntakes(intakes) : []);
      const seen = new Set<number>(waiting);
      if (running !== null) seen.add(running);
      for (const req of reqs) {
        // No id: its suite was removed after the trigger was accepted.
        const sessionId = req.sessionId ?? recorded.get(req.intake?.sessions[0]?.key ?? '');
        if (sessionId === undefined || seen.has(sessionId)) continue; // or a repeated signal
        seen.add(sessionId);
        arrivals.push(sessionId);
        queuedAt.set(sessionId, now());
        if (req.queuePosition === 'head') waiting.unshift(sessionId);
        else waiting.push(sessionId);
      }
    }

    if (toStop.length > 0) await Promise.all(toStop.splice(0).map(stopOne));

    // Woken early: its workflow runs now and waits for its turn like any other.
    const wake = toWake.splice(0).filter((id) => waiting.includes(id) && !started.has(id));
    for (const id of wake) started.add(id);
    await Promise.all(wake.map(async (id) => (await startSession(id, {})) || started.delete(id)));

    if (running === null && waiting.length > 0) {
      if (waiting.length > 1 && (await settings.suiteSettings(input.suiteId)).ciSquash) await squash();
      const next = waiting.shift()!;
      arrivals = arrivedWaiting();
      // Running before it starts: a build that ends at once may say so before the start returns.
      running = next;
      if (started.delete(next)) {
        try {
          await getExternalWorkflowHandle(ids.session(next)).signal(goSignal);
        } catch (err) {
          // The session is gone (an operator terminated it): it will never say it is done.
          log.warn('session gone before its turn; passing it over', { session: next, error: failureMessage(err) });
          if (running === next) running = null;
        }
      } else if (!(await startSession(next, { go: true })) && running === next) {
        running = null; // it had a workflow already (a repeated signal of an old session): nothing new runs
      }
    }

    // Signals that arrive while continuing are not lost: Temporal refuses to close the run while
    // it has unhandled signals, and replays this loop with them first.
    if (historyIsLong(input.historyLimit) && arrived.length === 0 && toWake.length === 0 && toStop.length === 0) {
      await continueAsNew<typeof suiteWorkflow>({ ...input, waiting, running, started: [...started], queuedAt: [...queuedAt], arrivals: arrivedWaiting() });
    }
  }

  /** `arrivals` of the sessions still waiting: the others need no rank. */
  function arrivedWaiting(): number[] {
    const queued = new Set(waiting);
    return arrivals.filter((id) => queued.has(id));
  }

  /** The running session's workflow is gone without a word: its record ends in error (the activity), and the queue goes on. */
  async function checkRunning(sessionId: number): Promise<void> {
    // Temporal not answering for now is no news: the next check asks again, and the queue's
    // signals are not left waiting meanwhile.
    if (!(await liveness.sessionGone(sessionId, ids.session(sessionId)).catch(() => false))) return;
    log.warn("the running session's workflow is gone; the queue goes on without it", { session: sessionId });
    if (running === sessionId) running = null;
  }

  /** A stop for a session that may have no workflow yet: one that waits ends as stopped at once. */
  async function stopOne({ sessionId, stoppedBy }: { sessionId: number; stoppedBy: string }): Promise<void> {
    const at = waiting.indexOf(sessionId);
    if (at >= 0 && !started.has(sessionId)) {
      waiting.splice(at, 1);
      await startSession(sessionId, { stoppedBy });
      return;
    }
    // Its workflow runs (or has ended, or it is not this suite's): the stop goes to it.
    await getExternalWorkflowHandle(ids.session(sessionId))
      .signal(stopSignal, { stoppedBy })
      .catch((err: unknown) => log.info('session to stop is gone', { session: sessionId, error: failureMessage(err) }));
  }

  /**
   * CI squash: only the newest queued session builds; the others end, saying into which. The
   * newest is the last to arrive here: ids follow arrival only as long as one writer records
   * them (the API records ahead of the suite, api/herald.ts; a rebuild records before it queues).
   * Runs from before this rule took the highest id, and replay so.
   */
  async function squash(): Promise<void> {
    // Every waiting session is in `arrivals` (it is pushed there as it joins the queue).
    const newest = patched('squash-newest-by-arrival') ? arrivedWaiting().at(-1)! : Math.max(...waiting);
    const older = waiting.filter((id) => id !== newest);
    waiting.splice(0, waiting.length, newest);
    const withWorkflow = older.filter((id) => started.delete(id));
    const without = older.filter((id) => !withWorkflow.includes(id));
    for (const id of without) queuedAt.delete(id);
    const batches: number[][] = [];
    for (let i = 0; i < without.length; i += SQUASH_BATCH) batches.push(without.slice(i, i + SQUASH_BATCH));
    await Promise.all([
      ...withWorkflow.map((id) =>
        getExternalWorkflowHandle(ids.session(id))
          .signal(squashedSignal, { into: newest })
          // Already gone (stopped): nothing to squash, and the others still must be.
          .catch((err: unknown) => log.info('queued session not squashed: already gone', { session: id, error: failureMessage(err) })),
      ),
      ...batches.map((sessionIds) =>
        startChild(squashedWorkflow, {
          workflowId: ids.squashed(sessionIds),
          args: [{ suiteId: input.suiteId, sessionIds, into: newest }],
          parentClosePolicy: ParentClosePolicy.ABANDON,
          workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
          staticSummary: `${input.label}: ${sessionIds.length} squashed into #${newest}`,
        }).catch((err: unknown) => {
          if ((err as Error).name !== 'WorkflowExecutionAlreadyStartedError') throw err;
        }),
      ),
    ]);
  }

  /** False when the session has (or had) a workflow already: a session id builds once. */
  async function startSession(sessionId: number, how: Pick<SessionWorkflowInput, 'go' | 'stoppedBy'>): Promise<boolean> {
    const at = queuedAt.get(sessionId);
    // Once started, the workflow keeps it: a session started early is no longer tracked here.
    queuedAt.delete(sessionId);
    try {
      await startChild(sessionWorkflow, {
        workflowId: ids.session(sessionId),
        args: [{ sessionId, suiteId: input.suiteId, ...how, ...(at === undefined ? {} : { queuedAt: at }) }],
        // The session outlives this run when the suite continues-as-new, and it must finish
        // delivering its webhooks whatever happens to the suite.
        parentClosePolicy: ParentClosePolicy.ABANDON,
        workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
        staticSummary: `${input.label} #${sessionId}`,
        typedSearchAttributes: [
          { key: SluiceRepo, value: repo },
          { key: SluiceBranch, value: branch },
          { key: SluiceSession, value: sessionId },
          { key: SluiceStatus, value: 'queued' },
        ],
      });
      return true;
    } catch (err) {
      if ((err as Error).name === 'WorkflowExecutionAlreadyStartedError') return false;
      throw err;
    }
  }
}

function historyIsLong(limit = MAX_HISTORY_EVENTS): boolean {
  const info = workflowInfo();
  return info.continueAsNewSuggested || info.historyLength > limit;
}

function splitLabel(label: string): [string, string] {
  const at = label.lastIndexOf(' @ ');
  return at < 0 ? [label, ''] : [label.slice(0, at), label.slice(at + 3)];
}
