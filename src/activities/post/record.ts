/**
 * The SQL of the post-build activities: what they need to know about a session and its
 * repository (loaded here, so no secret or address crosses Temporal), and where they record
 * what became of each step (post_build_steps, shown on the report page).
 */
import type { Pool } from 'pg';
import type { FailingTest } from './summary';
import { storableText } from '../../db/text';

export type PostStep = 'push' | 'chat' | 'email';

/** Long enough for git's or a server's explanation, short enough for a report page. */
const MAX_DETAIL_CHARS = 2_000;

export async function recordStep(pool: Pool, sessionId: number, step: PostStep, ok: boolean, detail: string): Promise<void> {
  // PostgreSQL text cannot hold NUL; a server's answer might.
  const text = storableText(detail);
  await pool.query('INSERT INTO post_build_steps (session_id, step, ok, detail) VALUES ($1, $2, $3, $4)', [
    sessionId,
    step,
    ok,
    text.length > MAX_DETAIL_CHARS ? `${text.slice(0, MAX_DETAIL_CHARS - 1)}…` : text,
  ]);
}

/** The session's test files that failed or errored, by path. */
export async function loadFailingTests(pool: Pool, sessionId: number, limit = 500): Promise<FailingTest[]> {
  const { rows } = await pool.query<FailingTest>(
    `SELECT path, status FROM test_results WHERE session_id = $1 AND status IN ('failed', 'error') ORDER BY path LIMIT $2`,
    [sessionId, limit],
  );
  return rows;
}

export interface SessionTargets {
  chatUrl: string | null;
  orgEmail: string;
}

/** Where the session's chat message and e-mail go: its repository's chat_url, its organization's email. */
export async function loadSessionTargets(pool: Pool, sessionId: number): Promise<SessionTargets | undefined> {
  const { rows } = await pool.query<{ chat_url: string | null; email: string }>(
    `SELECT r.chat_url, o.email
       FROM sessions s
       JOIN suites su ON su.id = s.suite_id
       JOIN repos r ON r.id = su.repo_id
       JOIN orgs o ON o.id = r.org_id
      WHERE s.id = $1`,
    [sessionId],
  );
  const row = rows[0];
  return row ? { chatUrl: row.chat_url, orgEmail: row.email } : undefined;
}

export interface PushTarget {
  scm: 'git' | 'hg';
  ciPushUrl: string | null;
  sshPrivateKeySealed: string;
}

export async function loadPushTarget(pool: Pool, repoId: number): Promise<PushTarget | undefined> {
  const { rows } = await pool.query<{ scm: 'git' | 'hg'; ci_push_url: string | null; ssh_private_key_sealed: string }>(
    'SELECT scm, ci_push_url, ssh_private_key_sealed FROM repos WHERE id = $1',
    [repoId],
  );
  const row = rows[0];
  return row ? { scm: row.scm, ciPushUrl: row.ci_push_url, sshPrivateKeySealed: row.ssh_private_key_sealed } : undefined;
}
