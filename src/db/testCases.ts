/** SQL for the JUnit test cases of a session (collected by the collectResults activity). */
import type { Db } from './transaction';

export interface CaseCounts {
  total: number;
  passed: number;
  failed: number;
  error: number;
  skipped: number;
}

export interface FailingCaseRow {
  file: string;
  classname: string;
  name: string;
  status: 'failed' | 'error';
  time: number | null;
  message: string | null;
  output?: string | null;
}

export interface JUnitFileRow {
  file: string;
  cases: number;
  note: string | null;
}

/** How many failing cases a session view lists; the counts cover them all. */
export const MAX_LISTED_CASES = 500;

export async function countCases(db: Db, sessionId: number): Promise<CaseCounts> {
  const { rows } = await db.query<CaseCounts>(
    `SELECT count(*)::int AS total,
            count(*) FILTER (WHERE status = 'passed')::int AS passed,
            count(*) FILTER (WHERE status = 'failed')::int AS failed,
            count(*) FILTER (WHERE status = 'error')::int AS error,
            count(*) FILTER (WHERE status = 'skipped')::int AS skipped
       FROM test_cases WHERE session_id = $1`,
    [sessionId],
  );
  return rows[0]!;
}

/** Failed and erroring cases in the order they were read (file, then position in it). */
export async function listFailingCases(db: Db, sessionId: number, withOutput: boolean): Promise<FailingCaseRow[]> {
  const { rows } = await db.query<FailingCaseRow>(
    `SELECT file, classname, name, status, time, message${withOutput ? ', output' : ''}
       FROM test_cases WHERE session_id = $1 AND status IN ('failed', 'error') ORDER BY id LIMIT $2`,
    [sessionId, MAX_LISTED_CASES],
  );
  return rows;
}

export async function listJUnitFiles(db: Db, sessionId: number): Promise<JUnitFileRow[]> {
  const { rows } = await db.query<JUnitFileRow>('SELECT file, cases, note FROM junit_files WHERE session_id = $1 ORDER BY file', [sessionId]);
  return rows;
}
