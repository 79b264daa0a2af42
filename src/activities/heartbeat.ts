import { AsyncLocalStorage } from 'node:async_hooks';
import { Context } from '@temporalio/activity';

/**
 * What a build activity needs of whoever runs it: Temporal (a runner holding the keys) or a job
 * a runner holding only a token took from the API (runner/tokenRunner.ts). The build
 * activities reach it through runningActivity(), never through Temporal's Context directly.
 */
export interface ActivityRun {
  /** 1 for the first attempt. */
  attempt: number;
  /** Aborted when the activity is cancelled (a stop), told through heartbeats. */
  cancellationSignal: AbortSignal;
  heartbeat(): void;
  /** Signals the workflow the activity belongs to. */
  signalWorkflow(workflowId: string, name: string, payload: unknown): Promise<void>;
  log: { warn(message: string, attributes?: Record<string, unknown>): void };
}

const jobs = new AsyncLocalStorage<ActivityRun>();

/** Runs `fn` as the activity of a job (not of Temporal): runningActivity() inside it answers `run`. */
export function runAsJob<T>(run: ActivityRun, fn: () => Promise<T>): Promise<T> {
  return jobs.run(run, fn);
}

/** The activity running now: a job's, Temporal's, or undefined (a plain function call, in tests). */
export function runningActivity(): ActivityRun | undefined {
  const job = jobs.getStore();
  if (job) return job;
  const ctx = currentContext();
  if (!ctx) return undefined;
  return {
    attempt: ctx.info.attempt,
    cancellationSignal: ctx.cancellationSignal,
    heartbeat: () => ctx.heartbeat(),
    signalWorkflow: (workflowId, name, payload) => ctx.client.workflow.getHandle(workflowId).signal(name, payload),
    log: ctx.log,
  };
}

/**
 * Runs `fn` while heartbeating every few seconds, so a long clone, test or push keeps its
 * activity alive, a dead worker is noticed within the heartbeat timeout, and a stop request
 * (delivered through heartbeats) reaches `fn` as an aborted signal. Outside an activity (tests
 * that call an activity function directly) it just runs `fn`, with no signal.
 */
export async function withHeartbeat<T>(fn: (signal: AbortSignal | undefined) => Promise<T>, everyMs = 2_000): Promise<T> {
  const run = runningActivity();
  if (!run) return fn(undefined);
  run.heartbeat();
  const timer = setInterval(() => run.heartbeat(), everyMs);
  try {
    return await fn(run.cancellationSignal);
  } finally {
    clearInterval(timer);
  }
}

/** The running Temporal activity's context; undefined outside one (a plain function call, or a job). */
export function currentContext(): Context | undefined {
  try {
    return Context.current();
  } catch {
    return undefined;
  }
}
