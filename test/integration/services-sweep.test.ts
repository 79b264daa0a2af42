/**
 * What every service shares (steps/services/index.ts), against the local PostgreSQL, MariaDB and
 * Redis servers and a Sluice test database: the sweep drops what an ended session's workers left
 * (a runner that crashed) and keeps a running session's; a service without an admin URL, or
 * whose server does not answer, is a ServiceUnavailableError naming it, and no message carries
 * a password.
 */
import { randomBytes } from 'node:crypto';
import Redis from 'ioredis';
import { createConnection } from 'mysql2/promise';
import { Client } from 'pg';
import {
  provisionServices,
  ServiceUnavailableError,
  sweepServices,
  type ServiceName,
  type WorkerServices,
} from '../../src/steps/services';
import { endedSessions } from '../../src/db/sessions';
import { createTestDatabase, TEST_PG_SERVER, type TestDatabase } from '../support/db';
import { insertPostSession } from '../support/postSession';

const admins = { postgresql: `${TEST_PG_SERVER}/postgres`, mysql: 'mysql://root@127.0.0.1:3306', redis: 'redis://127.0.0.1:6379' };
const ALL: ServiceName[] = ['postgresql', 'mysql', 'redis'];
const installation = randomBytes(4).toString('hex');
let db: TestDatabase;
const made: WorkerServices[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
});

afterAll(async () => {
  for (const m of made) await m.release();
  await db.drop();
});

/** What each server holds of `name`. */
async function holdings(name: string): Promise<string[]> {
  const found: string[] = [];
  const pg = new Client({ connectionString: admins.postgresql });
  await pg.connect();
  try {
    if ((await pg.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount) found.push('pg database');
    if ((await pg.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [name])).rowCount) found.push('pg role');
  } finally {
    await pg.end();
  }
  const my = await createConnection(admins.mysql);
  try {
    const [dbs] = await my.query('SELECT 1 FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?', [name]);
    if ((dbs as unknown[]).length) found.push('mysql database');
    const [users] = await my.query('SELECT 1 FROM mysql.user WHERE User = ?', [name]);
    if ((users as unknown[]).length) found.push('mysql user');
  } finally {
    await my.end();
  }
  const redis = new Redis(admins.redis);
  try {
    if (((await redis.call('ACL', 'USERS')) as string[]).includes(name)) found.push('redis user');
    const claims = await redis.mget(Array.from({ length: 15 }, (_, i) => `sluice:service-db:${i + 1}`));
    if (claims.some((c) => c?.startsWith(`${name} `))) found.push('redis claim');
  } finally {
    await redis.quit();
  }
  return found;
}

const EVERYTHING = ['pg database', 'pg role', 'mysql database', 'mysql user', 'redis user', 'redis claim'];

it('drops what an ended session’s workers left on every server, and keeps a running session’s', async () => {
  const running = await insertPostSession(db.pool, randomBytes(32));
  const ended = await insertPostSession(db.pool, randomBytes(32));
  await db.pool.query(`UPDATE sessions SET status = 'passed' WHERE id = $1`, [ended.sessionId]);
  const owner = (sessionId: number, worker: number) => ({ installation, sessionId, worker });

  const live = await Promise.all([1, 2].map((w) => provisionServices(admins, ALL, owner(running.sessionId, w))));
  // The ended session's runner "crashed": nothing released what it made.
  const crashed = await Promise.all([1, 2].map((w) => provisionServices(admins, ALL, owner(ended.sessionId, w))));
  made.push(...live, ...crashed);
  const nameOf = (sessionId: number, worker: number) => `sluice_${installation}_${sessionId}_${worker}`;
  for (const w of [1, 2]) {
    expect(await holdings(nameOf(running.sessionId, w))).toEqual(EVERYTHING);
    expect(await holdings(nameOf(ended.sessionId, w))).toEqual(EVERYTHING);
  }

  const asked: number[][] = [];
  const dropped = await sweepServices(admins, installation, async (ids) => {
    asked.push([...ids].sort());
    return endedSessions(db.pool, ids);
  });
  expect(dropped).toBe(6); // two workers, three services
  for (const ids of asked) expect(ids).toEqual([running.sessionId, ended.sessionId].sort());
  for (const w of [1, 2]) {
    expect(await holdings(nameOf(ended.sessionId, w))).toEqual([]);
    expect(await holdings(nameOf(running.sessionId, w))).toEqual(EVERYTHING);
  }
  // The running session's workers still work.
  const pg = new Client({ connectionString: live[0]!.env.DATABASE_URL });
  await pg.connect();
  await pg.end();

  // Nothing left of the ended one: a second sweep finds nothing to do, and its release does not mind.
  expect(await sweepServices(admins, installation, (ids) => endedSessions(db.pool, ids))).toBe(0);
  for (const c of crashed) await expect(c.release()).resolves.toBeUndefined();

  // Another installation's sweep never touches this one's.
  expect(await sweepServices(admins, 'ffffffff', async (ids) => ids)).toBe(0);
  expect(await holdings(nameOf(running.sessionId, 1))).toEqual(EVERYTHING);

  // The session ends; the next sweep takes its leftovers too.
  await db.pool.query(`UPDATE sessions SET status = 'failed' WHERE id = $1`, [running.sessionId]);
  expect(await sweepServices(admins, installation, (ids) => endedSessions(db.pool, ids))).toBe(6);
  for (const w of [1, 2]) expect(await holdings(nameOf(running.sessionId, w))).toEqual([]);
});

it('sweeps the servers that answer when one does not, and says which did not, without its password', async () => {
  const sessionId = 900_000 + Math.floor(Math.random() * 1e5);
  const w = await provisionServices(admins, ['postgresql'], { installation, sessionId, worker: 1 });
  made.push(w);
  const sweep = sweepServices({ ...admins, redis: 'redis://:Sw33pSecret@127.0.0.1:1' }, installation, async (ids) => ids);
  await expect(sweep).rejects.toThrow(/redis service at 127\.0\.0\.1:1/);
  await expect(sweep).rejects.not.toThrow(/Sw33pSecret/);
  expect(await holdings(`sluice_${installation}_${sessionId}_1`)).toEqual([]);
});

it('refuses a service the runner has no admin URL for, naming it, before making anything', async () => {
  const owner = { installation, sessionId: 77, worker: 1 };
  for (const service of ALL) {
    const only = { ...admins, [service]: undefined };
    const attempt = provisionServices(only, ALL, owner);
    await expect(attempt).rejects.toBeInstanceOf(ServiceUnavailableError);
    await expect(attempt).rejects.toThrow(`this runner has no ${service} service (SLUICE_SERVICE_${service.toUpperCase()}_URL)`);
  }
  expect(await holdings(`sluice_${installation}_77_1`)).toEqual([]);
  // Asking for nothing needs nothing.
  expect(await provisionServices({}, [], owner)).toMatchObject({ env: {}, secrets: [] });
});

it('names a service whose server does not answer, drops what the others made, and shows no password', async () => {
  const secret = `Adm1n-${randomBytes(6).toString('hex')}`;
  const dead: Record<ServiceName, string> = {
    postgresql: `postgres://postgres:${secret}@127.0.0.1:1/postgres`,
    mysql: `mysql://root:${secret}@127.0.0.1:1`,
    redis: `redis://:${secret}@127.0.0.1:1`,
  };
  const owner = { installation, sessionId: 78, worker: 1 };
  for (const service of ALL) {
    const attempt = provisionServices({ ...admins, [service]: dead[service] }, ALL, owner);
    await expect(attempt).rejects.toBeInstanceOf(ServiceUnavailableError);
    const err = (await attempt.catch((e: unknown) => e)) as Error;
    expect(err.message).toMatch(new RegExp(`^this runner cannot reach its ${service} service at 127\\.0\\.0\\.1:1: `));
    expect(`${err.message} ${err.stack}`).not.toContain(secret);
    // The services that were made for it went again.
    expect(await holdings(`sluice_${installation}_78_1`)).toEqual([]);
  }
});

it('keeps wrong admin credentials out of the message', async () => {
  const secret = `Wr0ng-${randomBytes(6).toString('hex')}`;
  const attempt = provisionServices({ mysql: `mysql://root:${secret}@127.0.0.1:3306` }, ['mysql'], { installation, sessionId: 79, worker: 1 });
  const err = (await attempt.catch((e: unknown) => e)) as Error;
  expect(err).toBeInstanceOf(Error);
  expect(err.message).toMatch(/mysql/);
  expect(`${err.message} ${err.stack}`).not.toContain(secret);
});
