/**
 * SQL of a build's hooks (migration 016), and of each worker getting its image (migration 029):
 * each run is a row from its start (status `running`), so the build page shows a hook that is
 * still going; the end fills in how it went.
 */
import type { SetupStepName } from '../core/buildSetup';
import { storableText, storableTextOrNull } from './text';
import type { Db } from './transaction';

export type HookStatus = 'running' | 'passed' | 'failed' | 'error' | 'skipped';

export interface HookRow {
  id: number;
  session_id: number;
  name: SetupStepName;
  /** 1..N; null for post_build, which runs once a build. */
  worker: number | null;
  command: string;
  status: HookStatus;
  exit_code: number | null;
  duration_ms: number | null;
  output: string;
  detail: string | null;
  runner: string | null;
  started_at: Date;
  finished_at: Date | null;
}

export async function startHook(
  db: Db,
  hook: { sessionId: number; name: SetupStepName; worker: number | null; command: string; detail: string | null; runner: string },
): Promise<number> {
  const { rows } = await db.query<{ id: number }>(
    `INSERT INTO session_hooks (session_id, name, worker, command, status, detail, runner)
     VALUES ($1, $2, $3, $4, 'running', $5, $6) RETURNING id`,
    [hook.sessionId, hook.name, hook.worker, storableText(hook.command), storableTextOrNull(hook.detail), hook.runner],
  );
  return rows[0]!.id;
}

export async function finishHook(
  db: Db,
  id: number,
  end: { status: Exclude<HookStatus, 'running'>; exitCode: number | null; durationMs: number; output: string; detail?: string | null },
): Promise<void> {
  await db.query(
    `UPDATE session_hooks SET status = $2, exit_code = $3, duration_ms = $4, output = $5, detail = COALESCE($6, detail), finished_at = now()
      WHERE id = $1`,
    [id, end.status, end.exitCode, Math.round(end.durationMs), storableText(end.output), storableTextOrNull(end.detail ?? null)],
  );
}

/** A build's hooks in the order they started. */
export async function listSessionHooks(db: Db, sessionId: number): Promise<HookRow[]> {
  const { rows } = await db.query<HookRow>(
    `SELECT id, session_id, name, worker, command, status, exit_code, duration_ms, output, detail, runner, started_at, finished_at
       FROM session_hooks WHERE session_id = $1 ORDER BY id`,
    [sessionId],
  );
  return rows;
}
