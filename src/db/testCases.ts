/** SQL for the JUnit test cases of a session (collected by the collectResults activity). */
import type { Pool } from 'pg';
import type { JUnitCase } from '../core/junit';
import { storableText, storableTextOrNull } from './text';
import { withTransaction, type Db } from './transaction';

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
  // Lanes that wrote a report of the same name each have a row: one line per file.
  const { rows } = await db.query<JUnitFileRow>(
    `SELECT file, sum(cases)::int AS cases, string_agg(note, '; ' ORDER BY lane) AS note
       FROM junit_files WHERE session_id = $1 GROUP BY file ORDER BY file`,
    [sessionId],
  );
  return rows;
}

export interface JUnitFileResult {
  file: string;
  cases: JUnitCase[];
  note: string | null;
}

/**
 * Replaces the JUnit files and test cases one lane of a session stored with `files`, in one transaction (a retried
 * activity replaces what an earlier attempt stored). Text is made storable here; masking
 * secrets is the caller's business.
 */
export async function replaceJUnitResults(pool: Pool, sessionId: number, lane: number, files: readonly JUnitFileResult[]): Promise<void> {
  const orNull = storableTextOrNull;
  await withTransaction(pool, async (client) => {
    await client.query('DELETE FROM test_cases WHERE session_id = $1 AND lane = $2', [sessionId, lane]);
    await client.query('DELETE FROM junit_files WHERE session_id = $1 AND lane = $2', [sessionId, lane]);
    for (const f of files) {
      await client.query(
        `INSERT INTO junit_files (session_id, lane, file, cases, note) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (session_id, lane, file) DO UPDATE SET cases = junit_files.cases + EXCLUDED.cases,
           note = concat_ws('; ', junit_files.note, EXCLUDED.note)`,
        [sessionId, lane, storableText(f.file), f.cases.length, orNull(f.note)],
      );
      for (let at = 0; at < f.cases.length; at += 1000) {
        const chunk = f.cases.slice(at, at + 1000);
        await client.query(
          `INSERT INTO test_cases (session_id, lane, file, classname, name, status, time, message, output)
           SELECT $1::bigint, $9::int, $2::text, * FROM unnest($3::text[], $4::text[], $5::text[], $6::float8[], $7::text[], $8::text[])`,
          [
            sessionId,
            storableText(f.file),
            chunk.map((c) => storableText(c.classname)),
            chunk.map((c) => storableText(c.name)),
            chunk.map((c) => c.status),
            chunk.map((c) => c.time),
            chunk.map((c) => orNull(c.message)),
            chunk.map((c) => orNull(c.output)),
            lane,
          ],
        );
      }
    }
  });
}
