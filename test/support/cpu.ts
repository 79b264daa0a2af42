/**
 * CPU time of the calling thread, for tests that bound what a piece of work costs. On a busy
 * machine the clock says how long the work waited for a core (CI saw 476 ms for a 50 ms
 * closure deadline), and the process's CPU time counts its GC and helper threads too (145 ms
 * of it for a 59 ms run after a memory bomb). The thread's own time, which the closure's
 * deadline reads (src/delivery/closure.ts), is neither.
 */
import { threadCpuMs as ownThreadCpuMs } from '../../src/delivery/closure';

/** Milliseconds of CPU this thread has run, or the process's where Linux does not say. */
export function threadCpuMs(): number {
  const own = ownThreadCpuMs();
  if (own !== null) return own;
  const used = process.cpuUsage();
  return (used.user + used.system) / 1000;
}

/** Runs `work` and says how much of this thread's CPU it took, beside the clock's reading. */
export async function measured<T>(work: () => Promise<T>): Promise<{ result: T; ms: number; cpuMs: number }> {
  const cpu = threadCpuMs();
  const started = performance.now();
  const result = await work();
  return { result, ms: performance.now() - started, cpuMs: threadCpuMs() - cpu };
}
