/**
 * The `mysql` service (steps/services) against the local MariaDB server: two workers of one
 * session at once each get a database and a user with privileges on it alone; neither reaches
 * the other's; release drops both, ending the worker's connections; a lane run again starts
 * from a fresh database.
 */
import { randomBytes } from 'node:crypto';
import { createConnection, type ConnectionOptions } from 'mysql2/promise';
import { provisionServices, type WorkerServices } from '../../src/steps/services';

const admins = { mysql: 'mysql://root@127.0.0.1:3306' };
const installation = randomBytes(4).toString('hex');
const sessionId = 1_000 + Math.floor(Math.random() * 1e6);
const made: WorkerServices[] = [];

afterAll(async () => {
  for (const m of made) await m.release();
});

async function provision(worker: number): Promise<WorkerServices> {
  const s = await provisionServices(admins, ['mysql'], { installation, sessionId, worker });
  made.push(s);
  return s;
}

const fromEnv = (env: Record<string, string>, database = env.MYSQL_DATABASE): ConnectionOptions => ({
  host: env.MYSQL_HOST,
  port: Number(env.MYSQL_TCP_PORT),
  user: env.MYSQL_USER,
  password: env.MYSQL_PWD,
  database,
  multipleStatements: true,
});

async function run<T = Record<string, unknown>>(options: ConnectionOptions | string, sql: string): Promise<T[]> {
  const conn = typeof options === 'string' ? await createConnection(options) : await createConnection(options);
  try {
    const [rows] = await conn.query(sql);
    return (Array.isArray(rows) ? rows : []) as T[];
  } finally {
    await conn.end();
  }
}

const exists = async (name: string) => ({
  database: (await run(admins.mysql, `SELECT 1 FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = '${name}'`)).length === 1,
  user: (await run(admins.mysql, `SELECT 1 FROM mysql.user WHERE User = '${name}'`)).length === 1,
});

it('gives two workers at once a database and a user each, with privileges on their own database only', async () => {
  const [one, two] = await Promise.all([provision(1), provision(2)]);
  expect(Object.keys(one.env).sort()).toEqual(['MYSQL_DATABASE', 'MYSQL_HOST', 'MYSQL_PWD', 'MYSQL_TCP_PORT', 'MYSQL_URL', 'MYSQL_USER']);
  expect(one.env.MYSQL_DATABASE).toBe(`sluice_${installation}_${sessionId}_1`);
  expect(one.env.MYSQL_USER).toBe(one.env.MYSQL_DATABASE);
  expect(one.env.MYSQL_USER!.length).toBeLessThanOrEqual(32);
  expect(one.env.MYSQL_PWD).toMatch(/^[0-9a-f]{48}$/);
  expect(one.env.MYSQL_PWD).not.toBe(two.env.MYSQL_PWD);
  expect(one.secrets).toEqual([one.env.MYSQL_PWD]);

  for (const w of [one, two]) {
    // By MYSQL_URL, and by the MYSQL_* variables.
    expect(await run(w.env.MYSQL_URL!, 'SELECT DATABASE() AS db, CURRENT_USER() AS me')).toEqual([
      { db: w.env.MYSQL_DATABASE, me: `${w.env.MYSQL_USER}@%` },
    ]);
    await run(fromEnv(w.env), 'CREATE TABLE t (id INT PRIMARY KEY); INSERT INTO t VALUES (1)');
    expect(await run(fromEnv(w.env), 'SELECT id FROM t')).toEqual([{ id: 1 }]);
    const grants = (await run<Record<string, string>>(fromEnv(w.env), 'SHOW GRANTS')).map((r) => String(Object.values(r)[0]));
    expect(grants.some((g) => /GRANT ALL PRIVILEGES ON `sluice\\_/.test(g))).toBe(true);
    expect(grants.some((g) => /ON \*\.\*/.test(g) && !/^GRANT USAGE ON \*\.\*/.test(g))).toBe(false); // nothing server-wide
  }
  // Each worker's user, the other's database: refused, at connect and by name.
  await expect(run(fromEnv(one.env, two.env.MYSQL_DATABASE), 'SELECT 1')).rejects.toMatchObject({ code: 'ER_DBACCESS_DENIED_ERROR' });
  await expect(run(fromEnv(two.env, one.env.MYSQL_DATABASE), 'SELECT 1')).rejects.toMatchObject({ code: 'ER_DBACCESS_DENIED_ERROR' });
  await expect(run(fromEnv(one.env), `SELECT * FROM \`${two.env.MYSQL_DATABASE}\`.t`)).rejects.toMatchObject({ code: 'ER_TABLEACCESS_DENIED_ERROR' });
  await expect(run(fromEnv(one.env), 'CREATE DATABASE nope')).rejects.toMatchObject({ code: 'ER_DBACCESS_DENIED_ERROR' });
  await expect(run(fromEnv(one.env), 'SELECT * FROM mysql.user')).rejects.toMatchObject({ code: 'ER_TABLEACCESS_DENIED_ERROR' });
});

it('drops the database and the user on release, ending the worker’s connections, and again without complaint', async () => {
  const w = await provision(3);
  const name = w.env.MYSQL_DATABASE!;
  expect(await exists(name)).toEqual({ database: true, user: true });
  const lingering = await createConnection(fromEnv(w.env));
  lingering.on('error', () => undefined); // it is killed
  await lingering.query('CREATE TABLE held (id INT)');
  await w.release();
  expect(await exists(name)).toEqual({ database: false, user: false });
  await expect(lingering.query('SELECT 1')).rejects.toThrow();
  lingering.destroy();
  await expect(w.release()).resolves.toBeUndefined();
});

it('makes a lane run again start afresh: its first run’s database and user are dropped and made anew', async () => {
  const first = await provisionServices(admins, ['mysql'], { installation, sessionId, worker: 4 });
  await run(fromEnv(first.env), 'CREATE TABLE left_behind (id INT)');
  const again = await provision(4);
  expect(again.env.MYSQL_DATABASE).toBe(first.env.MYSQL_DATABASE);
  expect(again.env.MYSQL_PWD).not.toBe(first.env.MYSQL_PWD);
  await expect(run(fromEnv(first.env), 'SELECT 1')).rejects.toMatchObject({ code: 'ER_ACCESS_DENIED_ERROR' }); // the old password is gone
  expect(await run(fromEnv(again.env), 'SHOW TABLES')).toEqual([]);
});
