/**
 * `received` sent by the API (delivery/received.ts) and the session's own lane after it
 * (activities/delivery.ts with claimFirst), against a real database and receiver: the event is
 * delivered once; a failed first attempt is retried by the lane with the same xid; a claim
 * whose holder never logged an attempt is taken over.
 */
import { randomUUID } from 'node:crypto';
import { createDeliverActivity } from '../../src/activities/delivery';
import type { DeliverInput } from '../../src/activities/types';
import { emptyCounts } from '../../src/core/counts';
import { buildPayload } from '../../src/core/payload';
import { claimFirstAttempt } from '../../src/db/deliveries';
import { loadSessionContext } from '../../src/db/sessionContext';
import { announceReceived } from '../../src/delivery/received';
import { runActivity } from '../support/activityContext';
import { useDeliveryHarness } from '../support/deliveryHarness';
import { insertPostSession } from '../support/postSession';

const h = useDeliveryHarness();
const deps = () => h.deps();

async function sessionWithWebhook(): Promise<{ sessionId: number; webhookId: number }> {
  const s = await insertPostSession(h.db.pool, h.config.secretKey);
  const { rows } = await h.db.pool.query<{ id: string }>('INSERT INTO webhooks (org_id, url) VALUES ($1, $2) RETURNING id', [s.orgId, h.rx.url]);
  return { sessionId: s.sessionId, webhookId: Number(rows[0]!.id) };
}

/** The session workflow's lane: `received` as it would build it, through the activity, as attempt `attempt` of Temporal's. */
async function laneDelivers(sessionId: number, webhookId: number, attempt = 1) {
  const ctx = await loadSessionContext(h.db.pool, h.config, sessionId);
  const snap = { status: 'queued' as const, counts: emptyCounts(), commitId: null, committers: [], timing: {}, stoppedBy: null };
  const input: DeliverInput = { webhookId, sessionId, payload: buildPayload('received', ctx, snap, randomUUID(), new Date()), maxAttempts: 3, claimFirst: true };
  return runActivity(() => createDeliverActivity(deps())(input), { attempt }).result;
}

const receivedOf = (sessionId: number) => h.rx.requests.filter((r) => (r.json as { session?: number; event?: string })?.session === sessionId);
const log = async (sessionId: number) =>
  (await h.db.pool.query<{ attempt: number; outcome: string; xid: string }>("SELECT attempt, outcome, xid FROM deliveries WHERE session_id = $1 AND event = 'received' ORDER BY id", [sessionId])).rows;

it('the API delivers `received` at once; the lane then finds it delivered and sends nothing', async () => {
  const { sessionId, webhookId } = await sessionWithWebhook();
  // Settled: the session's workflow need not start before its turn.
  expect(await announceReceived(deps(), sessionId)).toMatchObject({ settled: true });
  expect(receivedOf(sessionId).map((r) => (r.json as { event: string; status: string }).event)).toEqual(['received']);
  expect(await laneDelivers(sessionId, webhookId)).toMatchObject({ outcome: 'delivered', statusCode: 200 });
  expect(receivedOf(sessionId)).toHaveLength(1);
  expect(await log(sessionId)).toEqual([expect.objectContaining({ attempt: 1, outcome: 'delivered' })]);
});

it('a first attempt that failed is retried by the lane, as attempt 2, with the same xid', async () => {
  const { sessionId, webhookId } = await sessionWithWebhook();
  h.rx.respondWith(() => ({ status: 503, body: 'warming up' }));
  // Not settled: the API asks the suite to start the session's workflow now, for its lane.
  expect(await announceReceived(deps(), sessionId)).toMatchObject({ settled: false });
  h.rx.respondWith(() => ({ status: 200, body: 'ok' }));
  // Due after the retry policy's first interval (100 ms here): the lane waits for it, through Temporal.
  const early = await laneDelivers(sessionId, webhookId).catch((err: Error) => err);
  if (early instanceof Error) expect(early.message).toMatch(/attempt 2 is due in \d+ ms/);
  await new Promise((r) => setTimeout(r, 200));
  expect(await laneDelivers(sessionId, webhookId, 2)).toMatchObject({ outcome: 'delivered' });
  const rows = await log(sessionId);
  expect(rows.map((r) => [r.attempt, r.outcome])).toEqual([
    [1, 'retrying'],
    [2, 'delivered'],
  ]);
  expect(rows[1]!.xid).toBe(rows[0]!.xid);
  expect(new Set(receivedOf(sessionId).map((r) => r.headers['x-sluice-delivery']))).toEqual(new Set([rows[0]!.xid]));
});

it('a claim whose holder never logged an attempt is taken over; one with an attempt is not', async () => {
  const silent = await sessionWithWebhook();
  const key = { sessionId: silent.sessionId, webhookId: silent.webhookId, event: 'received' };
  expect(await claimFirstAttempt(h.db.pool, key, 60_000)).toBe(true);
  expect(await claimFirstAttempt(h.db.pool, key, 60_000)).toBe(false);
  // The holder died before it could send: after the take-over delay, the next caller has it.
  await new Promise((r) => setTimeout(r, 20));
  expect(await claimFirstAttempt(h.db.pool, key, 10)).toBe(true);

  const sent = await sessionWithWebhook();
  await announceReceived(deps(), sent.sessionId);
  await new Promise((r) => setTimeout(r, 20));
  expect(await claimFirstAttempt(h.db.pool, { sessionId: sent.sessionId, webhookId: sent.webhookId, event: 'received' }, 10)).toBe(false);
});
