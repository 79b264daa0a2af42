import { DefaultLogger, Runtime, type LogLevel } from '@temporalio/worker';

let runtimeInstalled = false;

export interface RuntimeOptions {
  /**
   * Where the SDK serves its own Prometheus metrics (task slots, schedule-to-start latency, poll
   * failures), e.g. `127.0.0.1:40123`; a role's /metrics appends them (temporal/metrics.ts).
   */
  prometheusBindAddress?: string;
}

/**
 * The SDK logs every worker state change at INFO; Sluice's operators want warnings and errors
 * (SLUICE_TEMPORAL_LOG_LEVEL=INFO brings the rest back). Installable once, before any worker;
 * true when this call installed it (a later call, or one after the embedding process's, changes nothing).
 */
export function installRuntime(options: RuntimeOptions = {}): boolean {
  if (runtimeInstalled) return false;
  runtimeInstalled = true;
  const level = (process.env.SLUICE_TEMPORAL_LOG_LEVEL ?? 'WARN').toUpperCase() as LogLevel;
  const metrics = options.prometheusBindAddress
    ? {
        // Prometheus' conventions: counters end in _total, durations are in seconds and say so.
        metrics: { prometheus: { bindAddress: options.prometheusBindAddress, countersTotalSuffix: true, unitSuffix: true, useSecondsForDurations: true } },
      }
    : {};
  try {
    Runtime.install({ logger: new DefaultLogger(level), telemetryOptions: { ...metrics } });
    return true;
  } catch {
    // Already installed by the embedding process (dev.ts or a test): keep theirs.
    return false;
  }
}
