/**
 * What the API decides triggers from (api/triggerKnowledge.ts, issue 24): from memory while it
 * is current, with no read of PostgreSQL per trigger, and never behind a change: one made
 * through the same API is seen by the very next trigger, one made by another process once its
 * notification arrives, and while the LISTEN connection is down every trigger reads PostgreSQL.
 * A real PostgreSQL; the statements the knowledge sends are counted on its own pool.
 */
import Fastify from 'fastify';
import type { Pool } from 'pg';
import { keyHash } from '../../src/crypto/sealed';
import { holdWhileWriting, triggerKnowledge, type TriggerKnowledge } from '../../src/api/triggerKnowledge';
import { seedRepo, startApiHarness, type ApiHarness } from '../support/apiApp';
import { eventually } from '../support/wait';

let h: ApiHarness;

beforeAll(async () => {
  h = await startApiHarness();
});

afterAll(async () => {
  await h?.close();
});

/** A pool that counts the statements sent through it. */
function counting(pool: Pool): { pool: Pool; sent: () => number } {
  let n = 0;
  const counted = new Proxy(pool, {
    get(target, prop, receiver) {
      if (prop !== 'query') return Reflect.get(target, prop, receiver) as unknown;
      return (...args: unknown[]) => {
        n += 1;
        return (target.query as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { pool: counted, sent: () => n };
}

const trigger = (key: string, branch: string) => h.request({ method: 'POST', url: `/1/builds/${key}`, payload: { branch } });

describe('the knowledge of a running API', () => {
  let k: TriggerKnowledge;
  let sent: () => number;

  beforeAll(() => {
    const c = counting(h.db.pool);
    sent = c.sent;
    k = triggerKnowledge(c.pool, { databaseUrl: h.db.url });
  });
  afterAll(() => k.close());

  it('decides from memory once it is current: a trigger sends no statement', async () => {
    const seeded = await seedRepo(h, { branches: ['master'] });
    const hash = keyHash(seeded.repo.key);
    await eventually('the knowledge to be current and to know the repository', async () => k.current && k.remembered(hash) !== undefined);
    const before = sent();
    const target = await k.target(hash);
    expect(target?.suites.map((s) => s.branch)).toEqual(['master']);
    expect(await k.branches(seeded.repo.id, ['master', 'other'])).toEqual(new Map());
    expect(await k.target(keyHash('no-such-key'))).toBeUndefined();
    expect(sent()).toBe(before);
  });

  it("sees another process's change once its notification arrives", async () => {
    const seeded = await seedRepo(h, { branches: ['master'] });
    await eventually('the knowledge to be current', async () => k.current && k.remembered(keyHash(seeded.repo.key)) !== undefined);
    // Written straight to PostgreSQL, as a worker or another API would.
    await h.db.pool.query(`INSERT INTO branches (repo_id, name, enabled) VALUES ($1, 'master', false)`, [seeded.repo.id]);
    await eventually('the switched-off branch to be seen', async () => (await k.branches(seeded.repo.id, ['master'])).get('master')?.enabled === false);
    await eventually('the knowledge to be current again', async () => k.current);
  });

  it('reads PostgreSQL while a change of its own process is under way, and sees it the moment it is done', async () => {
    const seeded = await seedRepo(h, { branches: ['master'] });
    const hash = keyHash(seeded.repo.key);
    await eventually('the knowledge to be current', async () => k.current && k.remembered(hash) !== undefined);
    const done = k.changing();
    expect(k.current).toBe(false);
    const before = sent();
    await k.target(hash);
    expect(sent()).toBeGreaterThan(before);
    await h.db.pool.query(`INSERT INTO suites (repo_id, branch, test_pattern) VALUES ($1, 'dev', 'tests/*.sh')`, [seeded.repo.id]);
    done();
    // No wait: not current until it has read again, so this reads PostgreSQL.
    expect((await k.target(hash))?.suites.map((s) => s.branch).sort()).toEqual(['dev', 'master']);
    await eventually('the knowledge to be current again', async () => k.current);
    expect((await k.target(hash))?.suites).toHaveLength(2);
  });

  it('a request that may write holds memory back from the moment it arrives until it has answered; a read does not', async () => {
    await eventually('the knowledge to be current', async () => k.current);
    const app = Fastify();
    holdWhileWriting(app, k);
    const seenInside: Record<string, boolean> = {};
    for (const method of ['GET', 'POST', 'PUT', 'DELETE'] as const) {
      app.route({ method, url: '/thing', handler: async () => void (seenInside[method] = k.current) });
    }
    // Over real HTTP: inject needs an ESM-only module jest cannot load (support/apiApp.ts).
    const url = await app.listen({ host: '127.0.0.1', port: 0 });
    try {
      for (const method of ['GET', 'POST', 'PUT', 'DELETE'] as const) {
        expect((await fetch(`${url}/thing`, { method })).status).toBe(200);
        await eventually(`the knowledge to be current after ${method}`, async () => k.current);
      }
    } finally {
      await app.close();
    }
    expect(seenInside).toEqual({ GET: true, POST: false, PUT: false, DELETE: false });
  });

  it('reads PostgreSQL per trigger while its LISTEN connection is down, and is current again once it listens', async () => {
    await eventually('the knowledge to be current', async () => k.current);
    const { rows } = await h.db.pool.query<{ pid: number }>(
      `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query ILIKE 'LISTEN sluice_trigger_knowledge%'`,
    );
    expect(rows.length).toBeGreaterThan(0);
    await h.db.pool.query('SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid', [rows.map((r) => r.pid)]);
    await eventually('the knowledge to stop counting as current', async () => !k.current);
    await eventually('the knowledge to listen again and be current', async () => k.current, 15_000);
  });
});

it('a branch switched off through the API is off for the very next trigger', async () => {
  const seeded = await seedRepo(h, { branches: ['master', 'dev'] });
  await eventually('the API to decide from memory', async () => h.knowledge.current && h.knowledge.remembered(keyHash(seeded.repo.key)) !== undefined);
  for (const branch of ['master', 'dev']) {
    expect((await h.admin('PUT', `/api/v1/repos/${seeded.repo.id}/branches/${branch}`, { enabled: false })).statusCode).toBe(200);
    expect(await trigger(seeded.repo.key, branch)).toMatchObject({ statusCode: 422, body: 'DROPPED' });
  }
});
