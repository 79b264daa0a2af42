/**
 * PostgreSQL stopped mid-build with triggers arriving, then started again (issue 26), against
 * a PostgreSQL server of this file's own (the shared one serves every other file meanwhile):
 * each trigger sent while it is away is accepted (200, decided from what the API knows), its
 * `status_uri` says it is on its way, and once the database is back every accepted trigger
 * ends with `stop`, the running build with its true result, and no event reaches the receiver
 * twice under different xids. Real processes' pieces (API, worker, runner), real Temporal.
 */
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { migrate } from '../../src/db/migrate';
import { createPool } from '../../src/db/pool';
import { startPrivatePostgres, type PrivatePostgres } from '../support/privatePostgres';
import { eventually } from '../support/wait';
import { expectEachEventOnce, script, sessionOfGuid, World, type Payload } from '../support/world';

let pg: PrivatePostgres;
let w: World;
const shared = path.join(os.tmpdir(), `sluice-pg-outage-${process.pid}`);

beforeAll(async () => {
  pg = await startPrivatePostgres();
  const pool = createPool(pg.url, 1);
  await migrate(pool).finally(() => pool.end());
  await mkdir(shared, { recursive: true });
  w = await World.start({ databaseUrl: pg.url });
}, 120_000);

afterAll(async () => {
  await w?.stop();
  await pg?.remove();
  await rm(shared, { recursive: true, force: true });
});

const events = (session: number) => w.receiver.requests.map((r) => r.json as Payload).filter((p) => p?.session === session);

it('accepts triggers while PostgreSQL is away and, once it is back, ends every one with stop and the running build with its true result', async () => {
  const running = path.join(shared, 'running');
  const release = path.join(shared, 'release');
  const repo = await w.makeRepo(
    { 'test/wait_test.sh': script(`touch ${running}\nwhile [ ! -e ${release} ]; do sleep 0.1; done\necho released`) },
    { suite: { branch: 'master', test_pattern: 'test/*_test.sh' } },
  );
  // A burst on one branch builds only its newest (the others end squashed, each with its stop).
  await w.sluice.admin('PATCH', `/api/v1/repos/${repo.id}`, { ci_squash: true });
  const first = await w.build(repo, { branch: 'master', force: true });
  await eventually('the test to run', async () => (await readFile(running).catch(() => null)) !== null, 60_000);

  await pg.stop();
  const guids: string[] = [];
  try {
    for (let i = 0; i < 5; i++) {
      const res = await w.trigger(repo, { branch: 'master', force: true });
      expect(res.status).toBe(200);
      const { guid, status_uri } = JSON.parse(res.text) as { guid: string; status_uri: string };
      guids.push(guid);
      expect(await (await fetch(status_uri)).json()).toMatchObject({ guid, recorded: false, sessions: [] });
    }
    // Let the build finish while the database is away: its end waits for it.
    await writeFile(release, '');
    await new Promise((resolve) => setTimeout(resolve, 3_000)); // an outage of some seconds, as the 15 s
  } finally {
    await pg.start();
  }

  await eventually(`session ${first.session}'s stop`, async () => events(first.session).some((e) => e.event === 'stop'), 120_000);
  expect(events(first.session).find((e) => e.event === 'stop')).toMatchObject({ status: 'passed', counts: { passed: 1, failed: 0, error: 0 } });
  const sessions = [first.session];
  for (const guid of guids) {
    const session = await sessionOfGuid(w.sluice.pool, guid, 120_000);
    sessions.push(session);
    await eventually(`session ${session}'s stop`, async () => events(session).some((e) => e.event === 'stop'), 120_000);
    // The status_uri now tells what became of it.
    expect(await (await fetch(`${w.sluice.url}/ci_events/${guid}/guid`)).json()).toMatchObject({ recorded: true, sessions: [{ session }] });
  }
  // The newest built; each event of each session came under one xid, and `received` before `stop`.
  expect(events(sessions.at(-1)!).find((e) => e.event === 'stop')).toMatchObject({ status: 'passed' });
  for (const session of sessions) {
    const mine = events(session);
    expectEachEventOnce(w.receiver, session);
    expect(mine.findIndex((e) => e.event === 'received')).toBeLessThan(mine.findIndex((e) => e.event === 'stop'));
  }
}, 300_000);
