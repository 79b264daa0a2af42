/**
 * SQL of a build's workers (migration 016): where each worker's setup stands, so that the first
 * one ready starts the tests (the rendezvous: the others join as they get ready) and a setup
 * failure ends the build once, not once per worker; and when each of a worker's steps ended,
 * which the session's timing keys are made of.
 */
import type { Timing } from '../core/types';
import { jsonbText, storableText } from './text';
import type { Db } from './transaction';

export interface WorkerTiming {
  [key: string]: number;
}

/** Where the build's workers stand: how many are ready, and the first setup failure (any worker's). */
export interface Rendezvous {
  ready: number;
  failure: string | null;
}

/**
 * Records a worker's setup step ending (its timing key, seconds since the epoch) and any notes
 * for the build page; makes the worker's row on its first step.
 */
export async function recordWorkerStep(db: Db, sessionId: number, worker: number, runner: string, timing: WorkerTiming, notes: string[] = []): Promise<void> {
  await db.query(
    `INSERT INTO session_workers (session_id, worker, timing, notes, runner) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (session_id, worker) DO UPDATE
       SET timing = session_workers.timing || EXCLUDED.timing, notes = session_workers.notes || EXCLUDED.notes, runner = EXCLUDED.runner`,
    [sessionId, worker, jsonbText(timing), notes.map(storableText), runner],
  );
}

/** Where the workers stand once one more is ready. */
export interface Readiness extends Rendezvous {
  /**
   * This worker is the earliest ready that it can see: it starts the build's tests (sends `test`).
   * Two workers ready at once may both think so, never neither (the earliest of all sees itself first).
   */
  first: boolean;
}

/** The worker is set up; how many are now (a retried worker that was ready before counts once). */
export async function markWorkerReady(db: Db, sessionId: number, worker: number, runner: string): Promise<Readiness> {
  await db.query(
    `INSERT INTO session_workers (session_id, worker, ready_at, runner) VALUES ($1, $2, now(), $3)
     ON CONFLICT (session_id, worker) DO UPDATE SET ready_at = COALESCE(session_workers.ready_at, now()), runner = EXCLUDED.runner`,
    [sessionId, worker, runner],
  );
  const { rows } = await db.query<{ earliest: number }>(
    'SELECT worker AS earliest FROM session_workers WHERE session_id = $1 AND ready_at IS NOT NULL ORDER BY ready_at, worker LIMIT 1',
    [sessionId],
  );
  return { ...(await rendezvous(db, sessionId)), first: rows[0]?.earliest === worker };
}

/** The worker's setup failed: the first failure of the build is kept (the one the build ends with). */
export async function markWorkerFailed(db: Db, sessionId: number, worker: number, runner: string, failure: string): Promise<Rendezvous> {
  await db.query(
    `INSERT INTO session_workers (session_id, worker, failure, runner) VALUES ($1, $2, $3, $4)
     ON CONFLICT (session_id, worker) DO UPDATE SET failure = COALESCE(session_workers.failure, EXCLUDED.failure), runner = EXCLUDED.runner`,
    [sessionId, worker, storableText(failure), runner],
  );
  return rendezvous(db, sessionId);
}

export async function rendezvous(db: Db, sessionId: number): Promise<Rendezvous> {
  const { rows } = await db.query<{ ready: number; failure: string | null }>(
    `SELECT count(*) FILTER (WHERE ready_at IS NOT NULL)::int AS ready,
            (SELECT failure FROM session_workers WHERE session_id = $1 AND failure IS NOT NULL ORDER BY worker LIMIT 1) AS failure
       FROM session_workers WHERE session_id = $1`,
    [sessionId],
  );
  return rows[0] ?? { ready: 0, failure: null };
}

/**
 * The build's setup timing: each key at its latest over the workers that reported it (a step is
 * done when every worker has done it), plus when the last of them became ready
 * (`worker_rendezvous`). Asked by the first worker ready, it is that worker's.
 */
export async function setupTiming(db: Db, sessionId: number): Promise<Timing> {
  const { rows } = await db.query<{ timing: WorkerTiming[]; ready: Date | null }>(
    `SELECT coalesce(array_agg(timing), '{}') AS timing, max(ready_at) AS ready FROM session_workers WHERE session_id = $1`,
    [sessionId],
  );
  const out: Record<string, number> = {};
  for (const t of rows[0]?.timing ?? []) for (const [k, v] of Object.entries(t)) out[k] = Math.max(out[k] ?? 0, v);
  if (rows[0]?.ready) out.worker_rendezvous = rows[0].ready.getTime() / 1000;
  return out;
}

export interface WorkerRow {
  worker: number;
  ready_at: Date | null;
  failure: string | null;
  timing: WorkerTiming;
  notes: string[];
  runner: string | null;
}

export async function listSessionWorkers(db: Db, sessionId: number): Promise<WorkerRow[]> {
  const { rows } = await db.query<WorkerRow>(
    'SELECT worker, ready_at, failure, timing, notes, runner FROM session_workers WHERE session_id = $1 ORDER BY worker',
    [sessionId],
  );
  return rows;
}
