/**
 * A session's live output as events (issue 22): what its running processes printed, masked, in
 * the order their runners wrote it (db/outputChunks.ts), for `GET /api/v1/sessions/:id/output`
 * (routes/admin/output.ts) and the build page (web/output.ts), which both stream these events
 * (api/output.ts has what only HTTP needs: where a reconnecting client resumes, server-sent events).
 *
 * Each event is one row: `{event: 'output', seq, source, text, end}`, `end` set on a process's
 * last row. Following, the rows are read every POLL_MS until the session has ended and none of
 * its hooks runs, then `{event: 'done', status}`; since a post_build hook starts only after the
 * build's result is recorded, following goes on LINGER_MS after the end for one to start.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Pool } from 'pg';
import { lastOutputSeq, outputFollowState, readOutput, readRunningTails, type OutputRow } from '../db/outputChunks';
import type { Db } from '../db/transaction';

/** How often a follower reads new rows (the runners write every 250 ms). */
const POLL_MS = 250;
/** How often a follower asks whether the session is over. */
const STATE_EVERY_MS = 1_000;
/** How long after the session's end following goes on, for a post_build hook to start. */
export const LINGER_MS = 5_000;
/** Rows read at once (each at most 64 Ki characters). */
const PAGE = 64;

export type OutputSourceView =
  | { key: string; kind: 'file'; path: string; worker: number; attempt: number; run: number }
  | { key: string; kind: 'batch'; batch: number; worker: number; files: number | null }
  | { key: string; kind: 'hook'; hook: number; name: string | null; worker: number | null };

export interface OutputEvent {
  event: 'output';
  seq: number;
  source: OutputSourceView;
  text: string;
  end: { status: string; exit_code: number | null; duration_ms: number | null } | null;
}

export interface DoneEvent {
  event: 'done';
  status: string;
}

export interface OutputStreamOptions {
  /** Rows after this `seq` (0: from the start). */
  after: number;
  /** Go on with new rows until the session is over. */
  follow: boolean;
  /**
   * Start with the processes running now, the last this many characters of each, then follow
   * from there (what a page that opens shows), rather than every row after `after`.
   */
  runningTail?: number;
  /** False once the client has gone or the server is closing: the stream stops. */
  isOpen: () => boolean;
}

function sourceOf(row: OutputRow): OutputSourceView {
  switch (row.kind) {
    case 'file':
      return { key: `file/${row.worker}/${row.attempt}/${row.run}/${row.path}`, kind: 'file', path: row.path!, worker: row.worker!, attempt: row.attempt!, run: row.run! };
    case 'batch':
      return { key: `batch/${row.batch_id}`, kind: 'batch', batch: row.batch_id!, worker: row.worker!, files: row.batch_files };
    case 'hook':
      return { key: `hook/${row.hook_id}`, kind: 'hook', hook: row.hook_id!, name: row.hook_name, worker: row.hook_worker };
  }
}

function eventOf(row: OutputRow): OutputEvent {
  return {
    event: 'output',
    seq: row.seq,
    source: sourceOf(row),
    text: row.text,
    end: row.end_status === null ? null : { status: row.end_status, exit_code: row.exit_code, duration_ms: row.duration_ms },
  };
}

/** The session's output as events, in `seq` order (see the top of this file). The session must exist. */
export async function* outputEvents(pool: Pool, sessionId: number, options: OutputStreamOptions): AsyncGenerator<OutputEvent | DoneEvent> {
  let cursor = options.after;
  if (options.runningTail !== undefined) {
    // Rows become visible in seq order: every row up to `upTo` is there to read now.
    const upTo = await lastOutputSeq(pool, sessionId);
    for (const row of await readRunningTails(pool, sessionId, upTo, options.runningTail)) yield eventOf(row);
    cursor = Math.max(cursor, upTo);
  }
  let stateAt = 0;
  for (;;) {
    // What the session was before the rows are read: once it is over, every row it wrote is in the read below.
    const state = options.follow && Date.now() - stateAt >= STATE_EVERY_MS ? await outputFollowState(pool, sessionId) : null;
    if (state) stateAt = Date.now();
    for (;;) {
      if (!options.isOpen()) return;
      const rows = await readOutput(pool, sessionId, cursor, PAGE);
      for (const row of rows) {
        yield eventOf(row);
        cursor = row.seq;
      }
      if (rows.length < PAGE) break;
    }
    if (!options.follow) return;
    if (state === undefined) return; // deleted meanwhile
    if (state?.endedAt && !state.hookRunning && Date.now() - state.endedAt.getTime() >= LINGER_MS) {
      yield { event: 'done', status: state.status };
      return;
    }
    await sleep(POLL_MS);
    if (!options.isOpen()) return;
  }
}

/** Whether the session is there to read the output of (one deleted meanwhile is not). */
export async function sessionExists(db: Db, sessionId: number): Promise<boolean> {
  return (await outputFollowState(db, sessionId)) !== undefined;
}
