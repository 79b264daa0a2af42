/**
 * Runs activity code outside a Temporal worker, for integration tests of the activities
 * themselves (their SQL, files and processes) where the e2e project would need a whole
 * Temporal server. It builds the Activity Context the worker would (`Context.current()`,
 * heartbeats, the cancellation signal) the way the SDK's own MockActivityEnvironment does;
 * heartbeats are counted, and aborting `signal` is a cancellation request.
 */
import { asyncLocalStorage, Context, type Info } from '@temporalio/activity';

export interface ActivityRun<T> {
  result: Promise<T>;
  heartbeats(): number;
}

export function runActivity<T>(fn: () => Promise<T>, opts: { signal?: AbortSignal } = {}): ActivityRun<T> {
  const controller = new AbortController();
  if (opts.signal?.aborted) controller.abort();
  opts.signal?.addEventListener('abort', () => controller.abort(), { once: true });
  let beats = 0;
  const info = { activityType: 'test', attempt: 1, isLocal: false, taskQueue: 'test' } as unknown as Info;
  const noop = () => undefined;
  const log = { trace: noop, debug: noop, info: noop, warn: noop, error: noop, log: noop };
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
  return { result: asyncLocalStorage.run(ctx, fn), heartbeats: () => beats };
}
