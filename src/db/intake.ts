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
import type { BranchUpdate, Intake, SessionIntake, TriggerRecord } from '../core/intake';
import { jsonbText } from './text';
import { withTransaction, type Db } from './transaction';

/**
 * Writes `intakes` in one transaction; the id of each session, by its key (none for a suite
 * gone). Their sessions go in one statement, in order (a suite's batch of a burst is one round
 * trip, not one per trigger: the suite records before it can take the next batch).
 */
export async function recordIntakes(pool: Pool, intakes: readonly Intake[]): Promise<Map<string, number>> {
  return (await writeIntakes(pool, intakes)).ids;
}

/**
 * recordIntakes, also saying which sessions this call wrote (`fresh`, in order): whoever writes
 * a session sends its `received` (api/herald.ts, activities/received.ts). `mostlyWritten`: the
 * caller expects most of them recorded already (the suite, after the API), so it reads first.
 */
export async function writeIntakes(
  pool: Pool,
  intakes: readonly Intake[],
  opts: { mostlyWritten?: boolean } = {},
): Promise<{ ids: Map<string, number>; fresh: number[] }> {
  if (!opts.mostlyWritten) return writeAll(pool, intakes);
  // An intake whose sessions are all there was written whole (one transaction wrote its events,
  // branches and sessions): the suite's copy of what the API recorded first costs one read.
  const keys = intakes.flatMap((i) => i.sessions.map((s) => s.key));
  const known = await sessionIdsByKey(pool, keys);
  const written = (i: Intake) => i.sessions.length > 0 && i.sessions.every((s) => known.has(s.key));
  const rest = intakes.filter((i) => !written(i));
  if (rest.length === 0) return { ids: known, fresh: [] };
  const done = await writeAll(pool, rest);
  for (const [key, id] of known) if (!done.ids.has(key)) done.ids.set(key, id);
  return done;
}

async function writeAll(pool: Pool, intakes: readonly Intake[]): Promise<{ ids: Map<string, number>; fresh: number[] }> {
  // Only sessions (and their events): one statement, atomic without BEGIN and COMMIT, each a
  // round trip that costs the caller as much CPU as the statement (loopback TCP, performance.md).
  if (intakes.every((i) => i.branchUpdates.length === 0 && i.record && i.sessions.length > 0)) {
    return recordSessions(pool, intakes.flatMap((i) => i.sessions.map((session) => ({ record: i.record!, session }))));
  }
  return withTransaction(pool, async (db) => {
    const ids = new Map<string, number>();
    const fresh: number[] = [];
    // In order: the sessions that come one after another go together.
    let pending: { record: TriggerRecord; session: SessionIntake }[] = [];
    const flush = async () => {
      const written = await recordSessions(db, pending);
      for (const [key, id] of written.ids) ids.set(key, id);
      fresh.push(...written.fresh);
      pending = [];
    };
    for (const intake of intakes) {
      if (intake.branchUpdates.length > 0 || (intake.record && intake.sessions.length === 0)) await flush();
      for (const update of intake.branchUpdates) await recordBranchUpdate(db, intake.repoId, update, intake.acceptedAt);
      if (!intake.record) continue;
      if (intake.sessions.length === 0) await recordCiEvent(db, intake.record);
      for (const session of intake.sessions) pending.push({ record: intake.record, session });
    }
    await flush();
    return { ids, fresh };
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
 * The ci_events (unless there) and the sessions (unless there) of `rows`, in one statement; a
 * row whose suite or repository is gone gets none. The sessions' ids follow the rows' order.
 */
async function recordSessions(db: Db, rows: readonly { record: TriggerRecord; session: SessionIntake }[]): Promise<{ ids: Map<string, number>; fresh: number[] }> {
  const ids = new Map<string, number>();
  if (rows.length === 0) return { ids, fresh: [] };
  const col = <T>(f: (r: (typeof rows)[number]) => T): T[] => rows.map(f);
  const { rows: inserted } = await db.query<{ id: number; intake_key: string }>(
    `WITH input AS (
       SELECT * FROM unnest($1::uuid[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::jsonb[], $7::float8[],
                            $8::bigint[], $9::text[], $10::text[], $11::text[], $12::text[], $13::boolean[], $14::int[], $15::text[])
         WITH ORDINALITY AS i(guid, repo_id, provider, decision, reason, trigger, accepted_ms,
                              suite_id, profile_name, branch, ref, head, force, workers, intake_key, ord)
     ), inserted AS (
       INSERT INTO ci_events (guid, repo_id, provider, decision, reason, trigger, received_at)
         SELECT DISTINCT ON (guid) guid, repo_id, provider, decision, reason, trigger, to_timestamp(accepted_ms / 1000.0)
           FROM input WHERE EXISTS (SELECT 1 FROM repos r WHERE r.id = input.repo_id) ORDER BY guid, ord
       ON CONFLICT (guid) DO NOTHING RETURNING id, guid
     ), event AS (
       SELECT id, guid FROM inserted UNION ALL SELECT e.id, e.guid FROM ci_events e WHERE e.guid IN (SELECT guid FROM input)
     )
     INSERT INTO sessions (ci_event_id, suite_id, status, profile_name, branch, ref, head, force, workers, intake_key, created_at)
       SELECT (SELECT id FROM event WHERE event.guid = input.guid LIMIT 1), suite_id, 'queued', profile_name, branch, ref, head, force, workers,
              intake_key, to_timestamp(accepted_ms / 1000.0)
         FROM input
        WHERE EXISTS (SELECT 1 FROM suites su WHERE su.id = input.suite_id AND su.repo_id = input.repo_id)
          AND EXISTS (SELECT 1 FROM event WHERE event.guid = input.guid)
        ORDER BY ord
     ON CONFLICT (intake_key) WHERE intake_key IS NOT NULL DO NOTHING
     RETURNING id, intake_key`,
    [
      col((r) => r.record.guid),
      col((r) => r.record.repoId),
      col((r) => r.record.provider),
      col((r) => r.record.decision),
      col((r) => r.record.reason),
      col((r) => jsonbText(r.record.trigger)),
      col((r) => r.record.acceptedAt),
      col((r) => r.session.suiteId),
      col((r) => r.session.profileName),
      col((r) => r.session.branch),
      col((r) => r.session.ref),
      col((r) => r.session.head),
      col((r) => r.session.force),
      col((r) => r.session.workers),
      col((r) => r.session.key),
    ],
  );
  for (const r of inserted) ids.set(r.intake_key, r.id);
  const fresh = inserted.map((r) => Number(r.id)).sort((a, b) => a - b);
  // Written before (a carrier retried after its COMMIT), or their suite is gone.
  const missing = rows.map((r) => r.session.key).filter((k) => !ids.has(k));
  for (const [key, id] of await sessionIdsByKey(db, missing)) ids.set(key, id);
  return { ids, fresh };
}

/** The recorded sessions of these intake keys, by key (none read for none asked). */
async function sessionIdsByKey(db: Db, keys: readonly string[]): Promise<Map<string, number>> {
  if (keys.length === 0) return new Map();
  const { rows } = await db.query<{ id: number; intake_key: string }>('SELECT id, intake_key FROM sessions WHERE intake_key = ANY($1::text[])', [keys]);
  return new Map(rows.map((r) => [r.intake_key, r.id]));
}

/** Removes a trigger's records (a rebuild whose session Temporal did not take): its sessions go with it. */
export async function forgetTrigger(db: Db, guid: string): Promise<void> {
  await db.query('DELETE FROM ci_events WHERE guid = $1', [guid]);
}

/** Whether the session of an intake key is recorded (by whichever carrier). */
export async function intakeRecorded(db: Db, key: string): Promise<boolean> {
  return (await sessionIdsByKey(db, [key])).has(key);
}
