/**
 * SQL for what arrived and what ran: ci_events, sessions and their test results, read back as
 * the views the status, report and admin endpoints show.
 */
import type { TriggerEvent } from '../core/types';
import type { Db } from './transaction';
import { jsonbText } from './text';

export async function insertCiEvent(
  db: Db,
  e: { guid: string; repoId: number; provider: string; decision: 'build' | 'skip' | 'drop'; reason: string | null; trigger: TriggerEvent },
): Promise<number> {
  const { rows } = await db.query<{ id: number }>(
    'INSERT INTO ci_events (guid, repo_id, provider, decision, reason, trigger) VALUES ($1, $2, $3, $4, $5, $6) RETURNING id',
    [e.guid, e.repoId, e.provider, e.decision, e.reason, jsonbText(e.trigger)],
  );
  return rows[0]!.id;
}

export async function insertSession(
  db: Db,
  s: { ciEventId: number; suiteId: number; branch: string; ref: string | null; head: string; force: boolean; profileName: string; workers: number },
): Promise<number> {
  const { rows } = await db.query<{ id: number }>(
    `INSERT INTO sessions (ci_event_id, suite_id, status, profile_name, branch, ref, head, force, workers)
     VALUES ($1, $2, 'queued', $3, $4, $5, $6, $7, $8) RETURNING id`,
    [s.ciEventId, s.suiteId, s.profileName, s.branch, s.ref, s.head, s.force, s.workers],
  );
  return rows[0]!.id;
}

export interface CiEventRow {
  id: number;
  guid: string;
  provider: string;
  decision: string;
  reason: string | null;
  branch: string | null;
  received_at: Date;
}

export async function findCiEvent(db: Db, guid: string): Promise<CiEventRow | undefined> {
  const { rows } = await db.query<CiEventRow>(
    `SELECT id, guid, provider, decision, reason, trigger->>'branch' AS branch, received_at FROM ci_events WHERE guid = $1`,
    [guid],
  );
  return rows[0];
}

export interface EventSessionRow {
  id: number;
  status: string;
  commit_id: string | null;
  counts: Record<string, number>;
}

export async function listEventSessions(db: Db, ciEventId: number): Promise<EventSessionRow[]> {
  const { rows } = await db.query<EventSessionRow>(
    'SELECT id, status, commit_id, counts FROM sessions WHERE ci_event_id = $1 ORDER BY id',
    [ciEventId],
  );
  return rows;
}

export interface SessionRow {
  id: number;
  guid: string;
  parent_id: number | null;
  status: string;
  reason: string | null;
  profile_name: string;
  branch: string;
  ref: string | null;
  head: string;
  force: boolean;
  commit_id: string | null;
  committers: string[];
  counts: Record<string, number>;
  workers: number;
  timing: Record<string, number>;
  stopped_by: string | null;
  created_at: Date;
  updated_at: Date;
  received_at: Date;
  changeset: TriggerEvent['changeset'] | null;
  repo_name: string;
  pull_url: string;
  org_name: string;
}

export async function findSession(db: Db, id: number): Promise<SessionRow | undefined> {
  const { rows } = await db.query<SessionRow>(
    `SELECT s.id, e.guid, s.parent_id, s.status, s.reason, s.profile_name, s.branch, s.ref, s.head, s.force, s.commit_id,
            s.committers, s.counts, s.workers, s.timing, s.stopped_by, s.created_at, s.updated_at, e.received_at,
            e.trigger->'changeset' AS changeset, r.name AS repo_name, r.pull_url, o.name AS org_name
       FROM sessions s
       JOIN ci_events e ON e.id = s.ci_event_id
       JOIN suites su ON su.id = s.suite_id
       JOIN repos r ON r.id = su.repo_id
       JOIN orgs o ON o.id = r.org_id
      WHERE s.id = $1`,
    [id],
  );
  return rows[0];
}

export interface TestRow {
  path: string;
  status: string;
  exit_code: number | null;
  duration_ms: number;
  output?: string;
}

export async function listTests(db: Db, sessionId: number, withOutput: boolean): Promise<TestRow[]> {
  const { rows } = await db.query<TestRow>(
    `SELECT path, status, exit_code, duration_ms${withOutput ? ', output' : ''} FROM test_results WHERE session_id = $1 ORDER BY path`,
    [sessionId],
  );
  return rows;
}
