/** What became of a session's push, chat and e-mail steps (post_build_steps, written by activities/post). */
import type { Db } from './transaction';

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
