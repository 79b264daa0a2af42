/**
 * Whether what an installation stands on answers: PostgreSQL here; the api process adds
 * Temporal (api/main.ts). `GET /healthz` reports it.
 */
import type { Pool } from 'pg';
import { ping } from '../db/pool';

export interface HealthReport {
  ok: boolean;
  /** What did not answer, e.g. `postgresql`, `temporal`. */
  missing: string[];
}

export async function postgresHealth(pool: Pool): Promise<HealthReport> {
  const ok = await pingPostgres(pool);
  return ok ? { ok: true, missing: [] } : { ok: false, missing: ['postgresql'] };
}

/** `SELECT 1`, given up after `timeoutMs` so a hung database makes the check fail, not hang. */
export async function pingPostgres(pool: Pool, timeoutMs = 2000): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), timeoutMs);
  });
  const answered = ping(pool).then(
    () => true,
    () => false,
  );
  try {
    return await Promise.race([answered, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
