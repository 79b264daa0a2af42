/**
 * SQL of live output (migration 021): what running processes printed, masked, appended by their
 * runner (steps/liveOutput.ts) and read in order by the API (api/output.ts). Rows of a session are
 * numbered by `seq` in the statement that inserts them, under the row lock of its output_streams
 * row, so they become visible in `seq` order: reading `seq > N` again later never misses a row.
 */
import { storableText } from './text';
import type { Db } from './transaction';

/** What printed the output. `worker` is 1..N. */
export type OutputSource =
  | { kind: 'file'; worker: number; path: string; attempt: number; run: number }
  | { kind: 'batch'; worker: number; batchId: number }
  | { kind: 'hook'; hookId: number };

/** How a process ended, on its last row. */
export interface OutputEnd {
  status: 'passed' | 'failed' | 'error';
  exitCode: number | null;
  durationMs: number;
}

export interface OutputRow {
  seq: number;
  kind: OutputSource['kind'];
  worker: number | null;
  path: string | null;
  attempt: number | null;
  run: number | null;
  batch_id: number | null;
  hook_id: number | null;
  text: string;
  end_status: OutputEnd['status'] | null;
  exit_code: number | null;
  duration_ms: number | null;
  /** A hook's name and worker (null: post_build), from its session_hooks row. */
  hook_name: string | null;
  hook_worker: number | null;
  /** A batch's number of files, from its test_batches row. */
  batch_files: number | null;
}

/**
 * Appends `texts` (already masked), in order, as rows of one source; `end` marks the last one as
 * the process's end (with `texts` [''] when there is nothing more to say).
 */
export async function appendOutput(db: Db, sessionId: number, source: OutputSource, texts: string[], end: OutputEnd | null): Promise<void> {
  if (texts.length === 0) return;
  await db.query(
    `WITH n AS (
       INSERT INTO output_streams AS s (session_id, last_seq) VALUES ($1, $2)
       ON CONFLICT (session_id) DO UPDATE SET last_seq = s.last_seq + $2
       RETURNING last_seq
     )
     INSERT INTO output_chunks (session_id, seq, kind, worker, path, attempt, run, batch_id, hook_id, text, end_status, exit_code, duration_ms)
     SELECT $1, n.last_seq - $2 + t.ord, $3, $4, $5, $6, $7, $8, $9, t.text,
            CASE WHEN t.ord = $2 THEN $10 END, CASE WHEN t.ord = $2 THEN $11::integer END, CASE WHEN t.ord = $2 THEN $12::integer END
       FROM n, unnest($13::text[]) WITH ORDINALITY AS t(text, ord)`,
    [
      sessionId,
      texts.length,
      source.kind,
      source.kind === 'hook' ? null : source.worker,
      source.kind === 'file' ? storableText(source.path) : null,
      source.kind === 'file' ? source.attempt : null,
      source.kind === 'file' ? source.run : null,
      source.kind === 'batch' ? source.batchId : null,
      source.kind === 'hook' ? source.hookId : null,
      end?.status ?? null,
      end?.exitCode ?? null,
      end === null ? null : Math.round(end.durationMs),
      texts.map(storableText),
    ],
  );
}

const COLUMNS = `c.seq, c.kind, c.worker, c.path, c.attempt, c.run, c.batch_id, c.hook_id,
  c.text, c.end_status, c.exit_code, c.duration_ms, h.name AS hook_name, h.worker AS hook_worker, b.files AS batch_files`;
const JOINS = `LEFT JOIN session_hooks h ON h.id = c.hook_id LEFT JOIN test_batches b ON b.id = c.batch_id`;

/** Up to `limit` rows of a session after `after`, in order. */
export async function readOutput(db: Db, sessionId: number, after: number, limit: number): Promise<OutputRow[]> {
  const { rows } = await db.query<OutputRow>(
    `SELECT ${COLUMNS} FROM output_chunks c ${JOINS}
      WHERE c.session_id = $1 AND c.seq > $2 ORDER BY c.seq LIMIT $3`,
    [sessionId, after, limit],
  );
  return rows;
}

/** The last `seq` of a session's output, 0 when there is none. */
export async function lastOutputSeq(db: Db, sessionId: number): Promise<number> {
  const { rows } = await db.query<{ last_seq: number }>('SELECT last_seq FROM output_streams WHERE session_id = $1', [sessionId]);
  return rows[0]?.last_seq ?? 0;
}

/**
 * Of the output up to `upTo` (a lastOutputSeq), the rows of the processes still running then
 * (no end row), each cut to the rows that hold its last `tailChars` characters, in order: what a
 * page that opens now shows, before it follows from `upTo`.
 */
export async function readRunningTails(db: Db, sessionId: number, upTo: number, tailChars: number): Promise<OutputRow[]> {
  const { rows } = await db.query<OutputRow>(
    `WITH c AS (
       SELECT c.*, concat_ws('/', c.kind, c.worker, c.attempt, c.run, c.batch_id, c.hook_id, c.path) AS source
         FROM output_chunks c WHERE c.session_id = $1 AND c.seq <= $2
     ), running AS (
       SELECT c.*, sum(length(c.text)) OVER (PARTITION BY c.source ORDER BY c.seq DESC) AS from_end
         FROM c WHERE c.source NOT IN (SELECT source FROM c WHERE end_status IS NOT NULL)
     )
     SELECT ${COLUMNS} FROM running c ${JOINS}
      WHERE c.from_end - length(c.text) < $3 ORDER BY c.seq`,
    [sessionId, upTo, tailChars],
  );
  return rows;
}

/** Whether a session is there, has ended (and when), and has a hook running: when following its output may stop. */
export async function outputFollowState(
  db: Db,
  sessionId: number,
): Promise<{ status: string; endedAt: Date | null; hookRunning: boolean } | undefined> {
  const { rows } = await db.query<{ status: string; done: number | null; updated_at: Date; hook_running: boolean }>(
    `SELECT s.status, (s.timing->>'done')::float8 AS done, s.updated_at,
            EXISTS (SELECT 1 FROM session_hooks h WHERE h.session_id = s.id AND h.status = 'running') AS hook_running
       FROM sessions s WHERE s.id = $1`,
    [sessionId],
  );
  const row = rows[0];
  if (!row) return undefined;
  const ended = row.status !== 'queued' && row.status !== 'running';
  return { status: row.status, endedAt: ended ? (row.done !== null ? new Date(row.done * 1000) : row.updated_at) : null, hookRunning: row.hook_running };
}
