import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { createPool, type Pool } from '../../src/db/pool';
import { migrate } from '../../src/db/migrate';

/** Server that tests create their throwaway databases on; the local trust-auth PostgreSQL. */
export const TEST_PG_SERVER = process.env.SLUICE_TEST_PG ?? 'postgres://postgres@127.0.0.1:5432';

export interface TestDatabase {
  url: string;
  pool: Pool;
  drop(): Promise<void>;
}

/** A fresh, migrated database of its own for one test file (or one whole run). */
export async function createTestDatabase(prefix = 'sluice_test'): Promise<TestDatabase> {
  const name = `${prefix}_${randomBytes(5).toString('hex')}`;
  const admin = new Client({ connectionString: `${TEST_PG_SERVER}/postgres` });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = `${TEST_PG_SERVER}/${name}`;
  const pool = createPool(url);
  await migrate(pool);
  return {
    url,
    pool,
    async drop() {
      await pool.end();
      await dropDatabase(name);
    },
  };
}

export async function dropDatabase(name: string): Promise<void> {
  const admin = new Client({ connectionString: `${TEST_PG_SERVER}/postgres` });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.end();
}
