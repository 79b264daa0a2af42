/**
 * SQL for the test cases of a session: those of the reports every run leaves (a batch's, a
 * file's own run: recordRunCases, issue 37) and those of the files a suite's junit_pattern
 * names, collected at a lane's end (replaceJUnitResults).
 */
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
    await client.query('DELETE FROM test_cases WHERE session_id = $1 AND lane = $2 AND run IS NULL', [sessionId, lane]);
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

/** A case as a run's reports give it, its test file and its failure's place found. */
export interface RunCase {
  /** The test file of the run it belongs to; null when the report names none of them. */
  testFile: string | null;
  classname: string;
  name: string;
  status: JUnitCase['status'];
  time: number | null;
  message: string | null;
  output: string | null;
  failureFile: string | null;
  failureLine: number | null;
  /** A failure of a test muted in the suite: it did not fail its file. */
  muted: boolean;
}

/**
 * Stores the cases one run's reports held, in one statement however many there are. The run
 * ran `files`: what earlier runs stored of them goes (a retry, a pinning run, a retried lane
 * replaces it), and a case that had failed there and passes now is flaky.
 */
export async function recordRunCases(pool: Pool, sessionId: number, lane: number, run: string, files: readonly string[], cases: readonly RunCase[]): Promise<void> {
  const orNull = storableTextOrNull;
  await pool.query(
    `WITH gone AS (
       DELETE FROM test_cases WHERE session_id = $1 AND (test_file = ANY($4::text[]) OR (run = $3 AND test_file IS NULL))
       RETURNING test_file, classname, name, status
     )
     INSERT INTO test_cases (session_id, lane, run, file, test_file, classname, name, status, time, message, output, failure_file, failure_line, muted, flaky)
     SELECT $1::bigint, $2::int, $3::text, '', c.test_file, c.classname, c.name, c.status, c.time, c.message, c.output, c.failure_file, c.failure_line, c.muted,
            c.status = 'passed' AND EXISTS (SELECT 1 FROM gone g WHERE g.test_file = c.test_file AND g.classname = c.classname AND g.name = c.name AND g.status IN ('failed', 'error'))
       FROM unnest($5::text[], $6::text[], $7::text[], $8::text[], $9::float8[], $10::text[], $11::text[], $12::text[], $13::int[], $14::bool[])
            AS c(test_file, classname, name, status, time, message, output, failure_file, failure_line, muted)`,
    [
      sessionId,
      lane,
      run,
      files.map(storableText),
      cases.map((c) => (c.testFile === null ? null : storableText(c.testFile))),
      cases.map((c) => storableText(c.classname)),
      cases.map((c) => storableText(c.name)),
      cases.map((c) => c.status),
      cases.map((c) => c.time),
      cases.map((c) => orNull(c.message)),
      cases.map((c) => orNull(c.output)),
      cases.map((c) => (c.failureFile === null ? null : storableText(c.failureFile))),
      cases.map((c) => c.failureLine),
      cases.map((c) => c.muted),
    ],
  );
}

export interface CaseRow {
  id: number;
  test_file: string | null;
  /** The report file it came from (a junit_pattern report's), or '' for a run's. */
  file: string;
  classname: string;
  name: string;
  status: JUnitCase['status'];
  time: number | null;
  message: string | null;
  output: string | null;
  failure_file: string | null;
  failure_line: number | null;
  flaky: boolean;
  muted: boolean;
  worker: number;
}

export interface CaseFilter {
  status?: JUnitCase['status'] | 'failing';
  /** Words each to be found in the name or classname, case-insensitively. */
  q?: string;
  /** Cases of this test file only. */
  testFile?: string;
  limit: number;
  offset: number;
}

/**
 * A page of a session's cases: failing (failed, error) first, then the rest, each in the order
 * they were read; `total` counts all that match.
 */
export async function listCases(db: Db, sessionId: number, f: CaseFilter): Promise<{ total: number; cases: CaseRow[] }> {
  const where = ['session_id = $1'];
  const params: unknown[] = [sessionId];
  if (f.status === 'failing') where.push(`status IN ('failed', 'error')`);
  else if (f.status) where.push(`status = $${params.push(f.status)}`);
  if (f.testFile !== undefined) where.push(`test_file = $${params.push(f.testFile)}`);
  // Each word of `q` somewhere in the name or classname, any case (% and _ taken literally).
  for (const word of (f.q ?? '').split(/\s+/).filter(Boolean).slice(0, 10)) {
    where.push(`(classname || ' ' || name) ILIKE $${params.push(`%${word.replace(/[\\%_]/g, (c) => `\\${c}`)}%`)}`);
  }
  const { rows } = await db.query<CaseRow & { total: number }>(
    `SELECT id::int AS id, test_file, file, classname, name, status, time, message, output, failure_file, failure_line, flaky, muted, lane + 1 AS worker,
            count(*) OVER ()::int AS total
       FROM test_cases WHERE ${where.join(' AND ')}
      ORDER BY status NOT IN ('failed', 'error'), id
      LIMIT $${params.push(f.limit)} OFFSET $${params.push(f.offset)}`,
    params,
  );
  const total = rows[0]?.total ?? (f.offset > 0 ? (await listCases(db, sessionId, { ...f, limit: 1, offset: 0 })).total : 0);
  return { total, cases: rows.map(({ total: _t, ...c }) => c) };
}
