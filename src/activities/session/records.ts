/**
 * The small PostgreSQL recorders the session workflow calls: load what a session is about,
 * mark it started, store how it ended.
 */
import type { Pool } from 'pg';
import type { Config } from '../../config';
import type { TriggerEvent } from '../../core/types';
import type { Profile } from '../../core/profiles';
import type { FinishInput, PlanSessionsInput, SessionContext, StartRecord } from '../types';
import type { Timing } from '../../core/types';
import { withTransaction } from '../../db/transaction';

interface SessionRow {
  id: number;
  guid: string;
  parent_id: number | null;
  suite_id: number;
  repo_id: number;
  org_id: number;
  repo_name: string;
  pull_url: string;
  scm: 'git' | 'hg';
  org_name: string;
  branch: string;
  ref: string | null;
  head: string;
  force: boolean;
  profile_name: string;
  test_pattern: string;
  test_command: string | null;
  junit_pattern: string | null;
  suite_profiles: Profile[];
  suite_plan: string[] | null;
  workers: number;
  trigger: TriggerEvent;
  received_at: Date;
}

export function createSessionRecords(pool: Pool, config: Config) {
  return {
    async loadSession(sessionId: number): Promise<SessionContext> {
      const { rows } = await pool.query<SessionRow>(
        `SELECT s.id, e.guid, s.parent_id, s.suite_id, r.id AS repo_id, o.id AS org_id, r.name AS repo_name,
                r.pull_url, r.scm, o.name AS org_name, s.branch, s.ref, s.head, s.force, s.profile_name,
                su.test_pattern, su.test_command, su.junit_pattern, su.profiles AS suite_profiles,
                su.plan AS suite_plan, s.workers, e.trigger, e.received_at
           FROM sessions s
           JOIN ci_events e ON e.id = s.ci_event_id
           JOIN suites su ON su.id = s.suite_id
           JOIN repos r ON r.id = su.repo_id
           JOIN orgs o ON o.id = r.org_id
          WHERE s.id = $1`,
        [sessionId],
      );
      const row = rows[0];
      if (!row) throw new Error(`session ${sessionId} does not exist`);
      const hooks = await pool.query<{ id: number }>(
        'SELECT id FROM webhooks WHERE org_id = $1 AND active ORDER BY id',
        [row.org_id],
      );
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
        webhookIds: hooks.rows.map((h) => h.id),
        url: `${config.baseUrl}/1/reports/${row.id}`,
        receivedAt: row.received_at.getTime() / 1000,
        settings: { webhookRetry: config.webhookRetry, testTimeoutMs: config.testTimeoutMs },
        refspecs: row.trigger.refspec,
        junitPattern: row.junit_pattern,
        suiteProfiles: row.suite_profiles,
        suitePlan: row.suite_plan ?? undefined,
        // A plan's part runs the profile its parent gave it; only the parent honours the trigger's.
        requestedProfile: row.parent_id === null ? (row.trigger.profileName ?? null) : null,
      };
    },

    async recordStart(sessionId: number, timing: Timing): Promise<StartRecord> {
      const { rows } = await pool.query<{ last_built_commit: string | null }>(
        `WITH s AS (
           UPDATE sessions SET status = 'running', timing = $2, updated_at = now() WHERE id = $1 RETURNING suite_id
         )
         SELECT su.last_built_commit FROM suites su JOIN s ON s.suite_id = su.id`,
        [sessionId, JSON.stringify(timing)],
      );
      return { lastBuiltCommit: rows[0]?.last_built_commit ?? null };
    },

    async createPlanSessions(input: PlanSessionsInput): Promise<number[]> {
      // Idempotent: a retried activity finds the parts it made the first time.
      let { rows } = await pool.query<{ id: number; profile_name: string }>(
        'SELECT id, profile_name FROM sessions WHERE parent_id = $1',
        [input.parentId],
      );
      if (rows.length === 0) {
        ({ rows } = await pool.query<{ id: number; profile_name: string }>(
          `INSERT INTO sessions (ci_event_id, suite_id, parent_id, status, profile_name, branch, ref, head, force, workers)
           SELECT p.ci_event_id, p.suite_id, p.id, 'queued', prof.name, p.branch, p.ref, $2, true, prof.workers
             FROM sessions p, unnest($3::text[], $4::int[]) AS prof(name, workers)
            WHERE p.id = $1
           RETURNING id, profile_name`,
          [input.parentId, input.commitId, input.profiles.map((p) => p.name), input.profiles.map((p) => p.workers)],
        ));
      }
      // In the plan's order (profile names are unique within a plan).
      const byName = new Map(rows.map((r) => [r.profile_name, r.id]));
      return input.profiles.map((p) => {
        const id = byName.get(p.name);
        if (id === undefined) throw new Error(`no session was made for profile ${p.name}`);
        return id;
      });
    },

    async suiteSettings(suiteId: number): Promise<{ ciSquash: boolean }> {
      const { rows } = await pool.query<{ ci_squash: boolean }>(
        'SELECT r.ci_squash FROM suites su JOIN repos r ON r.id = su.repo_id WHERE su.id = $1',
        [suiteId],
      );
      return { ciSquash: rows[0]?.ci_squash ?? false };
    },

    async recordFinish(f: FinishInput): Promise<void> {
      await withTransaction(pool, async (client) => {
        const { rows } = await client.query<{ suite_id: number }>(
          `UPDATE sessions
              SET status = $2, reason = $3, commit_id = $4, committers = $5, counts = $6, timing = $7,
                  stopped_by = $8, profile_name = $9, workers = $10, updated_at = now()
            WHERE id = $1 RETURNING suite_id`,
          [f.sessionId, f.status, f.reason, f.commitId, JSON.stringify(f.committers), JSON.stringify(f.counts),
            JSON.stringify(f.timing), f.stoppedBy, f.profileName, f.workers],
        );
        if (f.builtCommit && rows[0]) {
          await client.query('UPDATE suites SET last_built_commit = $2 WHERE id = $1', [rows[0].suite_id, f.builtCommit]);
        }
      });
    },
  };
}
