import { Context } from '@temporalio/activity';

/**
 * Runs `fn` while heartbeating every few seconds, so a long clone or test keeps its activity
 * alive, a dead worker is noticed within the heartbeat timeout, and a stop request (delivered
 * through heartbeats) reaches `fn` as an aborted signal.
 */
export async function withHeartbeat<T>(fn: (signal: AbortSignal) => Promise<T>, everyMs = 2_000): Promise<T> {
  const ctx = Context.current();
  ctx.heartbeat();
  const timer = setInterval(() => ctx.heartbeat(), everyMs);
  try {
    return await fn(ctx.cancellationSignal);
  } finally {
    clearInterval(timer);
  }
}
