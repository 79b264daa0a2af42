import type { Pool } from 'pg';

/** `/1/reports/<session>?token=<token>`: the report's path as the payloads' `url` carries it. */
export async function reportPath(pool: Pool, session: number): Promise<string> {
  const { rows } = await pool.query<{ report_token: string }>('SELECT report_token FROM sessions WHERE id = $1', [session]);
  if (!rows[0]) throw new Error(`no session ${session}`);
  return `/1/reports/${session}?token=${rows[0].report_token}`;
}
