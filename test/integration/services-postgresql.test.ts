/**
 * The `postgresql` service (steps/services) against the local PostgreSQL server: two workers of
 * one session at once each get a database and a plain role of their own, can use theirs, cannot
 * connect to the other's, and lose both on release; a lane run again starts from a fresh database.
 */
import { randomBytes } from 'node:crypto';
import { Client, type ClientConfig } from 'pg';
import { provisionServices, type WorkerServices } from '../../src/steps/services';
import { TEST_PG_SERVER } from '../support/db';

const admins = { postgresql: `${TEST_PG_SERVER}/postgres` };
const installation = randomBytes(4).toString('hex');
const sessionId = 1_000 + Math.floor(Math.random() * 1e6);
const made: WorkerServices[] = [];

afterAll(async () => {
  for (const m of made) await m.release();
});

async function provision(worker: number): Promise<WorkerServices> {
  const s = await provisionServices(admins, ['postgresql'], { installation, sessionId, worker });
  made.push(s);
  return s;
}

/** Connects, runs `sql`, disconnects. */
async function asWorker<T = Record<string, unknown>>(config: ClientConfig, sql: string): Promise<T[]> {
  const client = new Client({ ...config, connectionTimeoutMillis: 10_000 });
  await client.connect();
  try {
    return (await client.query(sql)).rows as T[];
  } finally {
    await client.end();
  }
}

async function adminRows(sql: string, values: unknown[]): Promise<unknown[]> {
  const client = new Client({ connectionString: admins.postgresql });
  await client.connect();
  try {
    return (await client.query(sql, values)).rows;
  } finally {
    await client.end();
  }
}

const exists = async (name: string) => ({
  database: (await adminRows('SELECT 1 FROM pg_database WHERE datname = $1', [name])).length === 1,
  role: (await adminRows('SELECT 1 FROM pg_roles WHERE rolname = $1', [name])).length === 1,
});

it('gives two workers at once a database and a plain role each, and neither reaches the other', async () => {
  const [one, two] = await Promise.all([provision(1), provision(2)]);
  expect(Object.keys(one.env).sort()).toEqual(['DATABASE_URL', 'PGDATABASE', 'PGHOST', 'PGPASSWORD', 'PGPORT', 'PGUSER']);
  expect(one.env.PGDATABASE).toBe(`sluice_${installation}_${sessionId}_1`);
  expect(two.env.PGDATABASE).toBe(`sluice_${installation}_${sessionId}_2`);
  expect(one.env.PGUSER).toBe(one.env.PGDATABASE);
  // Random passwords, one a worker, and they are the secrets to mask.
  expect(one.env.PGPASSWORD).toMatch(/^[0-9a-f]{48}$/);
  expect(one.env.PGPASSWORD).not.toBe(two.env.PGPASSWORD);
  expect(one.secrets).toEqual([one.env.PGPASSWORD]);

  for (const w of [one, two]) {
    // By DATABASE_URL, and by the PG* variables alone.
    const [me] = await asWorker<Record<string, unknown>>(
      { connectionString: w.env.DATABASE_URL },
      `SELECT current_database() AS db, current_user AS "user", r.rolsuper, r.rolcreatedb, r.rolcreaterole, r.rolreplication, r.rolbypassrls,
              pg_get_userbyid(d.datdba) AS owner
         FROM pg_roles r, pg_database d WHERE r.rolname = current_user AND d.datname = current_database()`,
    );
    expect(me).toEqual({
      db: w.env.PGDATABASE,
      user: w.env.PGUSER,
      rolsuper: false,
      rolcreatedb: false,
      rolcreaterole: false,
      rolreplication: false,
      rolbypassrls: false,
      owner: w.env.PGUSER,
    });
    const env = w.env;
    const byVars = { host: env.PGHOST, port: Number(env.PGPORT), user: env.PGUSER, password: env.PGPASSWORD, database: env.PGDATABASE };
    await asWorker(byVars, 'CREATE TABLE t (id int PRIMARY KEY); INSERT INTO t VALUES (1)');
    expect(await asWorker(byVars, 'SELECT id FROM t')).toEqual([{ id: 1 }]);
  }

  // Worker 1's role, worker 2's database (and the other way round): refused.
  for (const [w, other] of [
    [one, two],
    [two, one],
  ] as const) {
    const theirs = { host: w.env.PGHOST, port: Number(w.env.PGPORT), user: w.env.PGUSER, password: w.env.PGPASSWORD, database: other.env.PGDATABASE };
    await expect(asWorker(theirs, 'SELECT 1')).rejects.toMatchObject({
      code: '42501', // insufficient_privilege: no CONNECT on that database
    });
  }
  // Nor may the role make databases or roles of its own.
  await expect(asWorker({ connectionString: one.env.DATABASE_URL }, 'CREATE DATABASE nope')).rejects.toMatchObject({ code: '42501' });
  await expect(asWorker({ connectionString: one.env.DATABASE_URL }, 'CREATE ROLE nope')).rejects.toMatchObject({ code: '42501' });
});

it('drops the database and the role on release, even while the worker is still connected, and again without complaint', async () => {
  const w = await provision(3);
  const name = w.env.PGDATABASE!;
  expect(await exists(name)).toEqual({ database: true, role: true });
  const lingering = new Client({ connectionString: w.env.DATABASE_URL });
  lingering.on('error', () => undefined); // it is terminated
  await lingering.connect();
  await w.release();
  await lingering.end().catch(() => undefined);
  expect(await exists(name)).toEqual({ database: false, role: false });
  await expect(w.release()).resolves.toBeUndefined();
});

it('makes a lane run again start afresh: its first run’s database and role are dropped and made anew', async () => {
  const first = await provisionServices(admins, ['postgresql'], { installation, sessionId, worker: 4 });
  await asWorker({ connectionString: first.env.DATABASE_URL }, 'CREATE TABLE left_behind (id int)');
  // The first run's runner died without releasing; the retried lane provisions the same worker.
  const again = await provision(4);
  expect(again.env.PGDATABASE).toBe(first.env.PGDATABASE);
  expect(again.env.PGPASSWORD).not.toBe(first.env.PGPASSWORD);
  expect(await asWorker({ connectionString: again.env.DATABASE_URL }, "SELECT to_regclass('left_behind') AS t")).toEqual([{ t: null }]);
});
