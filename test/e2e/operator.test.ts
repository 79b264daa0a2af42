/**
 * The operator's daily needs, end to end with a real Temporal, worker, runner and receiver:
 * deleting a repository stops its builds (the running test killed, `stop` sent) before its
 * rows go; a suite's deadline ends a build that runs past it in `error`, its test killed; the
 * worker schedules the daily retention cleanup, and a run of it deletes an old session.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ScheduleOverlapPolicy } from '@temporalio/client';
import type { CleanupResult } from '../../src/activities/types';
import { cleanupScheduleId } from '../../src/temporal/cleanupSchedule';
import { isAlive } from '../support/pids';
import { eventually } from '../support/sluice';
import { script, World } from '../support/world';

let w: World;
let tmp: string;
beforeAll(async () => {
  // Test files may run five minutes: the deadline, not the time limit of one file, must end them.
  w = await World.start({ testTimeoutMs: 300_000 });
  tmp = await mkdtemp(path.join(os.tmpdir(), 'sluice-operator-'));
});
afterAll(async () => {
  await w?.stop();
  await rm(tmp, { recursive: true, force: true });
});

const suite = { branch: 'master', test_pattern: '*_test.sh' };
/** A test that records its pid and sleeps for five minutes. */
const slow = { 'slow_test.sh': script('echo $$ > "$PIDS/test"; exec sleep 300') };

async function status(session: number): Promise<string | undefined> {
  const { rows } = await w.sluice.pool.query<{ status: string }>('SELECT status FROM sessions WHERE id = $1', [session]);
  return rows[0]?.status;
}

/** The pid the slow test wrote into `dir`, once it has. */
const testPid = (dir: string) =>
  eventually('the test to record its pid', async () => {
    const text = await readFile(path.join(dir, 'test'), 'utf8').catch(() => '');
    return /^\d+\n$/.test(text) ? Number(text) : undefined;
  });

async function adminCall(method: string, p: string): Promise<{ status: number; text: string }> {
  const res = await fetch(`${w.sluice.url}${p}`, { method, headers: { authorization: `Bearer ${w.sluice.config.adminToken}` } });
  return { status: res.status, text: await res.text() };
}

it('deleting a repository stops its running and queued builds first (test killed, `stop` sent), then its rows go', async () => {
  const repo = await w.makeRepo(slow, { suite });
  const pids = await mkdtemp(path.join(tmp, 'pids-'));
  const running = await w.build(repo, { env: { PIDS: pids } });
  const pid = await testPid(pids);
  const queued = await w.build(repo, { force: true, env: { PIDS: pids } });
  expect(await status(queued.session)).toBe('queued');

  const res = await adminCall('DELETE', `/api/v1/repos/${repo.id}?stopped_by=erin`);
  expect(res).toEqual({ status: 204, text: '' });
  // The build had ended (its test killed) before the rows went.
  expect(isAlive(pid)).toBe(false);
  expect(await status(running.session)).toBeUndefined();
  expect(await status(queued.session)).toBeUndefined();
  expect((await adminCall('GET', `/api/v1/repos/${repo.id}`)).status).toBe(404);
  expect((await w.trigger(repo)).status).toBe(404);

  // The receivers still hear how both ended, and the attempts are logged without the session.
  const events = await w.eventsOf(running.session);
  expect(events.map((e) => e.event)).toEqual(['received', 'start', 'test', 'stop']);
  expect(events.at(-1)).toMatchObject({ status: 'stopped', stopped_by: 'erin' });
  const queuedEvents = await w.eventsOf(queued.session);
  expect(queuedEvents.map((e) => e.event)).toEqual(['received', 'stop']);
  expect(queuedEvents.at(-1)).toMatchObject({ status: 'stopped', stopped_by: 'erin' });
  const stopXid = events.at(-1)!.xid;
  const logged = await eventually('the `stop` attempt in the log', async () => {
    const { rows } = await w.sluice.pool.query<{ session_id: number | null; outcome: string }>('SELECT session_id, outcome FROM deliveries WHERE xid = $1', [stopXid]);
    return rows.length > 0 ? rows : undefined;
  });
  expect(logged).toEqual([{ session_id: null, outcome: 'delivered' }]);
});

it("a suite's deadline ends a build that runs past it in `error`, its test killed, and the suite goes on", async () => {
  const repo = await w.makeRepo(slow, { suite: { ...suite, deadline_minutes: 1 } });
  const pids = await mkdtemp(path.join(tmp, 'pids-'));
  const late = await w.build(repo, { env: { PIDS: pids } });
  const pid = await testPid(pids);
  const events = await w.eventsOf(late.session);
  expect(events.map((e) => e.event)).toEqual(['received', 'start', 'test', 'stop']);
  const stop = events.at(-1)!;
  expect(stop).toMatchObject({ status: 'error' });
  expect(stop.stopped_by).toBeUndefined();
  const timing = stop.timing as Record<string, number>;
  // A minute from its turn, give or take the time it takes to stop.
  expect(timing.done! - timing.queue_first_allowed_at!).toBeGreaterThanOrEqual(60);
  expect(timing.done! - timing.queue_first_allowed_at!).toBeLessThan(90);
  expect(isAlive(pid)).toBe(false);
  const view = await w.session(late.session);
  expect(view).toMatchObject({ status: 'error', reason: "took longer than the suite's deadline of 1 minute" });
  expect(view.stopped_by ?? null).toBeNull();

  // The suite is free: the next build starts (and is stopped here, not waited for).
  const next = await w.build(repo, { force: true, env: { PIDS: pids } });
  await eventually('the next build to run', async () => (await status(next.session)) === 'running');
  const stopped = await fetch(`${w.sluice.url}/api/v1/sessions/${next.session}/stop`, {
    method: 'POST',
    headers: { authorization: `Bearer ${w.sluice.config.adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ stopped_by: 'test' }),
  });
  expect(stopped.status).toBe(202);
  await w.eventsOf(next.session);
}, 180_000);

it('the worker schedules the daily cleanup; a run deletes an old ended session and keeps one still running', async () => {
  const handle = w.sluice.client.schedule.getHandle(cleanupScheduleId(w.sluice.config.taskQueue));
  const described = await handle.describe();
  expect(described.action).toMatchObject({ type: 'startWorkflow', workflowType: 'cleanupWorkflow', taskQueue: w.sluice.config.taskQueue });
  expect(described.policies.overlap).toBe(ScheduleOverlapPolicy.SKIP);
  expect(described.spec.calendars).toEqual([expect.objectContaining({ hour: [{ start: 3, end: 3, step: 1 }], minute: [{ start: 17, end: 17, step: 1 }] })]);

  // A real build, then made 100 days old; beside it a session of the same age still running.
  const repo = await w.makeRepo({ 'ok_test.sh': script('echo fine') }, { suite });
  const old = await w.build(repo);
  await w.eventsOf(old.session);
  await w.sluice.pool.query(`UPDATE sessions SET updated_at = now() - interval '100 days' WHERE id = $1`, [old.session]);
  await w.sluice.pool.query(`UPDATE ci_events SET received_at = now() - interval '100 days' WHERE guid = $1`, [old.guid]);
  const { rows } = await w.sluice.pool.query<{ id: number }>(
    `INSERT INTO sessions (ci_event_id, suite_id, status, branch, head, updated_at)
     SELECT ci_event_id, suite_id, 'running', branch, head, now() - interval '100 days' FROM sessions WHERE id = $1 RETURNING id`,
    [old.session],
  );
  const stillRunning = rows[0]!.id;
  try {
    expect((await w.sluice.pool.query('SELECT 1 FROM test_results WHERE session_id = $1', [old.session])).rowCount).toBe(1);

    await handle.trigger();
    const run = await eventually('the triggered run', async () => (await handle.describe()).info.recentActions.at(-1)?.action.workflow);
    const result = (await w.sluice.client.workflow.getHandle(run!.workflowId, run!.firstExecutionRunId).result()) as CleanupResult;
    expect(result).toMatchObject({ sessionRetentionDays: 90, deliveryRetentionDays: 30 });
    expect(result.sessions).toBeGreaterThanOrEqual(1);
    expect(await status(old.session)).toBeUndefined();
    expect((await w.sluice.pool.query('SELECT 1 FROM test_results WHERE session_id = $1', [old.session])).rowCount).toBe(0);
    expect(await status(stillRunning)).toBe('running');
    expect((await w.sluice.pool.query('SELECT 1 FROM ci_events WHERE guid = $1', [old.guid])).rowCount).toBe(1); // the running one refers to it
  } finally {
    // No workflow holds it: leave nothing for the other files of the shared database to find.
    await w.sluice.pool.query('DELETE FROM sessions WHERE id = $1', [stillRunning]);
  }
});
