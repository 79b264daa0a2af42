/**
 * Steering a suite's queue, end to end: stop (queued and building, killing the test's whole
 * process group), rebuild, CI squash, queue_position head, and builds routed to a named queue.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { runRunner } from '../../src/runner/run';
import { eventually } from '../support/sluice';
import { script, World, type Payload, type Repo } from '../support/world';
import { isAlive } from '../support/pids';

let w: World;
let tmp: string;
beforeAll(async () => {
  w = await World.start();
  tmp = await mkdtemp(path.join(os.tmpdir(), 'sluice-control-'));
});
afterAll(async () => {
  await w?.stop();
  await rm(tmp, { recursive: true, force: true });
});

const suite = { branch: 'master', test_pattern: '*_test.sh' };
const exec = (events: Payload[]) => (events.at(-1)!.timing as Record<string, number>).exec!;

async function status(session: number): Promise<string> {
  const { rows } = await w.sluice.pool.query('SELECT status FROM sessions WHERE id = $1', [session]);
  return rows[0].status;
}

async function stop(session: number, by = 'ann@acme.test') {
  const res = await fetch(`${w.sluice.url}/api/v1/sessions/${session}/stop`, {
    method: 'POST',
    headers: { authorization: `Bearer ${w.sluice.config.adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ stopped_by: by }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe('stop', () => {
  let repo: Repo;
  beforeAll(async () => {
    // The test leaves a background child in its process group and records both pids.
    repo = await w.makeRepo(
      { 'slow_test.sh': script('sleep 300 & echo $! > "$PIDS/child"; echo $$ > "$PIDS/test"; wait') },
      { suite },
    );
  });

  it('stops a running build, kills the test and its children, and lets the suite go on', async () => {
    const pids = await mkdtemp(path.join(tmp, 'pids-'));
    const running = await w.build(repo, { env: { PIDS: pids } });
    const [testPid, childPid] = await eventually('the test to record both pids', async () => {
      // `echo $! > file` creates the file before it writes: wait for a whole line, not a file.
      const read = async (f: string) => {
        const text = await readFile(path.join(pids, f), 'utf8');
        return /^\d+\n$/.test(text) ? Number(text) : undefined;
      };
      const [test, child] = [await read('test'), await read('child')];
      return test && child ? [test, child] : undefined;
    });
    expect(isAlive(testPid!) && isAlive(childPid!)).toBe(true);

    const res = await stop(running.session);
    expect(res.status).toBe(202);
    const events = await w.eventsOf(running.session);
    expect(events.map((e) => e.event)).toEqual(['received', 'start', 'test', 'stop']);
    expect(events.at(-1)).toMatchObject({ status: 'stopped', stopped_by: 'ann@acme.test' });
    expect(isAlive(testPid!)).toBe(false);
    expect(isAlive(childPid!)).toBe(false);
    expect((await w.session(running.session)).reason).toBe('stopped by ann@acme.test');

    // Stopping it again is a conflict; the suite is free for the next build.
    expect((await stop(running.session)).status).toBe(409);
    const next = await w.build(repo, { force: true, env: { PIDS: pids } });
    await eventually('the next build to start', async () => (await status(next.session)) === 'running');
    expect((await stop(next.session, 'bob')).status).toBe(202);
    expect((await w.eventsOf(next.session)).at(-1)).toMatchObject({ status: 'stopped', stopped_by: 'bob' });
  });

  it('stops a queued build before it starts', async () => {
    const pids = await mkdtemp(path.join(tmp, 'pids-'));
    const first = await w.build(repo, { force: true, env: { PIDS: pids } });
    // The suite lets one build through at a time: once the first is running, the second is queued.
    await eventually('the first build to run', async () => (await status(first.session)) === 'running');
    const queued = await w.build(repo, { force: true, env: { PIDS: pids } });
    expect((await stop(queued.session, 'carol')).status).toBe(202);
    const events = await w.eventsOf(queued.session);
    expect(events.map((e) => e.event)).toEqual(['received', 'stop']);
    expect(events.at(-1)).toMatchObject({ status: 'stopped', stopped_by: 'carol', commit_id: null });
    expect(await status(first.session)).toBe('running');
    await stop(first.session);
    await w.eventsOf(first.session);
  });

  it('stops a plan: every part is stopped, and so is the parent', async () => {
    const plan = await w.makeRepo(
      { 'a/slow_test.sh': script('sleep 300'), 'b/slow_test.sh': script('sleep 300') },
      {
        suite: {
          ...suite,
          profiles: [
            { name: 'a', test_pattern: 'a/*_test.sh' },
            { name: 'b', test_pattern: 'b/*_test.sh' },
          ],
          plan: ['a', 'b'],
        },
      },
    );
    const parent = await w.build(plan);
    const parts = await eventually('both parts to run their tests', async () => {
      const { rows } = await w.sluice.pool.query("SELECT id, status FROM sessions WHERE parent_id = $1 ORDER BY id", [parent.session]);
      return rows.length === 2 && rows.every((r) => r.status === 'running') && rows.map((r) => r.id as number);
    });
    expect((await stop(parent.session, 'dave')).status).toBe(202);
    expect((await w.eventsOf(parent.session)).at(-1)).toMatchObject({ status: 'stopped', stopped_by: 'dave' });
    for (const id of parts) expect((await w.eventsOf(id)).at(-1)).toMatchObject({ status: 'stopped', stopped_by: 'dave', parent_session: parent.session });
  });

  it('answers 404 for an unknown session and 400 without stopped_by', async () => {
    expect((await stop(999_999)).status).toBe(404);
    // A session that is there (this file's tests built some): the admin token must say who stops it.
    const { rows } = await w.sluice.pool.query<{ id: number }>('SELECT max(id)::int AS id FROM sessions');
    const res = await fetch(`${w.sluice.url}/api/v1/sessions/${rows[0]!.id}/stop`, {
      method: 'POST',
      headers: { authorization: `Bearer ${w.sluice.config.adminToken}`, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ field: 'stopped_by' });
  });
});

describe('rebuild', () => {
  const rebuild = async (session: number) => {
    const res = await fetch(`${w.sluice.url}/api/v1/sessions/${session}/rebuild`, {
      method: 'POST',
      headers: { authorization: `Bearer ${w.sluice.config.adminToken}` },
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  it('builds an ended session again, at the commit it built, even though that commit was built already', async () => {
    const repo = await w.makeRepo({ 'a_test.sh': script('true') }, { suite });
    const first = await w.build(repo, { env: { WHO: 'first' } });
    const built = (await w.eventsOf(first.session)).at(-1)!;
    expect(built).toMatchObject({ status: 'passed' });

    // A plain trigger now would be skipped (nothing new); a rebuild is forced.
    const res = await rebuild(first.session);
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ session: expect.any(Number), guid: expect.any(String), url: expect.stringContaining('/1/reports/') });
    const again = (await w.eventsOf(res.body.session as number)).at(-1)!;
    expect(again).toMatchObject({ status: 'passed', commit_id: built.commit_id, branch: 'master' });
    const { rows } = await w.sluice.pool.query("SELECT e.trigger FROM ci_events e JOIN sessions s ON s.ci_event_id = e.id WHERE s.id = $1", [res.body.session]);
    expect(rows[0].trigger).toMatchObject({ rebuildOf: first.session, force: true, head: built.commit_id, env: { WHO: 'first' } });
  });

  it('refuses a session still running (409), a plan\'s part (409) and an unknown one (404)', async () => {
    const repo = await w.makeRepo({ 'slow_test.sh': script('sleep 300') }, { suite });
    const running = await w.build(repo);
    await eventually('the build to run', async () => (await status(running.session)) === 'running');
    expect(await rebuild(running.session)).toMatchObject({ status: 409, body: { field: 'session' } });
    await stop(running.session);
    await w.eventsOf(running.session);
    expect((await rebuild(999_999)).status).toBe(404);

    const plan = await w.makeRepo(
      { 'a/ok_test.sh': script('true'), 'b/ok_test.sh': script('true') },
      { suite: { ...suite, profiles: [{ name: 'a', test_pattern: 'a/*_test.sh' }, { name: 'b', test_pattern: 'b/*_test.sh' }], plan: ['a', 'b'] } },
    );
    const parent = await w.build(plan);
    await w.eventsOf(parent.session);
    const { rows } = await w.sluice.pool.query('SELECT id FROM sessions WHERE parent_id = $1 ORDER BY id LIMIT 1', [parent.session]);
    const part = await rebuild(rows[0].id);
    expect(part).toMatchObject({ status: 409, body: { field: 'session' } });
    expect(part.body.message).toContain(`rebuild session ${parent.session}`);
  });
});

describe('the queue', () => {
  const slow = { 'a_test.sh': script('sleep 2') };

  it('with CI squash, builds only the newest of the queued triggers', async () => {
    const repo = await w.makeRepo(slow, { suite });
    await w.sluice.admin('PATCH', `/api/v1/repos/${repo.id}`, { ci_squash: true });
    const first = await w.build(repo);
    await eventually('the first build to start', async () => (await status(first.session)) === 'running');
    const queued = [];
    for (let i = 0; i < 3; i++) queued.push(await w.build(repo, { force: true }));
    const [a, b, newest] = queued as [typeof first, typeof first, typeof first];

    for (const squashed of [a, b]) {
      const events = await w.eventsOf(squashed.session);
      expect(events.map((e) => e.event)).toEqual(['received', 'stop']);
      expect(events.at(-1)).toMatchObject({ status: 'skipped' });
      expect((await w.session(squashed.session)).reason).toMatch(`squashed into session ${newest.session}`);
    }
    expect((await w.eventsOf(newest.session)).at(-1)).toMatchObject({ status: 'passed' });
    expect((await w.eventsOf(first.session)).at(-1)).toMatchObject({ status: 'passed' });
  });

  it('with CI squash, builds the session that arrived last, even when an earlier one has the higher id', async () => {
    // Ids follow arrival while one writer records them; with the API recording ahead of the
    // suite (api/herald.ts) or a rebuild recorded before it queues, they may not.
    const repo = await w.makeRepo(slow, { suite });
    await w.sluice.admin('PATCH', `/api/v1/repos/${repo.id}`, { ci_squash: true });
    const first = await w.build(repo);
    await eventually('the first build to start', async () => (await status(first.session)) === 'running');
    const { rows } = await w.sluice.pool.query<{ id: number; suite_id: number }>(
      `INSERT INTO sessions (ci_event_id, suite_id, status, profile_name, branch, ref, head, force, workers)
         SELECT ci_event_id, suite_id, 'queued', profile_name, branch, ref, head, true, workers FROM sessions, generate_series(1, 2)
          WHERE id = $1 ORDER BY 1
       RETURNING id, suite_id`,
      [first.session],
    );
    const [lower, higher] = rows.map((r) => r.id).sort((a, b) => a - b) as [number, number];
    const suiteHandle = w.sluice.client.workflow.getHandle(w.sluice.ids.suite(rows[0]!.suite_id));
    await suiteHandle.signal('enqueueMany', [{ sessionId: higher, queuePosition: 'tail' }]);
    await suiteHandle.signal('enqueueMany', [{ sessionId: lower, queuePosition: 'tail' }]);

    expect((await w.eventsOf(lower)).at(-1)).toMatchObject({ status: 'passed' });
    expect((await w.eventsOf(higher)).at(-1)).toMatchObject({ status: 'skipped' });
    expect((await w.session(higher)).reason).toMatch(`squashed into session ${lower}`);
  });

  it('without CI squash, builds each queued trigger, and queue_position head jumps the queue', async () => {
    const repo = await w.makeRepo(slow, { suite });
    const first = await w.build(repo);
    await eventually('the first build to start', async () => (await status(first.session)) === 'running');
    const tail = await w.build(repo, { force: true });
    const head = await w.build(repo, { force: true, queue_position: 'head' });
    const [et, eh] = [await w.eventsOf(tail.session), await w.eventsOf(head.session)];
    expect([et.at(-1)!.status, eh.at(-1)!.status]).toEqual(['passed', 'passed']);
    expect(exec(eh)).toBeLessThan(exec(et));
  });
});

describe('a named build queue', () => {
  it('waits, visibly, for a worker that serves it, then builds there', async () => {
    const repo = await w.makeRepo({ 'a_test.sh': script('true') }, { suite });
    const { session } = await w.build(repo, { queue: 'gpu-pool' });
    // Nobody serves gpu-pool yet: the checkout waits on it (the Temporal UI shows it pending).
    const handle = w.sluice.client.workflow.getHandle(w.sluice.ids.session(session));
    const pending = await eventually('the checkout to wait on gpu-pool', async () => {
      const d = await handle.describe();
      return d.raw.pendingActivities?.find((a) => a.activityType?.name === 'checkout');
    });
    expect(pending).toBeTruthy();
    await new Promise((r) => setTimeout(r, 1_000));
    expect(await status(session)).toBe('running');

    const gpu = await runRunner({ ...w.sluice.config, buildQueue: 'gpu-pool' });
    try {
      expect((await w.eventsOf(session)).at(-1)).toMatchObject({ status: 'passed' });
    } finally {
      await gpu.shutdown();
    }
  });
});
