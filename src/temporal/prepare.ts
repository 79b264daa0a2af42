/**
 * What every Sluice role does with Temporal before it serves: wait until the server answers
 * and the namespace exists, and, for the roles that need them (api, worker), register Sluice's
 * search attributes and wait until the server accepts them. Roles may start before Temporal
 * (docker compose starts them together) and in any number: this retries with backoff while the
 * server is unreachable, and registration is idempotent and taken in turns (see attempt()).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Connection, defaultGrpcRetryOptions, isGrpcServiceError, makeGrpcRetryInterceptor } from '@temporalio/client';
import type { Config } from '../config';
import { SEARCH_ATTRIBUTES_LOCK, withAdvisoryLock } from '../db/locks';
import {
  doublyMappedSearchAttributes,
  registerSearchAttributes,
  SearchAttributeConflict,
  searchAttributesUsable,
} from './registerSearchAttributes';

export interface PrepareTemporalOptions {
  /** Register the search attributes and wait until they are usable (api, worker). Default true. */
  searchAttributes?: boolean;
  /**
   * How long to keep trying while Temporal is unreachable or not set up; then it rejects with
   * the last problem. Default: forever (a role started before its Temporal waits for it).
   */
  giveUpAfterMs?: number;
  /** Progress and waiting messages, one line each; default console.log. */
  log?: (line: string) => void;
  /** Aborting stops the waiting; the promise then rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Waits between attempts: from `initialMs`, doubling, up to `maxMs` (default 250 ms to 5 s). */
  backoff?: { initialMs: number; maxMs: number };
}

export interface PreparedTemporal {
  /** The search attributes this process added (empty when they were there already). */
  added: string[];
}

type TemporalConfig = Pick<Config, 'temporalAddress' | 'temporalNamespace' | 'databaseUrl'>;

/** How long one attempt may take: connect, list, add, and wait for the attributes to be usable. */
const ATTEMPT_MS = 30_000;
const CONNECT_TIMEOUT_MS = 5_000;
const PROBE_INTERVAL_MS = 100;

/** gRPC codes that say the request itself is wrong or not allowed: waiting will not change that. */
const PERMANENT_CODES = new Set([
  3, // INVALID_ARGUMENT, e.g. no free search attribute field of a type left
  7, // PERMISSION_DENIED
  12, // UNIMPLEMENTED
  16, // UNAUTHENTICATED
]);

/**
 * Resolves once Temporal at config.temporalAddress answers, config.temporalNamespace exists and
 * (unless `searchAttributes: false`) Sluice's search attributes are registered and accepted.
 * Rejects at once on what retrying cannot mend (an attribute of another type, permission
 * denied), and after `giveUpAfterMs` on the rest.
 */
export async function prepareTemporal(
  config: TemporalConfig,
  options: PrepareTemporalOptions = {},
): Promise<PreparedTemporal> {
  const { searchAttributes = true, giveUpAfterMs = Infinity, log = console.log, signal } = options;
  const backoff = options.backoff ?? { initialMs: 250, maxMs: 5_000 };
  const where = `Temporal at ${config.temporalAddress} (namespace ${config.temporalNamespace})`;
  const started = Date.now();
  let delay = backoff.initialMs;
  let lastProblem: string | undefined;
  for (;;) {
    signal?.throwIfAborted();
    try {
      const { added, warnings } = await attempt(config, searchAttributes);
      if (lastProblem !== undefined) log(`${where} answers now`);
      if (added.length > 0) log(`registered search attributes ${added.join(', ')} in namespace ${config.temporalNamespace}`);
      for (const warning of warnings) log(`warning: ${warning}`);
      return { added };
    } catch (err) {
      const problem = describe(err);
      if (err instanceof SearchAttributeConflict || (isGrpcServiceError(err) && PERMANENT_CODES.has(err.code))) {
        throw new Error(`${where}: ${problem}`, { cause: err });
      }
      if (Date.now() - started + delay > giveUpAfterMs) {
        throw new Error(`gave up waiting for ${where} (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE) after ${Math.round((Date.now() - started) / 1000)} s: ${problem}`, {
          cause: err,
        });
      }
      if (problem !== lastProblem) log(`waiting for ${where}: ${problem}; trying again`);
      lastProblem = problem;
    }
    // Aborted, the wait rejects with the signal's reason (what callers were promised), not Node's AbortError.
    await sleep(delay, undefined, { signal }).catch((err: unknown) => {
      throw signal?.aborted ? signal.reason : err;
    });
    delay = Math.min(delay * 2, backoff.maxMs);
  }
}

async function attempt(config: TemporalConfig, searchAttributes: boolean): Promise<{ added: string[]; warnings: string[] }> {
  const namespace = config.temporalNamespace;
  const connection = await Connection.connect({
    address: config.temporalAddress,
    connectTimeout: CONNECT_TIMEOUT_MS,
    // Our own loop retries and reports; the client's default (10 attempts) would hide it for ~20 s.
    interceptors: [makeGrpcRetryInterceptor(defaultGrpcRetryOptions({ maxAttempts: 3 }))],
  });
  const deadline = Date.now() + ATTEMPT_MS;
  try {
    return await connection.withDeadline(deadline, async () => {
      await connection.workflowService.describeNamespace({ namespace });
      if (!searchAttributes) return { added: [], warnings: [] };
      // In turns, not at once: on SQL visibility two adds racing may each map an attribute to a
      // storage field of their own, and the server keeps both (searches then go by either).
      // Every process registering shares the database, so a lock there orders them.
      const added = await withAdvisoryLock(config.databaseUrl, SEARCH_ATTRIBUTES_LOCK, ATTEMPT_MS, () =>
        registerSearchAttributes(connection, namespace),
      );
      while (!(await searchAttributesUsable(connection, namespace))) {
        if (Date.now() + PROBE_INTERVAL_MS >= deadline) {
          throw new Error('the search attributes are registered but the server does not accept them in queries yet');
        }
        await sleep(PROBE_INTERVAL_MS);
      }
      const warnings = Object.entries(await doublyMappedSearchAttributes(connection, namespace)).map(
        ([name, fields]) =>
          `search attribute ${name} is mapped to ${fields.length} storage fields (${fields.join(', ')}) in namespace ${namespace}, ` +
          'so searching by it may miss workflows (registered at once by processes of an older Sluice, or by hand?)',
      );
      return { added, warnings };
    });
  } finally {
    await connection.close().catch(() => undefined);
  }
}

/** One line for a log: gRPC errors carry their status in the message already. */
function describe(err: unknown): string {
  return (err instanceof Error ? err.message.split('\n')[0]! : String(err)).replace(/\.$/, '');
}

/**
 * A role's SIGINT and SIGTERM: the process exits at once while it is still starting (waiting
 * for Temporal or PostgreSQL: nothing to drain), else once what `started` was given shut down.
 */
export function exitOnSignals(): { started(role: { shutdown(): Promise<void> }): void } {
  let running: { shutdown(): Promise<void> } | undefined;
  const stop = () => {
    if (!running) process.exit(0);
    void running.shutdown().then(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  return { started: (role) => void (running = role) };
}
