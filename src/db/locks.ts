/**
 * Advisory locks that serialize work among the Sluice processes sharing a database, where
 * nothing else does (migrations take their own, in migrate.ts).
 */
import { Client } from 'pg';

/** Registering search attributes on Temporal (src/temporal/prepare.ts). */
export const SEARCH_ATTRIBUTES_LOCK = 0x51_1c_e1;

/**
 * Runs `fn` while this process holds the advisory lock `key`, on a connection of its own: a
 * process asking for the same lock meanwhile waits (up to `timeoutMs`, then this rejects).
 * Ending the session releases it, also when the process dies.
 */
export async function withAdvisoryLock<T>(databaseUrl: string, key: number, timeoutMs: number, fn: () => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: databaseUrl, connectionTimeoutMillis: timeoutMs });
  // A connection lost while we hold the lock fails the next query; no unhandled 'error' event.
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query("SELECT set_config('lock_timeout', $1, false)", [`${Math.ceil(timeoutMs)}ms`]);
    await client.query('SELECT pg_advisory_lock($1)', [key]);
  } catch (err) {
    await client.end().catch(() => undefined);
    throw new Error(`PostgreSQL (DATABASE_URL): ${(err as Error).message}`, { cause: err });
  }
  try {
    return await fn();
  } finally {
    await client.end().catch(() => undefined);
  }
}
