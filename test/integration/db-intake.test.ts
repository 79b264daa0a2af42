/**
 * Writing accepted triggers' records (db/intake.ts), as a suite does with a batch of a burst:
 * one statement for all their sessions, whose ids follow the order they were accepted in, and
 * the same answer however often the batch is written again (a retried activity).
 */
import type { Intake } from '../../src/core/intake';
import { recordIntakes, writeIntakes } from '../../src/db/intake';
import { seedRepo, startApiHarness, type ApiHarness } from '../support/apiApp';

let h: ApiHarness;

beforeAll(async () => {
  h = await startApiHarness({ records: 'held' });
});

afterAll(async () => {
  await h.close();
});

it('records a burst in order, once, whatever number of times it is written', async () => {
  const { repo } = await seedRepo(h, { branches: ['master', 'dev'] });
  for (let i = 0; i < 30; i++) {
    const res = await h.request({ method: 'POST', url: `/1/builds/${repo.key}`, payload: { branch: i % 3 === 0 ? 'dev' : 'master', force: true } });
    expect(res.statusCode).toBe(200);
  }
  expect(h.handed).toHaveLength(30);
  const first = await recordIntakes(h.db.pool, h.handed);
  const ids = h.handed.map((i) => first.get(i.sessions[0]!.key)!);
  expect(ids.every((id) => typeof id === 'number')).toBe(true);
  expect([...ids].sort((a, b) => a - b)).toEqual(ids); // in the order they were accepted
  expect(await recordIntakes(h.db.pool, h.handed)).toEqual(first);
  const { rows } = await h.db.pool.query<{ events: number; sessions: number; dev: number }>(
    `SELECT count(DISTINCT e.id)::int AS events, count(s.id)::int AS sessions, count(s.id) FILTER (WHERE s.branch = 'dev')::int AS dev
       FROM ci_events e JOIN sessions s ON s.ci_event_id = e.id WHERE e.repo_id = $1`,
    [repo.id],
  );
  expect(rows[0]).toEqual({ events: 30, sessions: 30, dev: 10 });
});

it('says which sessions each writer wrote: the API first, then the suite, which reads before it writes', async () => {
  const { repo } = await seedRepo(h, { branches: ['master'] });
  h.handed.splice(0);
  for (let i = 0; i < 3; i++) {
    expect((await h.request({ method: 'POST', url: `/1/builds/${repo.key}`, payload: { branch: 'master', force: true } })).statusCode).toBe(200);
  }
  const [a, b, c] = h.handed as [Intake, Intake, Intake];
  // The API recorded the first two (api/herald.ts); the suite then writes the batch of three.
  const api = await writeIntakes(h.db.pool, [a, b]);
  expect(api.fresh).toHaveLength(2);
  const suite = await writeIntakes(h.db.pool, [a, b, c], { mostlyWritten: true });
  const idOf = (i: Intake) => suite.ids.get(i.sessions[0]!.key)!;
  expect(suite.fresh).toEqual([idOf(c)]); // its `received` is the suite's to send; the others' the API's
  expect([idOf(a), idOf(b)]).toEqual(api.fresh);
  expect(idOf(c)).toBeGreaterThan(idOf(b));
  // Written again (a retried activity): nothing new, the same ids.
  expect(await writeIntakes(h.db.pool, [a, b, c], { mostlyWritten: true })).toEqual({ ids: suite.ids, fresh: [] });
});
