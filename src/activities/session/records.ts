/**
 * The small PostgreSQL recorders the session workflow calls: load what a session is about,
 * mark it started, store how it ended.
 */
import type { Pool } from 'pg';
import { DEFAULT_POST_BUILD_WAIT_MS, type Config } from '../../config';
import { reportUrl } from '../../core/reportUrl';
import { DEFAULT_POST_RETRY } from '../../core/retry';
import { buildTrust } from '../../core/trust';
import type { FinishInput, PlanSessionsInput, SessionContext, StartRecord } from '../types';
import type { Counts, Timing } from '../../core/types';
import {
  ensurePlanSessions,
  findSessionWithRepo,
  markSessionRunning,
  recordSessionOutcome,
  suiteCiSquash,
} from '../../db/sessions';
import { queueCounts } from '../../db/testQueue';
import { listActiveWebhookIds } from '../../db/webhooks';

export function createSessionRecords(pool: Pool, config: Config) {
  return {
    async loadSession(sessionId: number): Promise<SessionContext> {
      const row = await findSessionWithRepo(pool, sessionId);
      if (!row) throw new Error(`session ${sessionId} does not exist`);
      const webhookIds = await listActiveWebhookIds(pool, row.org_id);
      return {
        sessionId: row.id,
        guid: row.guid,
        parentSession: row.parent_id,
        suiteId: row.suite_id,
        repoId: row.repo_id,
        repo: { name: row.repo_name, url: row.pull_url, orgName: row.org_name, scm: row.scm },
        branch: row.branch,
        ref: row.ref,
        head: row.head,
        force: row.force,
        profileName: row.profile_name,
        testPattern: row.test_pattern,
        testCommand: row.test_command,
        workers: row.workers,
        env: row.trigger.env ?? {},
        buildQueue: row.trigger.queue ?? config.buildQueue,
        webhookIds,
        url: reportUrl(config.baseUrl, row.id, row.report_token),
        receivedAt: row.received_at.getTime() / 1000,
        settings: {
          webhookRetry: config.webhookRetry,
          testTimeoutMs: config.testTimeoutMs,
          postRetry: config.postRetry ?? DEFAULT_POST_RETRY,
          postBuildWaitMs: config.postBuildWaitMs ?? DEFAULT_POST_BUILD_WAIT_MS,
        },
        refspecs: row.trigger.refspec,
        junitPattern: row.junit_pattern,
        trust: buildTrust(row.trigger, { trustSameRepoPullRequests: row.trust_same_repo_pull_requests }),
        suiteProfiles: row.suite_profiles,
        suitePlan: row.suite_plan ?? undefined,
        // A plan's part runs the profile its parent gave it; only the parent honours the trigger's.
        requestedProfile: row.parent_id === null ? (row.trigger.profileName ?? null) : null,
      };
    },

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

    async suiteSettings(suiteId: number): Promise<{ ciSquash: boolean }> {
      return { ciSquash: await suiteCiSquash(pool, suiteId) };
    },

    async testCounts(sessionId: number): Promise<Counts> {
      return queueCounts(pool, sessionId);
    },

    async recordFinish(f: FinishInput): Promise<void> {
      await recordSessionOutcome(pool, f);
    },
  };
}
