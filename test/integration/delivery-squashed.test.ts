/**
 * CI squash's batch (delivery/squashed.ts) against a real database and receiver: the sessions
 * it ends are recorded `skipped` in one go, each receiver gets `received` (unless the API's
 * attempt settled it) and then `stop`, once each; a session whose event a receiver refused is
 * handed back, and its lane goes on from the log with the same xid; running the batch again
 * (a retried activity) sends nothing twice.
 */
import { randomUUID } from 'node:crypto';
import { createDeliverActivity } from '../../src/activities/delivery';
import type { DeliverInput } from '../../src/activities/types';
import { buildPayload } from '../../src/core/payload';
import { squashedSnapshots } from '../../src/core/squash';
import { loadSessionContext } from '../../src/db/sessionContext';
import { announceReceived } from '../../src/delivery/received';
import { endSquashedSessions } from '../../src/delivery/squashed';
import { runActivity } from '../support/activityContext';
import { useDeliveryHarness } from '../support/deliveryHarness';
import { insertPostSession } from '../support/postSession';

const h = useDeliveryHarness();
const deps = () => h.deps();
afterEach(() => h.rx.respondWith(() => ({ status: 200, body: 'ok' })));

/** `count` queued sessions of one suite, and a newer one they are squashed into; one webhook. */
async function queuedSessions(count: number): Promise<{ ids: number[]; into: number; webhookId: number }> {
  const first = await insertPostSession(h.db.pool, h.config.secretKey);
  const { rows: hook } = await h.db.pool.query<{ id: string }>('INSERT INTO webhooks (org_id, url) VALUES ($1, $2) RETURNING id', [first.orgId, h.rx.url]);
  const ids = [first.sessionId];
  for (let i = 0; i < count; i++) {
    const { rows } = await h.db.pool.query<{ id: number }>(
      `INSERT INTO sessions (ci_event_id, suite_id, branch, head) SELECT ci_event_id, suite_id, branch, head FROM sessions WHERE id = $1 RETURNING id`,
      [first.sessionId],
    );
    ids.push(rows[0]!.id);
  }
  const into = ids.pop()!;
  return { ids, into, webhookId: Number(hook[0]!.id) };
}

const eventsOf = (sessionId: number) =>
  h.rx.requests.map((r) => r.json as { session?: number; event?: string; status?: string; xid?: string }).filter((p) => p?.session === sessionId);
const logOf = async (sessionId: number) =>
  (
    await h.db.pool.query<{ event: string; attempt: number; outcome: string; xid: string }>(
      'SELECT event, attempt, outcome, xid FROM deliveries WHERE session_id = $1 ORDER BY id',
      [sessionId],
    )
  ).rows;

it('records every session skipped and sends each receiver `received` then `stop`, once, the API\'s `received` not again', async () => {
  const { ids, into } = await queuedSessions(3);
  // The API announced the first one already; the others never were (its attempt was lost).
  await announceReceived(deps(), ids[0]!);

  expect(await endSquashedSessions(deps(), { sessionIds: ids, into })).toEqual([]);

  for (const id of ids) {
    expect(eventsOf(id).map((p) => [p.event, p.status])).toEqual([
      ['received', 'queued'],
      ['stop', 'skipped'],
    ]);
    const { rows } = await h.db.pool.query<{ status: string; reason: string; timing: Record<string, number> }>(
      'SELECT status, reason, timing FROM sessions WHERE id = $1',
      [id],
    );
    expect(rows[0]).toMatchObject({ status: 'skipped', reason: `squashed into session ${into} (CI squash builds only the newest queued trigger)` });
    expect(rows[0]!.timing.done).toBeGreaterThanOrEqual(rows[0]!.timing.ci_received_at!);
  }
  // The newer session is left queued: it builds.
  expect((await h.db.pool.query('SELECT status FROM sessions WHERE id = $1', [into])).rows[0].status).toBe('queued');

  // A retried activity: nothing is sent twice, nothing is handed back.
  const before = h.rx.requests.length;
  expect(await endSquashedSessions(deps(), { sessionIds: ids, into })).toEqual([]);
  expect(h.rx.requests.length).toBe(before);
});

it('hands back a session whose `stop` was refused; its lane sends attempt 2 with the same xid, and `stop` never before `received`', async () => {
  const { ids, into, webhookId } = await queuedSessions(2);
  const [refusedStop, refusedReceived] = ids as [number, number];
  h.rx.respondWith((req) => {
    const p = req.json as { session: number; event: string };
    const refuse = (p.session === refusedStop && p.event === 'stop') || (p.session === refusedReceived && p.event === 'received');
    return refuse ? { status: 503, body: 'busy' } : { status: 200, body: 'ok' };
  });

  const open = await endSquashedSessions(deps(), { sessionIds: ids, into });
  expect(open).toEqual([
    { sessionId: refusedStop, webhookIds: [webhookId] },
    { sessionId: refusedReceived, webhookIds: [webhookId] },
  ]);
  // `received` refused: its `stop` was held back, not sent out of order.
  expect(eventsOf(refusedReceived).map((p) => p.event)).toEqual(['received']);
  h.rx.respondWith(() => ({ status: 200, body: 'ok' }));

  // The lanes of workflows/squashed.ts: each event through the activity, going on from the log.
  for (const sessionId of [refusedStop, refusedReceived]) {
    const ctx = await loadSessionContext(h.db.pool, h.config, sessionId);
    const [received, stop] = squashedSnapshots(ctx);
    for (const [event, snap] of [['received', received], ['stop', stop]] as const) {
      const input: DeliverInput = { webhookId, sessionId, payload: buildPayload(event, ctx, snap, randomUUID(), new Date()), maxAttempts: 3, claimFirst: true };
      await new Promise((r) => setTimeout(r, 150)); // past the retry policy's first interval (100 ms here)
      const settled = await runActivity(() => createDeliverActivity(deps())(input), { attempt: 2 }).result;
      expect(settled).toMatchObject({ outcome: 'delivered' });
    }
  }
  const stopLog = (await logOf(refusedStop)).filter((r) => r.event === 'stop');
  expect(stopLog.map((r) => [r.attempt, r.outcome])).toEqual([
    [1, 'retrying'],
    [2, 'delivered'],
  ]);
  expect(stopLog[1]!.xid).toBe(stopLog[0]!.xid);
  expect(eventsOf(refusedReceived).map((p) => p.event)).toEqual(['received', 'received', 'stop']);
});

it('leaves alone a session that ended meanwhile (stopped by hand): it said its own `stop`', async () => {
  const { ids, into } = await queuedSessions(2);
  await h.db.pool.query("UPDATE sessions SET status = 'stopped' WHERE id = $1", [ids[0]]);
  expect(await endSquashedSessions(deps(), { sessionIds: ids, into })).toEqual([]);
  expect(eventsOf(ids[0]!)).toEqual([]);
  expect((await h.db.pool.query('SELECT status FROM sessions WHERE id = $1', [ids[0]])).rows[0].status).toBe('stopped');
  expect(eventsOf(ids[1]!).map((p) => p.event)).toEqual(['received', 'stop']);
});
