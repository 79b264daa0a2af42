/**
 * suiteWorkflow: the entity workflow of one suite (repository + branch). It owns the queue and
 * guarantees one build at a time. Each queued session gets its session workflow at once, all that
 * arrived together concurrently, then waits for `go`; a lone session for an idle suite is started
 * with its turn already given.
 */
import {
  condition,
  continueAsNew,
  getExternalWorkflowHandle,
  log,
  ParentClosePolicy,
  proxyLocalActivities,
  setHandler,
  startChild,
  workflowInfo,
  WorkflowIdReusePolicy,
} from '@temporalio/workflow';
import { SluiceBranch, SluiceRepo, SluiceSession, SluiceStatus } from '../temporal/searchAttributes';
import { sessionWorkflow } from './session';
import type { Activities } from '../activities/types';
import {
  buildDoneSignal,
  enqueueSignal,
  goSignal,
  sessionWorkflowId,
  squashedSignal,
  type EnqueueRequest,
  type SuiteWorkflowInput,
} from './signals';
import { failureMessage } from './status';

/** Continue-as-new well before Temporal would suggest it; a suite can live for years. */
const MAX_HISTORY_EVENTS = 2_000;

/** A read of the suite's settings: local, as the session's recorders (proxies.ts). */
const settings = proxyLocalActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '100 milliseconds', maximumInterval: '30 seconds' },
});

export async function suiteWorkflow(input: SuiteWorkflowInput): Promise<void> {
  const waiting: number[] = [...(input.waiting ?? [])];
  let running: number | null = input.running ?? null;
  const arrived: EnqueueRequest[] = [];

  setHandler(enqueueSignal, (req) => {
    arrived.push(req);
  });
  setHandler(buildDoneSignal, ({ sessionId }) => {
    if (running === sessionId) running = null;
    // A queued session that was stopped leaves the queue.
    const at = waiting.indexOf(sessionId);
    if (at >= 0) waiting.splice(at, 1);
  });

  const [repo, branch] = splitLabel(input.label);

  for (;;) {
    await condition(
      () => arrived.length > 0 || (running === null && waiting.length > 0) || historyIsLong(input.historyLimit),
    );

    if (arrived.length > 0) {
      // Everything that arrived starts at once: each session sends `received` as soon as it
      // runs, not after the starts of all those before it (a burst of 600 took half a minute
      // one by one). The queue keeps their arrival order whatever order the starts end in.
      const seen = new Set<number>(waiting);
      if (running !== null) seen.add(running);
      const batch = arrived.splice(0).filter((req) => !seen.has(req.sessionId) && seen.add(req.sessionId)); // a repeated signal
      // The usual case, one trigger for an idle suite: it starts with its turn, sparing a `go`
      // signal and a workflow task on the way to its first test.
      const goNow = running === null && waiting.length === 0 && batch.length === 1;
      // Running before it starts: a build that ends at once may say so before the start returns.
      if (goNow) running = batch[0]!.sessionId;
      const started = await Promise.all(batch.map((req) => startSession(req.sessionId, goNow)));
      batch.forEach((req, i) => {
        if (!started[i]) {
          if (goNow && running === req.sessionId) running = null; // a repeated signal: nothing new runs
          return;
        }
        if (goNow) return;
        if (req.queuePosition === 'head') waiting.unshift(req.sessionId);
        else waiting.push(req.sessionId);
      });
    }

    if (running === null && waiting.length > 0) {
      if (waiting.length > 1 && (await settings.suiteSettings(input.suiteId)).ciSquash) await squash();
      running = waiting.shift()!;
      try {
        await getExternalWorkflowHandle(sessionWorkflowId(running)).signal(goSignal);
      } catch (err) {
        // The session is gone (it failed before its turn, or an operator terminated it): it
        // will never say it is done, so do not wait for it; the next one goes.
        log.warn('session gone before its turn; passing it over', { session: running, error: failureMessage(err) });
        running = null;
      }
    }

    // Signals that arrive while continuing are not lost: Temporal refuses to close the run while
    // it has unhandled signals, and replays this loop with them first.
    if (historyIsLong(input.historyLimit) && arrived.length === 0) {
      await continueAsNew<typeof suiteWorkflow>({ ...input, waiting, running });
    }
  }

  /** CI squash: only the newest queued session builds; the others end, saying into which. */
  async function squash(): Promise<void> {
    const newest = Math.max(...waiting);
    const older = waiting.filter((id) => id !== newest);
    waiting.splice(0, waiting.length, newest);
    await Promise.all(
      older.map((id) =>
        getExternalWorkflowHandle(sessionWorkflowId(id))
          .signal(squashedSignal, { into: newest })
          // Already gone (stopped): nothing to squash, and the others still must be.
          .catch((err: unknown) => log.info('queued session not squashed: already gone', { session: id, error: failureMessage(err) })),
      ),
    );
  }

  async function startSession(sessionId: number, go: boolean): Promise<boolean> {
    try {
      await startChild(sessionWorkflow, {
        workflowId: sessionWorkflowId(sessionId),
        args: [{ sessionId, suiteId: input.suiteId, ...(go ? { go } : {}) }],
        // The session outlives this run when the suite continues-as-new, and it must finish
        // delivering its webhooks whatever happens to the suite.
        parentClosePolicy: ParentClosePolicy.ABANDON,
        // A session id builds once: a repeated enqueue of a finished session must not rebuild it.
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
