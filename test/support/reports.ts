import type { Pool } from 'pg';
import { reportUrl } from '../../src/core/reportUrl';
import { reportTokenOf } from '../../src/db/sessions';

/** `/1/reports/<session>?token=<token>`: the report's path as the payloads' `url` carries it. */
export async function reportPath(pool: Pool, session: number): Promise<string> {
  const token = await reportTokenOf(pool, session);
  if (token === undefined) throw new Error(`no session ${session}`);
  return reportUrl('', session, token);
}
