/**
 * What every store module shares: something to run SQL on (the pool, or one client inside a
 * transaction), a transaction helper, and recognising a unique-constraint or foreign-key violation.
 */
import type { Pool, PoolClient } from 'pg';

export type Db = Pool | PoolClient;

/** Runs `fn` inside BEGIN/COMMIT on one client; any throw rolls back and is rethrown. */
export async function withTransaction<T>(pool: Pool, fn: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken = false;
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    // A failed ROLLBACK (connection gone) must not hide the error that got us here, and
    // that client must not go back to the pool.
    await client.query('ROLLBACK').catch(() => {
      broken = true;
    });
    throw err;
  } finally {
    client.release(broken);
  }
}

/** The name of the unique constraint `err` violated, if it is a unique violation. */
export function uniqueViolation(err: unknown): string | undefined {
  const e = err as { code?: string; constraint?: string } | null;
  return e?.code === '23505' ? (e.constraint ?? '') : undefined;
}

/** Whether `err` is a foreign-key violation: a row the statement refers to is gone (deleted meanwhile). */
export function foreignKeyViolation(err: unknown): boolean {
  return (err as { code?: string } | null)?.code === '23503';
}
