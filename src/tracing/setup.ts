/**
 * Starts OpenTelemetry tracing in this process, when the configuration asks for it (an OTLP
 * endpoint is set: config.ts): a tracer provider with the W3C trace context propagator and an
 * async-local context, whose spans go in batches to the OTLP/HTTP endpoint as JSON. Without an
 * endpoint nothing starts: the OpenTelemetry API stays a no-op and no interceptor is installed
 * (temporal.ts), so tracing off costs nothing.
 */
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Resource } from '@opentelemetry/resources';
import { BatchSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import type { TracingSettings } from '../config';
import { SLUICE_VERSION } from '../version';
import { setTracingOn } from './spans';

export interface Tracing {
  /** The process's resource (service name and version): workflow spans, exported from here, carry it too. */
  resource: Resource;
  /** Where ended spans go: workflow spans come out of the sandbox through a sink into it (temporal.ts). */
  spanProcessor: SpanProcessor;
  /** Sends what is batched: a role calls it as it stops, so its last spans are not lost. */
  flush(): Promise<void>;
}

let started: Tracing | undefined;

/**
 * Tracing for this process, started on first call; undefined when `settings` is (no endpoint).
 * One provider per process: `npm start` runs every role in one, and the first caller names it.
 */
export function startTracing(settings: TracingSettings | undefined): Tracing | undefined {
  if (!settings) return started;
  if (started) return started;
  const resource = Resource.default().merge(new Resource({ [ATTR_SERVICE_NAME]: settings.serviceName, [ATTR_SERVICE_VERSION]: SLUICE_VERSION }));
  // OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT and _COMPRESSION (and OTEL_BSP_*) are read by the SDK itself.
  const spanProcessor = new BatchSpanProcessor(new OTLPTraceExporter({ url: settings.tracesUrl }));
  const provider = new NodeTracerProvider({ resource, spanProcessors: [spanProcessor] });
  provider.register();
  setTracingOn(true);
  started = {
    resource,
    spanProcessor,
    flush: () => provider.forceFlush().catch(() => undefined),
  };
  return started;
}

/** The tracing this process started, if any. */
export function runningTracing(): Tracing | undefined {
  return started;
}
