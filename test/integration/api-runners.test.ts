/**
 * `GET /api/v1/runners`: the runners up now, as their rows say (runners write them: runner/run.ts),
 * with how each isolates builds and how many lanes it is running; admin only.
 */
import { enqueueTests, claimFiles } from '../../src/db/testQueue';
import { recordRunner } from '../../src/db/runners';
import { startApiHarness, type ApiHarness } from '../support/apiApp';
import { insertPostSession } from '../support/postSession';

let h: ApiHarness;
beforeAll(async () => {
  h = await startApiHarness();
});
afterAll(() => h?.close());

it('lists the runners up now, isolated or not, busy or idle; not one long gone; only for the admin', async () => {
  await recordRunner(h.db.pool, { name: 'ci-1-100', version: '0.1.0', sandboxed: true, buildUser: 'sluice-build', gaps: [] });
  await recordRunner(h.db.pool, { name: 'laptop-200', version: '0.1.0', sandboxed: false, buildUser: null, gaps: ['bubblewrap does not work here (spawn bwrap ENOENT)'] });
  await recordRunner(h.db.pool, { name: 'gone-300', version: '0.0.9', sandboxed: true, buildUser: 'sluice-build', gaps: [] });
  await h.db.pool.query(`UPDATE runners SET last_seen_at = now() - interval '10 minutes' WHERE name = 'gone-300'`);
  // One lane of a build running on ci-1-100.
  const s = await insertPostSession(h.db.pool, h.config.secretKey);
  await enqueueTests(h.db.pool, s.sessionId, [{ path: 'test/a_test.sh', estimateMs: null }]);
  await claimFiles(h.db.pool, s.sessionId, { token: 'lane 0 attempt 1 on ci-1-100', lane: 0, leaseMs: 60_000 }, { budgetMs: 1_000, unknownMs: 1_000, maxFiles: 1 });

  const res = await h.admin('GET', '/api/v1/runners');
  expect(res.statusCode).toBe(200);
  const { runners } = res.json() as { runners: Array<Record<string, unknown>> };
  expect(runners.map((r) => [r.name, r.busy_lanes, r.sandboxed, r.build_user])).toEqual([
    ['ci-1-100', 1, true, 'sluice-build'],
    ['laptop-200', 0, false, null],
  ]);
  expect(runners[1]).toMatchObject({ version: '0.1.0', gaps: ['bubblewrap does not work here (spawn bwrap ENOENT)'], started_at: expect.any(String), last_seen_at: expect.any(String) });

  expect((await h.request({ method: 'GET', url: '/api/v1/runners' })).statusCode).toBe(401);
});
