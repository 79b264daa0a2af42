/**
 * SQL of a build's batches (migration 020): one row a process that ran many test files of a
 * lane, from its start, with its output kept once; its files' results point at it.
 */
import { storableText, storableTextOrNull } from './text';
import type { Db } from './transaction';

export type BatchStatus = 'running' | 'passed' | 'failed' | 'error';

export interface BatchRow {
  id: number;
  session_id: number;
  lane: number;
  runner: string | null;
  files: number;
  status: BatchStatus;
  exit_code: number | null;
  duration_ms: number | null;
  output: string;
  note: string | null;
  started_at: Date;
  finished_at: Date | null;
}

export async function startBatch(db: Db, batch: { sessionId: number; lane: number; runner: string; files: number }): Promise<number> {
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO test_batches (session_id, lane, runner, files, status) VALUES ($1, $2, $3, $4, 'running') RETURNING id`,
    [batch.sessionId, batch.lane, batch.runner, batch.files],
  );
  return Number(rows[0]!.id);
}

export async function finishBatch(
  db: Db,
  id: number,
  end: { status: Exclude<BatchStatus, 'running'>; exitCode: number | null; durationMs: number; output: string; note: string | null },
): Promise<void> {
  await db.query(
    `UPDATE test_batches SET status = $2, exit_code = $3, duration_ms = $4, output = $5, note = $6, finished_at = now() WHERE id = $1`,
    [id, end.status, end.exitCode, Math.round(end.durationMs), storableText(end.output), storableTextOrNull(end.note)],
  );
}

/** A build's batches in the order they started. */
export async function listSessionBatches(db: Db, sessionId: number): Promise<BatchRow[]> {
  const { rows } = await db.query<BatchRow>(
    `SELECT id::int, session_id::int, lane, runner, files, status, exit_code, duration_ms, output, note, started_at, finished_at
       FROM test_batches WHERE session_id = $1 ORDER BY id`,
    [sessionId],
  );
  return rows;
}

/** A batch as the views show it: its output's end only, and how long the whole is. */
export interface BatchSummaryRow extends Omit<BatchRow, 'output' | 'session_id'> {
  /** The last `tailChars` characters of its output. */
  output_tail: string;
  output_length: number;
}

/** A build's batches in the order they started, each with the end of its output (the build page reads them every second). */
export async function listBatchSummaries(db: Db, sessionId: number, tailChars: number): Promise<BatchSummaryRow[]> {
  const { rows } = await db.query<BatchSummaryRow>(
    `SELECT id::int, lane, runner, files, status, exit_code, duration_ms, right(output, $2) AS output_tail, length(output) AS output_length,
            note, started_at, finished_at
       FROM test_batches WHERE session_id = $1 ORDER BY id`,
    [sessionId, tailChars],
  );
  return rows;
}
