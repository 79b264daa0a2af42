import { DefaultLogger, Runtime, type LogLevel } from '@temporalio/worker';

let runtimeInstalled = false;

/**
 * The SDK logs every worker state change at INFO; Sluice's operators want warnings and errors
 * (SLUICE_TEMPORAL_LOG_LEVEL=INFO brings the rest back). Installable once, before any worker.
 */
export function installRuntime(): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  const level = (process.env.SLUICE_TEMPORAL_LOG_LEVEL ?? 'WARN').toUpperCase() as LogLevel;
  try {
    Runtime.install({ logger: new DefaultLogger(level) });
  } catch {
    // Already installed by the embedding process (dev.ts or a test): keep theirs.
  }
}
