/**
 * The small PostgreSQL recorders the session workflow calls: load what a session is about,
 * mark it started, store how it ended.
 */
import type { Pool } from 'pg';
import type { Config } from '../../config';
import type { FinishInput, PlanSessionsInput, StartRecord } from '../types';
import type { ResolvedImage, SessionContext } from '../../core/session';
import type { Counts, Timing } from '../../core/types';
import {
  ensurePlanSessions,
  markSessionRunning,
  recordSessionImage,
  recordSessionOutcome,
  suiteCiSquash,
} from '../../db/sessions';
import { queueCounts } from '../../db/testQueue';
import { loadSessionContext } from '../../db/sessionContext';
import { observeBuild } from '../../metrics/builds';

export function createSessionRecords(pool: Pool, config: Config) {
  return {
    /** What the session builds and for whom (db/sessionContext.ts: the API reads the same for `received`). */
    loadSession: (sessionId: number): Promise<SessionContext> => loadSessionContext(pool, config, sessionId),

    async recordStart(sessionId: number, timing: Timing): Promise<StartRecord> {
      return markSessionRunning(pool, sessionId, timing);
    },

    async createPlanSessions(input: PlanSessionsInput): Promise<number[]> {
      // Idempotent: a retried activity finds the parts it made the first time; in the plan's
      // order (profile names are unique within a plan).
      const byName = await ensurePlanSessions(pool, input.parentId, input.commitId, input.profiles);
      return input.profiles.map((p) => {
        const id = byName.get(p.name);
        if (id === undefined) throw new Error(`no session was made for profile ${p.name}`);
        return id;
      });
    },

    async recordImage(sessionId: number, image: ResolvedImage): Promise<void> {
      await recordSessionImage(pool, sessionId, image.reference, image.digest);
    },

    async suiteSettings(suiteId: number): Promise<{ ciSquash: boolean }> {
      return { ciSquash: await suiteCiSquash(pool, suiteId) };
    },

    async testCounts(sessionId: number): Promise<Counts> {
      return queueCounts(pool, sessionId);
    },

    async recordFinish(f: FinishInput): Promise<void> {
      const suiteId = await recordSessionOutcome(pool, f);
      // Counted where the build's end is stored: once per session (a plan's parts each count).
      if (suiteId !== undefined) observeBuild({ suiteId, status: f.status, timing: f.timing });
    },
  };
}
