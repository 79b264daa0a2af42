/** SQL of a suite's muted tests (migration 031): run and reported, their failures not failing builds. */
import type { Db } from './transaction';
import { storableText } from './text';

export interface MutedTestRow {
  classname: string;
  name: string;
  muted_by: string;
  muted_at: Date;
}

export async function listMutedTests(db: Db, suiteId: number): Promise<MutedTestRow[]> {
  const { rows } = await db.query<MutedTestRow>('SELECT classname, name, muted_by, muted_at FROM muted_tests WHERE suite_id = $1 ORDER BY muted_at DESC, classname, name', [suiteId]);
  return rows;
}

/** The tests muted in the suite of a session, as its lanes start. */
export async function mutedTestsOfSession(db: Db, sessionId: number): Promise<{ classname: string; name: string }[]> {
  const { rows } = await db.query<{ classname: string; name: string }>(
    'SELECT m.classname, m.name FROM muted_tests m JOIN sessions s ON s.suite_id = m.suite_id WHERE s.id = $1',
    [sessionId],
  );
  return rows;
}

/** Mutes a test (again: who and when are the latest). */
export async function muteTest(db: Db, suiteId: number, test: { classname: string; name: string }, by: string): Promise<MutedTestRow> {
  const { rows } = await db.query<MutedTestRow>(
    `INSERT INTO muted_tests (suite_id, classname, name, muted_by) VALUES ($1, $2, $3, $4)
     ON CONFLICT (suite_id, classname, name) DO UPDATE SET muted_by = EXCLUDED.muted_by, muted_at = now()
     RETURNING classname, name, muted_by, muted_at`,
    [suiteId, storableText(test.classname), storableText(test.name), storableText(by)],
  );
  return rows[0]!;
}

/** False when the test was not muted. */
export async function unmuteTest(db: Db, suiteId: number, test: { classname: string; name: string }): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM muted_tests WHERE suite_id = $1 AND classname = $2 AND name = $3', [suiteId, test.classname, test.name]);
  return (rowCount ?? 0) > 0;
}
