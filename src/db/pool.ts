import { setTimeout as sleep } from 'node:timers/promises';
import { Client, escapeIdentifier, Pool } from 'pg';

// bigserial ids come back from pg as strings; ours stay far below 2^53, so read them as numbers.
import { types } from 'pg';
types.setTypeParser(types.builtins.INT8, (v) => Number(v));

export function createPool(databaseUrl: string, max = 10): Pool {
  // JIT off: Sluice's queries each read a few hundred rows, but over a long history the planner's
  // estimates for them grow past jit_above_cost, and compiling then took 350 ms of a 2 ms query
  // (a suite's insights over a year of builds, issue 39).
  const pool = new Pool({ connectionString: databaseUrl, max, options: '-c jit=off' });
  // An idle client whose connection ends (PostgreSQL restarted, the backend terminated, the
  // database dropped) is discarded by the pool, and the next query gets a fresh one. Without a
  // listener, pg would raise that 'error' as an unhandled event and bring the process down.
  pool.on('error', (err) => process.emitWarning(`an idle PostgreSQL connection was lost and will be replaced: ${err.message}`));
  return pool;
}

/** `SELECT 1`: resolves when PostgreSQL answers, rejects when it does not. */
export async function ping(pool: Pool): Promise<void> {
  await pool.query('SELECT 1');
}

/** Creates the database DATABASE_URL names when the server has no such database yet. */
export async function ensureDatabase(databaseUrl: string): Promise<void> {
  const url = new URL(databaseUrl);
  const shown = `${url.hostname}:${url.port || 5432}`; // never the password
  const probe = new Client({ connectionString: databaseUrl });
  try {
    await probe.connect();
    return; // it exists
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code !== '3D000') {
      // 3D000 = invalid_catalog_name (no such database); anything else we cannot fix here.
      throw new Error(`cannot reach PostgreSQL at ${shown}: ${(err as Error).message}. Is it running? (DATABASE_URL)`, {
        cause: err,
      });
    }
  } finally {
    await probe.end().catch(() => undefined);
  }
  const name = decodeURIComponent(url.pathname.slice(1));
  url.pathname = '/postgres';
  const admin = new Client({ connectionString: url.toString() });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${escapeIdentifier(name)}`);
    console.log(`Created PostgreSQL database ${name} on ${shown}.`);
  } catch (err) {
    if ((err as { code?: string }).code !== '42P04') throw err; // 42P04: created meanwhile
  } finally {
    await admin.end();
  }
}

export type { Pool, PoolClient } from 'pg';

/**
 * Runs `step` (which needs PostgreSQL: a migration, a first read) until it succeeds, every 2 s,
 * or until `signal` says stop; `onError` hears of the first failure and of every 15th after it
 * (a role that starts while the database is away waits for it, issue 26).
 */
export async function untilDatabaseAnswers(step: () => Promise<void>, signal: AbortSignal, onError: (err: unknown) => void): Promise<void> {
  for (let attempt = 0; !signal.aborted; attempt++) {
    try {
      return await step();
    } catch (err) {
      if (attempt % 15 === 0) onError(err);
      // Stopping (the role shuts down) ends the wait at once, not 2 s later.
      await sleep(2_000, undefined, { signal }).catch(() => undefined);
    }
  }
}
