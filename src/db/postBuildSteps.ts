/** What became of a session's push, chat and e-mail steps (post_build_steps, written by activities/post). */
import type { Db } from './transaction';
import { storableText } from './text';

export interface PostBuildStepRow {
  step: 'push' | 'chat' | 'email';
  ok: boolean;
  detail: string;
  created_at: string;
}

export async function listPostBuildSteps(db: Db, sessionId: number): Promise<PostBuildStepRow[]> {
  const { rows } = await db.query<{ step: PostBuildStepRow['step']; ok: boolean; detail: string; created_at: Date }>(
    'SELECT step, ok, detail, created_at FROM post_build_steps WHERE session_id = $1 ORDER BY id',
    [sessionId],
  );
  return rows.map((r) => ({ step: r.step, ok: r.ok, detail: r.detail, created_at: r.created_at.toISOString() }));
}

export type PostStep = PostBuildStepRow['step'];

/** Long enough for git's or a server's explanation, short enough for a report page. */
const MAX_DETAIL_CHARS = 2_000;

export async function recordStep(db: Db, sessionId: number, step: PostStep, ok: boolean, detail: string): Promise<void> {
  // A server's answer may hold NUL, which PostgreSQL text cannot.
  const text = storableText(detail);
  // Nothing to record on once the session was deleted (its repository was, app/remove.ts).
  await db.query('INSERT INTO post_build_steps (session_id, step, ok, detail) SELECT $1::bigint, $2, $3::boolean, $4 WHERE EXISTS (SELECT 1 FROM sessions WHERE id = $1::bigint)', [
    sessionId,
    step,
    ok,
    text.length > MAX_DETAIL_CHARS ? `${text.slice(0, MAX_DETAIL_CHARS - 1)}…` : text,
  ]);
}
