/**
 * Accepting a build: record the trigger and its session and hand the session to the
 * orchestrator, all or nothing. The enqueue runs inside the transaction, before COMMIT: if
 * Temporal cannot take it, nothing is stored and the caller hears 503 and may retry; once it
 * has taken it, the rows commit. Two gaps remain, both narrow: the suite workflow may ask for
 * the session a moment before COMMIT lands (its loadSession activity fails and is retried), and
 * COMMIT may fail after a successful enqueue (the session never appears; that workflow's load
 * keeps failing until its retries run out, and nothing is built).
 */
import { randomUUID } from 'node:crypto';
import type { Pool } from 'pg';
import type { TriggerEvent } from '../core/types';
import type { EnqueueRequest } from './app';
import { withTransaction } from './store/db';
import type { RepoRow } from './store/repos';
import { insertCiEvent, insertSession } from './store/sessions';
import type { SuiteRow } from './store/suites';

export class EnqueueFailed extends Error {
  constructor(cause: unknown) {
    super('could not queue the build', { cause });
  }
}

export interface Accepted {
  guid: string;
  sessionId: number;
}

export async function acceptTrigger(
  pool: Pool,
  enqueue: (req: EnqueueRequest) => Promise<void>,
  build: { repo: RepoRow; suite: SuiteRow; event: TriggerEvent },
): Promise<Accepted> {
  const { repo, suite, event } = build;
  const guid = randomUUID();
  return withTransaction(pool, async (client) => {
    const ciEventId = await insertCiEvent(client, { guid, repoId: repo.id, provider: event.provider, decision: 'build', reason: null, trigger: event });
    const sessionId = await insertSession(client, {
      ciEventId,
      suiteId: suite.id,
      branch: event.branch,
      ref: event.ref ?? null,
      head: event.head,
      force: event.force,
      profileName: event.profileName ?? 'default',
      workers: suite.workers,
    });
    try {
      await enqueue({
        suiteId: suite.id,
        sessionId,
        queuePosition: event.queuePosition,
        repoLabel: `${repo.org_name}/${repo.name}`,
        branch: event.branch,
      });
    } catch (err) {
      throw new EnqueueFailed(err);
    }
    return { guid, sessionId };
  });
}
