/**
 * Temporal's side of tracing (@temporalio/interceptors-opentelemetry): the client interceptor
 * that carries the caller's context into the workflows it starts and signals, the activity
 * interceptors that make a span of each activity in its caller's trace, and the sink that takes
 * workflow spans out of the workflow sandbox into this process's exporter. The workflow
 * interceptors themselves are bundled with the workflow code (workflows/tracing.ts). With
 * tracing off each of these is empty: no interceptor is installed at all.
 */
import { trace } from '@opentelemetry/api';
import type { ClientOptions, Next as ClientNext, WorkflowClientInterceptor, WorkflowSignalInput } from '@temporalio/client';
import type { Context as ActivityContext } from '@temporalio/activity';
import { OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry/lib/client';
import { makeWorkflowExporter, OpenTelemetryActivityInboundInterceptor } from '@temporalio/interceptors-opentelemetry/lib/worker';
import type { ActivityExecuteInput, ActivityInboundCallsInterceptor, InjectedSinks, Next, WorkerOptions } from '@temporalio/worker';
import type { WorkflowInfo } from '@temporalio/workflow';
import type { OpenTelemetryWorkflowExporter } from '@temporalio/interceptors-opentelemetry/lib/workflow/definitions';
import { PIPELINE_TASK_NAME, sessionAttributes, sessionOfWorkflowId } from './attributes';
import type { Tracing } from './setup';

/** A client's interceptors: its starts and signals carry the active trace (the API's trigger). */
export function tracedClient(tracing: Tracing | undefined): Pick<ClientOptions, 'interceptors'> {
  return tracing ? { interceptors: { workflow: clientInterceptors() } } : {};
}

/** OpenTelemetry's (outer: it makes the span), then Sluice's, which names the session on it. */
const clientInterceptors = (): WorkflowClientInterceptor[] => [new OpenTelemetryWorkflowClientInterceptor(), new SessionOnSignalSpan()];

/** A signal to a session's workflow (a runner's `workersReady`, the API's `stop`): its span names the session. */
class SessionOnSignalSpan implements WorkflowClientInterceptor {
  signal(input: WorkflowSignalInput, next: ClientNext<WorkflowClientInterceptor, 'signal'>): Promise<void> {
    const sessionId = sessionOfWorkflowId(input.workflowExecution.workflowId);
    if (sessionId !== undefined) trace.getActiveSpan()?.setAttributes(sessionAttributes(sessionId));
    return next(input);
  }
}

/**
 * A worker's activity interceptors (a span per activity, with its session), and for a worker
 * that runs workflows the sink their spans leave the sandbox by. The workflow interceptors come
 * with the workflow code (worker/workflowBundle.ts).
 */
export function tracedWorker(tracing: Tracing | undefined, opts: { workflows: boolean }): Pick<WorkerOptions, 'interceptors' | 'sinks'> {
  if (!tracing) return {};
  return {
    interceptors: {
      // Activities' own client (Context.current().client): their signals to a session carry their trace.
      client: { workflow: clientInterceptors() },
      activity: [(ctx) => ({ inbound: new OpenTelemetryActivityInboundInterceptor(ctx) }), (ctx) => ({ inbound: new SessionOnActivitySpan(ctx) })],
    },
    ...(opts.workflows ? { sinks: workflowSpanSink(tracing) } : {}),
  };
}

/** Inside OpenTelemetry's activity span: names the session whose workflow scheduled it, and the task. */
class SessionOnActivitySpan implements ActivityInboundCallsInterceptor {
  constructor(private readonly ctx: ActivityContext) {}

  execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>): Promise<unknown> {
    const span = trace.getActiveSpan();
    if (span) {
      const { info } = this.ctx;
      const sessionId = info.workflowExecution ? sessionOfWorkflowId(info.workflowExecution.workflowId) : undefined;
      span.setAttributes({ [PIPELINE_TASK_NAME]: info.activityType, ...(sessionId === undefined ? {} : sessionAttributes(sessionId)) });
    }
    return next(input);
  }
}

/**
 * The `exporter` sink OpenTelemetry's workflow interceptors export through. The SDK's own copies
 * the whole WorkflowInfo onto each span (memo, search attributes, last failure, ...): this one
 * hands it the workflow's names only, and adds the session of a session's workflow.
 */
function workflowSpanSink(tracing: Tracing): InjectedSinks<{ exporter: OpenTelemetryWorkflowExporter }> {
  const inner = makeWorkflowExporter(tracing.spanProcessor, tracing.resource).export;
  return {
    exporter: {
      export: {
        fn: (info, spans) => {
          const sessionId = sessionOfWorkflowId(info.workflowId);
          if (sessionId !== undefined) for (const span of spans) Object.assign(span.attributes, sessionAttributes(sessionId));
          const names = { workflowId: info.workflowId, runId: info.runId, workflowType: info.workflowType, taskQueue: info.taskQueue, namespace: info.namespace };
          inner.fn(names as WorkflowInfo, spans);
        },
        // Spans a replay makes again were exported the first time.
        callDuringReplay: false,
      },
    },
  };
}
