/**
 * A rebuild: the session's trigger again, at the commit it built, forced, in the image digests
 * it ran (core/rebuild.ts), decided as any trigger is (the repository's rules still apply). Unlike a trigger, it answers
 * with its session, so it records the session first (db/intake.ts) and then hands it to its
 * suite, which finds it recorded; if Temporal does not take it, the records go again and the
 * answer is 503. The suite sends its `received`. The JSON API and the build page both call it.
 */
import { randomUUID } from 'node:crypto';
import type { ApiDeps } from './deps';
import { HttpError } from './http';
import { notFound } from '../app/errors';
import { intakesOf, planDelivery } from '../core/intake';
import { rebuildTrigger } from '../core/rebuild';
import { hasEnded } from '../core/types';
import { forgetTrigger, recordIntakes } from '../db/intake';
import { findSessionWithRepo, imageDigestsOfBuild } from '../db/sessions';
import { findTriggerTargetById } from '../db/triggerKnowledge';

export interface Rebuilt {
  session: number;
  guid: string;
}

export interface RebuildOptions {
  /** Resolve each image's tag to a digest again, instead of running the digests the session ran. */
  resolveImages?: boolean;
}

export async function rebuildSession(deps: ApiDeps, sessionId: number, log: (err: unknown) => void, options: RebuildOptions = {}): Promise<Rebuilt> {
  const row = await findSessionWithRepo(deps.pool, sessionId);
  if (!row) throw notFound('session');
  if (row.parent_id !== null) {
    throw new HttpError(409, 'conflict', `session ${sessionId} is one profile of session ${row.parent_id}'s plan: rebuild session ${row.parent_id}`, 'session');
  }
  if (!hasEnded(row.status)) throw new HttpError(409, 'conflict', `session ${sessionId} has not ended (${row.status}); stop it first`, 'session');
  const target = await findTriggerTargetById(deps.pool, row.repo_id);
  if (!target) throw notFound('repository');
  const { repo } = target;
  const original = row.trigger;
  const digests = options.resolveImages ? {} : await imageDigestsOfBuild(deps.pool, sessionId);
  const event = rebuildTrigger(original, row.commit_id, sessionId, digests);
  const branches = await deps.knowledge.branches(repo.id, [event.branch]);
  const acceptedAt = Date.now();
  const guid = randomUUID();
  const suites = new Map(target.suites.map((s) => [s.branch, s]));
  const plan = planDelivery(
    { guid, provider: original.provider, acceptedAt, events: [event] },
    {
      repo: { id: repo.id, pullRequestOnly: repo.pull_request_only, branchBlacklist: repo.branch_blacklist },
      suiteFor: (branch) => suites.get(branch),
      branchState: (name) => branches.get(name) ?? null,
    },
  );
  const [carried] = intakesOf(plan, repo.id, acceptedAt).suites;
  if (plan.decision !== 'build' || !carried) {
    const why = plan.decision === 'drop' ? plan.reasons.join('; ') : plan.record.reason;
    throw new HttpError(422, 'not rebuilt', `the repository's rules no longer build this trigger: ${why ?? 'no reason given'}`, 'session');
  }
  const ids = await recordIntakes(deps.pool, [carried.intake]);
  const session = ids.get(carried.session.key);
  if (session === undefined) throw notFound('suite');
  try {
    await deps.enqueue({
      suiteId: carried.session.suiteId,
      intake: carried.intake,
      queuePosition: carried.session.queuePosition,
      repoLabel: `${repo.org_name}/${repo.name}`,
      branch: carried.session.branch,
    });
  } catch (err) {
    log(err);
    await forgetTrigger(deps.pool, guid);
    throw new HttpError(503, 'unavailable', 'could not queue the build; nothing was accepted, try again', undefined, { retryAfterSeconds: 5 });
  }
  return { session, guid };
}
