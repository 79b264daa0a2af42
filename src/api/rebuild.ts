/**
 * A rebuild: the session's trigger again, at the commit it built, forced (core/rebuild.ts),
 * accepted as any trigger is (api/acceptTrigger.ts: the repository's rules still apply, the
 * build is durable before the answer) and announced with `received`. The JSON API and the
 * build page both call it.
 */
import type { ApiDeps } from './deps';
import { acceptTrigger, EnqueueFailed } from './acceptTrigger';
import { HttpError, notFound } from './http';
import { rebuildTrigger } from '../core/rebuild';
import { hasEnded } from '../core/types';
import { findRepoById } from '../db/repos';
import { findSessionWithRepo } from '../db/sessions';

export interface Rebuilt {
  session: number;
  guid: string;
}

export async function rebuildSession(deps: ApiDeps, sessionId: number, log: (err: unknown) => void): Promise<Rebuilt> {
  const row = await findSessionWithRepo(deps.pool, sessionId);
  if (!row) throw notFound('session');
  if (row.parent_id !== null) {
    throw new HttpError(409, 'conflict', `session ${sessionId} is one profile of session ${row.parent_id}'s plan: rebuild session ${row.parent_id}`, 'session');
  }
  if (!hasEnded(row.status)) throw new HttpError(409, 'conflict', `session ${sessionId} has not ended (${row.status}); stop it first`, 'session');
  const repo = await findRepoById(deps.pool, row.repo_id);
  if (!repo) throw notFound('repository');
  const original = row.trigger;
  let accepted;
  try {
    accepted = await acceptTrigger(deps.pool, deps.enqueue, {
      repo,
      provider: original.provider,
      events: [rebuildTrigger(original, row.commit_id, sessionId)],
    });
  } catch (err) {
    if (!(err instanceof EnqueueFailed)) throw err;
    throw new HttpError(503, 'unavailable', 'could not queue the build; nothing was accepted, try again');
  }
  if (!accepted.recorded || accepted.decision !== 'build') {
    const why = accepted.recorded ? accepted.reason : accepted.reasons.join('; ');
    throw new HttpError(422, 'not rebuilt', `the repository's rules no longer build this trigger: ${why ?? 'no reason given'}`, 'session');
  }
  const session = accepted.sessionIds[0]!;
  await deps.announceReceived?.(session, log);
  return { session, guid: accepted.guid };
}
