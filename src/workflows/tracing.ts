/**
 * The workflow interceptors of a worker that traces (worker/workflowBundle.ts bundles them into
 * dist/workflow-bundle-traced.js; a worker that does not trace loads a bundle without them).
 * OpenTelemetry's own make the spans (a workflow's run, its signals, the activities and child
 * workflows it starts) and carry the context in Temporal's headers; Sluice's add two things:
 *
 * - A session waits in its suite's queue and starts later, in the suite's run, whose trace is
 *   the trace of whichever trigger started the suite. Each trigger's traceparent comes with its
 *   `enqueue` signal (temporal/enqueue.ts), and the session's child workflow is started in that
 *   trace instead: one trace from the trigger's request to the session's last delivery.
 * - The session's id on the spans that start a session's workflow or handle a signal about one
 *   session, in the suite's workflow (a session's own spans get it from the worker's sink).
 *
 * Deterministic like all workflow code: it reads only signal arguments and starts no timers.
 */
import { context, propagation, ROOT_CONTEXT, trace, type Context } from '@opentelemetry/api';
import {
  OpenTelemetryInboundInterceptor,
  OpenTelemetryInternalsInterceptor,
  OpenTelemetryOutboundInterceptor,
} from '@temporalio/interceptors-opentelemetry/lib/workflow';
import type {
  Next,
  SignalInput,
  LocalActivityInput,
  StartChildWorkflowExecutionInput,
  WorkflowInboundCallsInterceptor,
  WorkflowInterceptors,
  WorkflowOutboundCallsInterceptor,
} from '@temporalio/workflow';
import { sessionAttributes } from '../tracing/attributes';
import { enqueueManySignal, enqueueSignal, type EnqueueRequest, type SessionWorkflowInput } from './signals';

/** Called by the SDK for each workflow it runs: the map is that workflow's own. */
export const interceptors = (): WorkflowInterceptors => {
  /** By session id, or by intake key until the suite has recorded the session (and knows its id). */
  const triggers = new Map<number | string, Context>();
  return {
    // The first is the outermost: Sluice's inbound runs inside OpenTelemetry's signal span;
    // its outbound wraps OpenTelemetry's, so the child's span is made in the trigger's context.
    inbound: [new OpenTelemetryInboundInterceptor(), new TriggerContexts(triggers)],
    outbound: [new SessionInTriggerTrace(triggers), new IntakeRecorded(triggers), new OpenTelemetryOutboundInterceptor(), new SessionOnStartSpan()],
    internals: [new OpenTelemetryInternalsInterceptor()],
  };
};

/** Keeps each enqueued session's trigger context until its workflow starts. */
class TriggerContexts implements WorkflowInboundCallsInterceptor {
  constructor(private readonly triggers: Map<number | string, Context>) {}

  async handleSignal(input: SignalInput, next: Next<WorkflowInboundCallsInterceptor, 'handleSignal'>): Promise<void> {
    const reqs = enqueued(input);
    for (const req of reqs) {
      const key = req?.sessionId ?? req?.intake?.sessions[0]?.key;
      if (typeof req?.traceparent === 'string' && key !== undefined) this.triggers.set(key, propagation.extract(ROOT_CONTEXT, { traceparent: req.traceparent }));
    }
    // A signal about one session (enqueue, buildDone, stopQueued, ...): its span names it.
    const about = reqs.length > 0 ? (reqs.length === 1 ? reqs[0] : undefined) : (input.args[0] as { sessionId?: unknown } | undefined);
    if (typeof about?.sessionId === 'number') trace.getActiveSpan()?.setAttributes(sessionAttributes(about.sessionId));
    return next(input);
  }
}

function enqueued(input: SignalInput): EnqueueRequest[] {
  if (input.signalName === enqueueManySignal.name && Array.isArray(input.args[0])) return input.args[0] as EnqueueRequest[];
  if (input.signalName === enqueueSignal.name && input.args[0] !== undefined) return [input.args[0] as EnqueueRequest];
  return [];
}

/** Once the suite has recorded its sessions, their trigger contexts go by session id. */
class IntakeRecorded implements WorkflowOutboundCallsInterceptor {
  constructor(private readonly triggers: Map<number | string, Context>) {}

  async scheduleLocalActivity(input: LocalActivityInput, next: Next<WorkflowOutboundCallsInterceptor, 'scheduleLocalActivity'>): Promise<unknown> {
    const result = await next(input);
    if (input.activityType === 'recordIntakes' && Array.isArray(result)) {
      for (const [key, sessionId] of result as [string, number][]) {
        const trigger = this.triggers.get(key);
        if (trigger === undefined) continue;
        this.triggers.delete(key);
        this.triggers.set(sessionId, trigger);
      }
    }
    return result;
  }
}

/** Starts a session's workflow in its trigger's trace, when the trigger was traced. */
class SessionInTriggerTrace implements WorkflowOutboundCallsInterceptor {
  constructor(private readonly triggers: Map<number | string, Context>) {}

  startChildWorkflowExecution(
    input: StartChildWorkflowExecutionInput,
    next: Next<WorkflowOutboundCallsInterceptor, 'startChildWorkflowExecution'>,
  ): Promise<[Promise<string>, Promise<unknown>]> {
    const sessionId = childSession(input);
    const trigger = sessionId === undefined ? undefined : this.triggers.get(sessionId);
    if (trigger === undefined) return next(input);
    this.triggers.delete(sessionId!);
    return context.with(trigger, () => next(input));
  }
}

/** Names the session on the span that starts its workflow (OpenTelemetry's, active here). */
class SessionOnStartSpan implements WorkflowOutboundCallsInterceptor {
  startChildWorkflowExecution(
    input: StartChildWorkflowExecutionInput,
    next: Next<WorkflowOutboundCallsInterceptor, 'startChildWorkflowExecution'>,
  ): Promise<[Promise<string>, Promise<unknown>]> {
    const sessionId = childSession(input);
    if (sessionId !== undefined) trace.getActiveSpan()?.setAttributes(sessionAttributes(sessionId));
    return next(input);
  }
}

function childSession(input: StartChildWorkflowExecutionInput): number | undefined {
  if (input.workflowType !== 'sessionWorkflow') return undefined;
  const id = (input.options.args?.[0] as SessionWorkflowInput | undefined)?.sessionId;
  return typeof id === 'number' ? id : undefined;
}
