/**
 * Deleting an organization, a repository or a suite, for the JSON API and the web pages: first
 * every build of it that is queued or running is stopped, as `POST /sessions/:id/stop` stops one
 * (its running tests killed; `stop` with status `stopped` and `stopped_by` goes to the receivers
 * that remain), then, once they have all ended, its rows are deleted in one transaction.
 *
 * - A session whose workflow Temporal does not know (and, queued, neither does its suite) will
 *   never end: it does not hold the delete up.
 * - Builds that have not ended after STOP_WAIT_MS: a conflict, nothing deleted (the stops go on; ask
 *   again). `force` deletes without waiting for them, once they were asked to stop.
 * - Temporal unreachable (or no stopping wired here) while a build is under way: unavailable,
 *   nothing deleted.
 *
 * The deleted sessions' artifacts: the transaction that deletes the rows queues their blobs
 * (migration 018), and once it committed the API starts deleting them from the store, without
 * holding up the answer; what it does not get to (a store down, the API stopped) the worker's
 * daily cleanup deletes.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { drainArtifactDeletions } from '../db/artifacts';
import { drainCacheDeletions } from '../db/cacheEntries';
import { deleteIfIdle, type ActiveSession, type Doomed } from '../db/removal';
import type { AppDeps } from './deps';
import { AppError } from './errors';
import { apiStore } from './store';

/** How long a delete waits for the builds it stopped to end. */
export const STOP_WAIT_MS = 30_000;
/** A build still under way is asked again this often (a stop that raced its start). */
const ASK_AGAIN_MS = 5_000;
const POLL_MS = 200;

/** What stopping and deleting needs: the pool, the orchestrator's stop, the store the blobs go from. */
export type RemoveDeps = Pick<AppDeps, 'pool' | 'config' | 'stop'>;

export interface RemoveOptions {
  /** Who stops the builds under way: their `stopped_by`. */
  stoppedBy: string;
  /** Delete once they were asked to stop, without waiting for them to end. */
  force?: boolean;
  /** What is deleted, for messages: `repository acme/app`. */
  what: string;
  /** Tests: how long to wait for the builds to end (default STOP_WAIT_MS). */
  waitMs?: number;
}

/** Stops what runs of `doomed`, then deletes it. False when it was not there (any more). */
export async function stopAndRemove(deps: RemoveDeps, doomed: Doomed, opts: RemoveOptions): Promise<boolean> {
  /** Sessions with nothing left in Temporal to end them. */
  const orphans = new Set<number>();
  /** When each session under way was last asked to stop. */
  const asked = new Map<number, number>();
  const deadline = Date.now() + (opts.waitMs ?? STOP_WAIT_MS);
  for (;;) {
    const outcome = await deleteIfIdle(deps.pool, doomed, opts.force ? new Set([...orphans, ...asked.keys()]) : orphans);
    if (outcome.deleted) {
      deleteArtifactBlobs(deps);
      return true;
    }
    if (outcome.gone) return false;
    const toAsk = outcome.active.filter((s) => (asked.get(s.id) ?? -Infinity) + ASK_AGAIN_MS <= Date.now());
    if (toAsk.length === 0 && Date.now() > deadline) throw stillStopping(opts.what, outcome.active);
    for (const session of toAsk) {
      asked.set(session.id, Date.now());
      if (!(await askToStop(deps, session, opts.stoppedBy))) orphans.add(session.id);
    }
    if (opts.force && toAsk.length > 0) continue;
    await sleep(POLL_MS);
  }
}

/**
 * Starts deleting the queued blobs of deleted sessions' artifacts and deleted repositories'
 * caches; a failure leaves them queued for the cleanup.
 */
function deleteArtifactBlobs(deps: Pick<AppDeps, 'pool' | 'config'>): void {
  const store = apiStore(deps.config);
  void drainArtifactDeletions(deps.pool, (prefix) => store.deletePrefix(prefix))
    .then(() => drainCacheDeletions(deps.pool, (prefix) => store.deletePrefix(prefix)))
    .catch(() => undefined);
}

/** False when nothing in Temporal holds the session: neither its workflow nor (queued) its suite's. */
async function askToStop(deps: Pick<AppDeps, 'stop'>, session: ActiveSession, stoppedBy: string): Promise<boolean> {
  if (!deps.stop) throw new AppError('unavailable', 'stopping builds is not available here, and a build is under way');
  // A running session has a workflow. A queued one may still wait in its suite's queue with none
  // (temporal/stop.ts); a plan's part is never in the queue: its parent stops it.
  const suiteId = session.parent_id === null && session.status === 'queued' ? session.suite_id : null;
  try {
    return await deps.stop({ sessionId: session.id, suiteId }, stoppedBy);
  } catch (err) {
    throw new AppError('unavailable', `session ${session.id} could not be stopped (${(err as Error).message.split('\n')[0]}); nothing was deleted, try again`);
  }
}

function stillStopping(what: string, active: ActiveSession[]): AppError {
  const ids = active.slice(0, 10).map((s) => s.id).join(', ');
  const more = active.length > 10 ? ` and ${active.length - 10} more` : '';
  return new AppError(
    'conflict',
    `${what} has ${active.length} build${active.length === 1 ? '' : 's'} still stopping (session ${ids}${more}); nothing was deleted: try again, or delete with force=true`,
  );
}
