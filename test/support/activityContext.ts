/**
 * Runs activity code outside a Temporal worker, for integration tests of the activities
 * themselves (their SQL, files and processes) where the e2e project would need a whole
 * Temporal server. It builds the Activity Context the worker would (`Context.current()`,
 * heartbeats, the cancellation signal, `info.attempt` and `info.retryPolicy`, the logger) the
 * way the SDK's own MockActivityEnvironment does; heartbeats are counted, log lines kept, and
 * aborting `signal` is a cancellation request.
 *
 * runAttempts goes one step further for activities that rely on Temporal's retry policy: it
 * runs attempt 1, 2, ... as a worker would, each in a context saying which attempt it is.
 */
import { asyncLocalStorage, Context, type Info } from '@temporalio/activity';
import { ApplicationFailure, type RetryPolicy } from '@temporalio/common';

export interface LogLine {
  level: 'trace' | 'debug' | 'info' | 'warn' | 'error';
  message: string;
  meta?: Record<string, unknown>;
}

export interface ActivityRun<T> {
  result: Promise<T>;
  heartbeats(): number;
  logs(): LogLine[];
}

export interface ActivityOptions {
  signal?: AbortSignal;
  /** info.attempt, from 1. Default 1. */
  attempt?: number;
  /** info.retryPolicy as the worker hands it over: durations in milliseconds. Default none. */
  retryPolicy?: RetryPolicy & { initialInterval?: number; maximumInterval?: number };
}

export function runActivity<T>(fn: () => Promise<T>, opts: ActivityOptions = {}): ActivityRun<T> {
  const controller = new AbortController();
  if (opts.signal?.aborted) controller.abort();
  opts.signal?.addEventListener('abort', () => controller.abort(), { once: true });
  let beats = 0;
  const lines: LogLine[] = [];
  const info = {
    activityType: 'test',
    attempt: opts.attempt ?? 1,
    retryPolicy: opts.retryPolicy,
    isLocal: false,
    taskQueue: 'test',
  } as unknown as Info;
  const at = (level: LogLine['level']) => (message: string, meta?: Record<string, unknown>) => {
    lines.push({ level, message, meta });
  };
  const log = { trace: at('trace'), debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), log: () => undefined };
  const ctx = new Context(
    info,
    new Promise<never>(() => undefined),
    controller.signal,
    () => {
      beats += 1;
    },
    undefined,
    log as unknown as ConstructorParameters<typeof Context>[5],
    undefined as unknown as ConstructorParameters<typeof Context>[6],
    { cancelRequested: false } as unknown as ConstructorParameters<typeof Context>[7],
  );
  return { result: asyncLocalStorage.run(ctx, fn), heartbeats: () => beats, logs: () => lines };
}

/** A retry policy of the shape Temporal hands an activity (milliseconds). */
export interface TestRetryPolicy {
  maximumAttempts: number;
  initialInterval?: number;
  backoffCoefficient?: number;
  maximumInterval?: number;
}

export interface AttemptsRun<T> {
  /** What the attempt that returned returned. */
  result: T;
  /** How many attempts ran. */
  attempts: number;
  /** What each failed attempt threw, in order. */
  failures: unknown[];
  /** The wait before each next attempt: the failure's nextRetryDelay, else the policy's backoff. */
  delays: number[];
  logs: LogLine[];
}

/**
 * Runs `fn` the way a worker runs an activity under `policy`: attempt 1, 2, ... in a context
 * whose info.attempt says which, until an attempt returns, throws a non-retryable
 * ApplicationFailure, or the policy's attempts run out (then what the last one threw is
 * thrown). Waits between attempts as Temporal would, but at most `maxWaitMs` (tests are short).
 */
export async function runAttempts<T>(fn: () => Promise<T>, policy: TestRetryPolicy, opts: { maxWaitMs?: number } = {}): Promise<AttemptsRun<T>> {
  const failures: unknown[] = [];
  const delays: number[] = [];
  const logs: LogLine[] = [];
  const initial = policy.initialInterval ?? 1_000;
  const retryPolicy = {
    maximumAttempts: policy.maximumAttempts,
    initialInterval: initial,
    backoffCoefficient: policy.backoffCoefficient ?? 2,
    maximumInterval: policy.maximumInterval ?? 100 * initial,
  };
  for (let attempt = 1; ; attempt++) {
    const run = runActivity(fn, { attempt, retryPolicy });
    try {
      const result = await run.result;
      logs.push(...run.logs());
      return { result, attempts: attempt, failures, delays, logs };
    } catch (err) {
      logs.push(...run.logs());
      failures.push(err);
      const final = err instanceof ApplicationFailure && err.nonRetryable;
      if (final || (policy.maximumAttempts > 0 && attempt >= policy.maximumAttempts)) throw err;
      const next = err instanceof ApplicationFailure && typeof err.nextRetryDelay === 'number' ? err.nextRetryDelay : undefined;
      const backoff = Math.min(retryPolicy.maximumInterval, initial * Math.pow(retryPolicy.backoffCoefficient, attempt - 1));
      const delay = next ?? backoff;
      delays.push(delay);
      await new Promise((resolve) => setTimeout(resolve, Math.min(delay, opts.maxWaitMs ?? delay)));
    }
  }
}
