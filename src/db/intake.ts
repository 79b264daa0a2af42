/**
 * SQL for an accepted trigger's records (core/intake.ts), written after the API answered: by
 * the suite's workflow before it queues the session, by the repository's intake workflow for a
 * delivery that builds nothing, or by the API itself for a rebuild. Everything is idempotent,
 * so a carrier retried after its COMMIT finds what it wrote:
 * - the ci_event by its guid, the session by its intake key (migration 027);
 * - a branch's visibility by when its trigger was accepted: an older word never undoes a newer
 *   one, whichever is recorded first; hiding never touches a branch locked visible.
 * A repository or suite deleted since the trigger was accepted leaves nothing behind.
 */
import type { Pool } from 'pg';
import type { BranchUpdate, Intake, TriggerRecord } from '../core/intake';
import { jsonbText } from './text';
import { withTransaction, type Db } from './transaction';

/** Writes `intakes` in order in one transaction; the id of each session, by its key (none for a suite gone). */
export async function recordIntakes(pool: Pool, intakes: readonly Intake[]): Promise<Map<string, number>> {
  return withTransaction(pool, async (db) => {
    const ids = new Map<string, number>();
    for (const intake of intakes) {
      for (const update of intake.branchUpdates) await recordBranchUpdate(db, intake.repoId, update, intake.acceptedAt);
      if (!intake.record) continue;
      if (intake.sessions.length === 0) {
        await recordCiEvent(db, intake.record);
        continue;
      }
      for (const s of intake.sessions) {
        const id = await recordSession(db, intake.record, s);
        if (id !== undefined) ids.set(s.key, id);
      }
    }
    return ids;
  });
}

async function recordBranchUpdate(db: Db, repoId: number, u: BranchUpdate, acceptedAt: number): Promise<void> {
  await db.query(
    `INSERT INTO branches (repo_id, name, hidden, hidden_at)
       SELECT $1, $2, $3, to_timestamp($4 / 1000.0) WHERE EXISTS (SELECT 1 FROM repos WHERE id = $1)
     ON CONFLICT (repo_id, name) DO UPDATE
       SET hidden = EXCLUDED.hidden AND NOT branches.locked_visible, hidden_at = EXCLUDED.hidden_at,
           updated_at = CASE WHEN branches.hidden = (EXCLUDED.hidden AND NOT branches.locked_visible) THEN branches.updated_at ELSE now() END
       WHERE branches.hidden_at IS NULL OR branches.hidden_at < EXCLUDED.hidden_at`,
    [repoId, u.branch, u.hidden, acceptedAt],
  );
}

const EVENT_VALUES = `SELECT $1::uuid, $2::bigint, $3::text, $4::text, $5::text, $6::jsonb, to_timestamp($7 / 1000.0)
  WHERE EXISTS (SELECT 1 FROM repos WHERE id = $2)`;

function eventParams(r: TriggerRecord): unknown[] {
  return [r.guid, r.repoId, r.provider, r.decision, r.reason, jsonbText(r.trigger), r.acceptedAt];
}

async function recordCiEvent(db: Db, r: TriggerRecord): Promise<void> {
  await db.query(
    `INSERT INTO ci_events (guid, repo_id, provider, decision, reason, trigger, received_at) ${EVENT_VALUES} ON CONFLICT (guid) DO NOTHING`,
    eventParams(r),
  );
}

/**
 * The ci_event (unless there) and the session (unless there) in one statement: the usual case
 * is one round trip a trigger. The session's id, or undefined when its suite or repository is gone.
 */
async function recordSession(db: Db, r: TriggerRecord, s: Intake['sessions'][number]): Promise<number | undefined> {
  const { rows } = await db.query<{ id: number }>(
    `WITH inserted AS (
       INSERT INTO ci_events (guid, repo_id, provider, decision, reason, trigger, received_at) ${EVENT_VALUES}
       ON CONFLICT (guid) DO NOTHING RETURNING id
     ), event AS (
       SELECT id FROM inserted UNION ALL SELECT id FROM ci_events WHERE guid = $1
     )
     INSERT INTO sessions (ci_event_id, suite_id, status, profile_name, branch, ref, head, force, workers, intake_key, created_at)
       SELECT (SELECT id FROM event LIMIT 1), $8, 'queued', $9, $10, $11, $12, $13, $14, $15, to_timestamp($7 / 1000.0)
        WHERE EXISTS (SELECT 1 FROM suites WHERE id = $8 AND repo_id = $2) AND EXISTS (SELECT 1 FROM event)
     ON CONFLICT (intake_key) WHERE intake_key IS NOT NULL DO NOTHING
     RETURNING id`,
    [...eventParams(r), s.suiteId, s.profileName, s.branch, s.ref, s.head, s.force, s.workers, s.key],
  );
  if (rows[0]) return rows[0].id;
  // Written before (a carrier retried after its COMMIT), or its suite is gone.
  const found = await db.query<{ id: number }>('SELECT id FROM sessions WHERE intake_key = $1', [s.key]);
  return found.rows[0]?.id;
}

/** Removes a trigger's records (a rebuild whose session Temporal did not take): its sessions go with it. */
export async function forgetTrigger(db: Db, guid: string): Promise<void> {
  await db.query('DELETE FROM ci_events WHERE guid = $1', [guid]);
}
