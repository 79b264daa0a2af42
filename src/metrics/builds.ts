/**
 * What an ended build's timing keys (spec §6) say, as metrics: how long each step took, how
 * long it queued, and its run's pending, executing and finalizing spans (OpenTelemetry's
 * cicd.pipeline.run.state). Pure functions of the timing, then one call that observes them.
 */
import type { SessionStatus, Timing } from '../core/types';
import { buildPhaseDuration, builds, pipelineRunDuration, queueWait } from './registry';

/**
 * The keys a build may record, in spec §6's order (which breaks ties between keys of the same
 * instant). Only these become `phase` labels: a key outside the list is not counted, so the
 * label stays bounded whatever a build records.
 */
export const TIMING_KEYS = [
  'ci_received_at', 'queue_first_seen_at', 'queue_first_allowed_at', 'workers_assigned_at', 'setup', 'package_setup', 'services_setup',
  'setup_hooks', 'worker_hooks', 'exec', 'post_build', 'artifact_collect', 'done', 'setup_post_hooks', 'capture_cache', 'setup_cache',
  'worker_rendezvous', 'post_build_hook',
] as const;

/** Each key's step: from the key recorded before it (in time) to this one, in seconds. The first key starts the build and is no step. */
export function phaseDurations(timing: Timing): { phase: string; seconds: number }[] {
  const rank = (k: string) => TIMING_KEYS.indexOf(k as (typeof TIMING_KEYS)[number]);
  const keys = Object.entries(timing)
    .filter((e): e is [string, number] => typeof e[1] === 'number' && Number.isFinite(e[1]) && rank(e[0]) >= 0)
    .sort((a, b) => a[1] - b[1] || rank(a[0]) - rank(b[0]));
  return keys.slice(1).map(([phase, at], i) => ({ phase, seconds: Math.max(0, at - keys[i]![1]) }));
}

export type RunState = 'pending' | 'executing' | 'finalizing';

/**
 * The run's spans: pending from the trigger (ci_received_at, else queue_first_seen_at) until
 * runners were assigned; executing from then until the results were stored (`done`, else the
 * last key); finalizing from `done` to the last key after it (cache save, post-build hook). A
 * span whose ends were not recorded (a build stopped while queued never executes) is left out.
 */
export function runStates(timing: Timing): Partial<Record<RunState, number>> {
  const at = (k: string) => (typeof timing[k] === 'number' && Number.isFinite(timing[k]) ? timing[k] : undefined);
  const times = Object.values(timing).filter((v): v is number => typeof v === 'number' && Number.isFinite(v));
  if (times.length === 0) return {};
  const last = Math.max(...times);
  const start = at('ci_received_at') ?? at('queue_first_seen_at');
  const assigned = at('workers_assigned_at');
  const done = at('done') ?? (assigned === undefined ? undefined : last);
  const out: Partial<Record<RunState, number>> = {};
  if (start !== undefined && assigned !== undefined) out.pending = Math.max(0, assigned - start);
  else if (start !== undefined && assigned === undefined) out.pending = Math.max(0, last - start); // never left the queue
  if (assigned !== undefined && done !== undefined) out.executing = Math.max(0, done - assigned);
  if (done !== undefined && last > done) out.finalizing = last - done;
  return out;
}

/** OpenTelemetry's cicd.pipeline.result for a session's status. */
export const PIPELINE_RESULT: Record<SessionStatus, string> = {
  passed: 'success',
  failed: 'failure',
  error: 'error',
  stopped: 'cancellation',
  skipped: 'skip',
  queued: 'pending',
  running: 'pending',
};

/** An ended build, observed once (the worker's recordFinish). */
export function observeBuild(b: { suiteId: number; status: SessionStatus; timing: Timing }): void {
  const suite = String(b.suiteId);
  builds.inc({ suite, status: b.status });
  for (const [state, seconds] of Object.entries(runStates(b.timing))) {
    pipelineRunDuration.observe({ cicd_pipeline_name: suite, cicd_pipeline_run_state: state, cicd_pipeline_result: PIPELINE_RESULT[b.status] }, seconds);
  }
  for (const { phase, seconds } of phaseDurations(b.timing)) buildPhaseDuration.observe({ phase }, seconds);
  const seen = b.timing.queue_first_seen_at;
  const allowed = b.timing.queue_first_allowed_at;
  if (typeof seen === 'number' && typeof allowed === 'number') queueWait.observe({ suite }, Math.max(0, allowed - seen));
}
