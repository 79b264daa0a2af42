/**
 * Commit statuses (issue 13): a repository's status settings (migration 012) and the log of
 * every attempt to post one. The sealed token is read only by loadStatusTarget, for the
 * attempt that sends it; nothing here stores a token or an Authorization header.
 */
import type { StatusProvider } from '../core/commitStatus';
import { storableText } from './text';
import type { Db } from './transaction';

export interface StatusSettings {
  status_provider: StatusProvider | null;
  status_api_url: string | null;
  status_repo: string | null;
}

/** Sets the given status settings (absent ones unchanged) and the token: sealed, or null to remove it. */
export async function updateStatusSettings(
  db: Db,
  repoId: number,
  patch: Partial<StatusSettings> & { status_token_sealed?: string | null },
): Promise<void> {
  const columns = (['status_provider', 'status_api_url', 'status_repo', 'status_token_sealed'] as const).filter((c) => patch[c] !== undefined);
  if (columns.length === 0) return;
  const sets = columns.map((c, i) => `${c} = $${i + 2}`).join(', ');
  await db.query(`UPDATE repos SET ${sets} WHERE id = $1`, [repoId, ...columns.map((c) => patch[c])]);
}

export interface StatusTargetRow extends StatusSettings {
  repo_id: number;
  status_token_sealed: string | null;
}

/** Where a session's statuses go: its repository's settings, with the sealed token. */
export async function loadStatusTarget(db: Db, sessionId: number): Promise<StatusTargetRow | undefined> {
  const { rows } = await db.query<StatusTargetRow>(
    `SELECT r.id AS repo_id, r.status_provider, r.status_api_url, r.status_repo, r.status_token_sealed
       FROM sessions s JOIN suites su ON su.id = s.suite_id JOIN repos r ON r.id = su.repo_id
      WHERE s.id = $1`,
    [sessionId],
  );
  return rows[0];
}

export type StatusOutcome = 'delivered' | 'retrying' | 'gave_up' | 'dropped';

export interface NewStatusAttempt {
  sessionId: number;
  repoId: number;
  /** `github-app`: a check run of the GitHub App the repository builds through. */
  provider: StatusProvider | 'github-app';
  commitId: string;
  context: string;
  state: string;
  url: string;
  attempt: number;
  statusCode: number | null;
  outcome: StatusOutcome;
  error: string | null;
  durationMs: number;
}

/** Long enough for a provider's explanation, short enough for a log. */
const MAX_ERROR_CHARS = 2_000;

export async function insertStatusAttempt(db: Db, a: NewStatusAttempt): Promise<number> {
  // A server's answer may hold NUL, which PostgreSQL text cannot.
  const error = a.error === null ? null : storableText(a.error);
  const { rows } = await db.query<{ id: number }>(
    `INSERT INTO commit_status_attempts
       (session_id, repo_id, provider, commit_id, context, state, url, attempt, status_code, outcome, error, duration_ms)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING id`,
    [
      a.sessionId,
      a.repoId,
      a.provider,
      a.commitId,
      a.context,
      a.state,
      a.url,
      a.attempt,
      a.statusCode,
      a.outcome,
      error !== null && error.length > MAX_ERROR_CHARS ? `${error.slice(0, MAX_ERROR_CHARS - 1)}…` : error,
      Math.round(a.durationMs),
    ],
  );
  return rows[0]!.id;
}

export interface StatusAttemptRow {
  id: number;
  session: number;
  provider: string;
  commit_id: string;
  context: string;
  state: string;
  url: string;
  attempt: number;
  status_code: number | null;
  outcome: StatusOutcome;
  error: string | null;
  duration_ms: number;
  created_at: string;
}

export interface StatusAttemptFilter {
  limit: number;
  /** Only rows older than this id (the last row of the previous page). */
  before?: number;
  session?: number;
  outcome?: StatusOutcome;
}

const ROW = `id, session_id AS session, provider, commit_id, context, state, url, attempt, status_code, outcome, error, duration_ms, created_at`;

function view(r: Omit<StatusAttemptRow, 'created_at'> & { id: number | string; session: number | string; created_at: Date }): StatusAttemptRow {
  return { ...r, id: Number(r.id), session: Number(r.session), created_at: r.created_at.toISOString() };
}

/** A repository's attempts, newest first. */
export async function listRepoStatusAttempts(db: Db, repoId: number, page: StatusAttemptFilter): Promise<StatusAttemptRow[]> {
  const { rows } = await db.query(
    `SELECT ${ROW} FROM commit_status_attempts
      WHERE repo_id = $1
        AND ($2::bigint IS NULL OR id < $2)
        AND ($3::bigint IS NULL OR session_id = $3)
        AND ($4::text IS NULL OR outcome = $4)
      ORDER BY id DESC
      LIMIT $5`,
    [repoId, page.before ?? null, page.session ?? null, page.outcome ?? null, page.limit],
  );
  return rows.map(view);
}

/** A session's attempts, in the order they were made (the report page and the session's JSON). */
export async function listSessionStatusAttempts(db: Db, sessionId: number): Promise<StatusAttemptRow[]> {
  const { rows } = await db.query(`SELECT ${ROW} FROM commit_status_attempts WHERE session_id = $1 ORDER BY id LIMIT 100`, [sessionId]);
  return rows.map(view);
}
