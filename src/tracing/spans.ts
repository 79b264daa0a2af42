/**
 * Spans of Sluice's own code, over the OpenTelemetry API alone (no SDK): any layer may use it.
 * Until a role starts tracing (setup.ts) nothing here does anything: no span is made, no
 * attribute computed, so tracing off costs a boolean test.
 */
import { context, propagation, SpanKind, SpanStatusCode, trace, type Attributes, type Span } from '@opentelemetry/api';

let on = false;

/** Said by setup.ts once a tracer provider is registered. */
export function setTracingOn(value: boolean): void {
  on = value;
}

export function tracingOn(): boolean {
  return on;
}

export function sluiceTracer() {
  return trace.getTracer('sluice');
}

/**
 * Runs `fn` in a span of its own, a child of the active one; `fn` may add attributes. The span
 * ends when `fn` settles, with an error status if it throws.
 */
export async function inSpan<T>(name: string, attributes: Attributes, fn: (span: Span | undefined) => Promise<T>, kind = SpanKind.INTERNAL): Promise<T> {
  if (!on) return fn(undefined);
  return sluiceTracer().startActiveSpan(name, { kind, attributes }, async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      // The error's kind, not its message: messages may quote what they failed on.
      span.setAttribute('error.type', err instanceof Error ? err.name : typeof err);
      span.setStatus({ code: SpanStatusCode.ERROR });
      throw err;
    } finally {
      span.end();
    }
  });
}

/** Adds attributes to the active span, if there is one. */
export function annotateActiveSpan(attributes: Attributes): void {
  if (!on) return;
  trace.getActiveSpan()?.setAttributes(attributes);
}

/**
 * The active span's context as a W3C `traceparent`, for work that leaves this process in a
 * payload rather than in headers (a trigger's session waits in its suite's queue); undefined
 * when tracing is off or nothing is being traced.
 */
export function activeTraceparent(): string | undefined {
  if (!on) return undefined;
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent;
}

/** `fn`, bound to the context active now: work started later (its turn in a queue) stays in this trace. */
export function inActiveContext<A extends unknown[], T>(fn: (...args: A) => T): (...args: A) => T {
  return on ? context.bind(context.active(), fn) : fn;
}
