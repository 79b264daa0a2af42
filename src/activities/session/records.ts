/**
 * The small PostgreSQL recorders the session workflow calls: load what a session is about,
 * mark it started, store how it ended.
 */
import type { Pool } from 'pg';
import type { Config } from '../../config';
import type { TriggerEvent } from '../../core/types';
import type { FinishInput, SessionContext, StartRecord } from '../types';
import type { Timing } from '../../core/types';

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
                su.test_pattern, su.test_command, s.workers, e.trigger, e.received_at
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

    async suiteSettings(suiteId: number): Promise<{ ciSquash: boolean }> {
      const { rows } = await pool.query<{ ci_squash: boolean }>(
        'SELECT r.ci_squash FROM suites su JOIN repos r ON r.id = su.repo_id WHERE su.id = $1',
        [suiteId],
      );
      return { ciSquash: rows[0]?.ci_squash ?? false };
    },

    async recordFinish(f: FinishInput): Promise<void> {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const { rows } = await client.query<{ suite_id: number }>(
          `UPDATE sessions
              SET status = $2, reason = $3, commit_id = $4, committers = $5, counts = $6, timing = $7,
                  stopped_by = $8, updated_at = now()
            WHERE id = $1 RETURNING suite_id`,
          [f.sessionId, f.status, f.reason, f.commitId, JSON.stringify(f.committers), JSON.stringify(f.counts),
            JSON.stringify(f.timing), f.stoppedBy],
        );
        if (f.builtCommit && rows[0]) {
          await client.query('UPDATE suites SET last_built_commit = $2 WHERE id = $1', [rows[0].suite_id, f.builtCommit]);
        }
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK');
        throw err;
      } finally {
        client.release();
      }
    },
  };
}
