/**
 * Asking a session to stop, for the JSON API and the build page: 409 once it has ended, 503 when
 * stopping is not wired here or the session's workflow (or its suite, while it is queued) cannot
 * be reached for a while. Resolves with the session as it stood when the stop was taken.
 */
import type { ApiDeps } from './deps';
import { HttpError } from './http';
import { notFound } from '../app/errors';
import { loadSessionView, type SessionView } from './views';
import { hasEnded } from '../core/types';
import { findSessionWithRepo } from '../db/sessions';

const STOP_RETRY_MS = 10_000;

export async function requestStop(deps: ApiDeps, id: number, stoppedBy: string): Promise<SessionView> {
  if (!deps.stop) throw new HttpError(503, 'unavailable', 'stopping builds is not available here');
  // A queued session has no workflow until its turn: its suite is asked then (temporal/stop.ts).
  // A plan's part is not in the queue: its parent started it, and it may not be running yet.
  const row = await findSessionWithRepo(deps.pool, id);
  if (!row) throw notFound('session');
  const target = { sessionId: id, suiteId: row.parent_id === null ? row.suite_id : null };
  const deadline = Date.now() + STOP_RETRY_MS;
  for (;;) {
    const view = await loadSessionView(deps.pool, deps.config, id);
    if (!view) throw notFound('session');
    if (hasEnded(view.status)) throw new HttpError(409, 'conflict', `session ${id} already ended (${view.status})`, 'session');
    if (await deps.stop(target, stoppedBy)) return view;
    if (Date.now() > deadline) throw new HttpError(503, 'unavailable', `session ${id} could not be reached; try again`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
