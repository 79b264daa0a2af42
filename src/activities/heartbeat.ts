import { Context } from '@temporalio/activity';

/**
 * Runs `fn` while heartbeating every few seconds, so a long clone, test or push keeps its
 * activity alive, a dead worker is noticed within the heartbeat timeout, and a stop request
 * (delivered through heartbeats) reaches `fn` as an aborted signal. Outside an activity (tests
 * that call an activity function directly) it just runs `fn`, with no signal.
 */
export async function withHeartbeat<T>(fn: (signal: AbortSignal | undefined) => Promise<T>, everyMs = 2_000): Promise<T> {
  const ctx = currentContext();
  if (!ctx) return fn(undefined);
  ctx.heartbeat();
  const timer = setInterval(() => ctx.heartbeat(), everyMs);
  try {
    return await fn(ctx.cancellationSignal);
  } finally {
    clearInterval(timer);
  }
}

/** The running activity's context; undefined outside an activity (a plain function call). */
export function currentContext(): Context | undefined {
  try {
    return Context.current();
  } catch {
    return undefined;
  }
}
