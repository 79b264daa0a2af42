/**
 * Serialization and delivery under a dead receiver, end to end: one build at a time per suite,
 * suites in parallel, and a receiver that is down neither loses events nor holds up builds.
 */
import { startReceiver } from '../support/receiver';
import { eventually, freePort } from '../support/sluice';
import { script, World, type Payload } from '../support/world';

let w: World;
beforeAll(async () => {
  w = await World.start();
});
afterAll(() => w?.stop());

const slowTest = { 'slow_test.sh': script('sleep 2') };
const window = (stop: Payload) => {
  const t = stop.timing as Record<string, number>;
  return { from: t.exec!, to: t.post_build! };
};

describe('serialization', () => {
  it('runs two triggers of one suite one after the other, never overlapping', async () => {
    const repo = await w.makeRepo(slowTest, { suite: { branch: 'master', test_pattern: '*_test.sh' } });
    const a = await w.build(repo);
    const b = await w.build(repo, { force: true });
    const [ea, eb] = await Promise.all([w.eventsOf(a.session), w.eventsOf(b.session)]);
    const [sa, sb] = [ea.at(-1)!, eb.at(-1)!];
    expect([sa.status, sb.status]).toEqual(['passed', 'passed']);
    expect(window(sa).to).toBeLessThanOrEqual(window(sb).from);
    // b was queued behind a: it saw the queue before it was allowed through.
    const tb = sb.timing as Record<string, number>;
    expect(tb.queue_first_allowed_at! - tb.queue_first_seen_at!).toBeGreaterThan(1);
  });

  it('runs two suites at the same time', async () => {
    const one = await w.makeRepo(slowTest, { suite: { branch: 'master', test_pattern: '*_test.sh' } });
    const two = await w.makeRepo(slowTest, { suite: { branch: 'master', test_pattern: '*_test.sh' } });
    const [a, b] = await Promise.all([w.build(one), w.build(two)]);
    const [ea, eb] = await Promise.all([w.eventsOf(a.session), w.eventsOf(b.session)]);
    const [wa, wb] = [window(ea.at(-1)!), window(eb.at(-1)!)];
    expect(wa.from).toBeLessThan(wb.to);
    expect(wb.from).toBeLessThan(wa.to);
  });
});

describe('a receiver that is down, then up', () => {
  it('gets every event in order, each with the same xid on every attempt, without holding up builds', async () => {
    const port = await freePort();
    const hook = await w.sluice.admin<{ id: number }>('POST', `/api/v1/orgs/${w.org.id}/webhooks`, {
      url: `http://127.0.0.1:${port}/late`,
    });
    const repo = await w.makeRepo({ 'ok_test.sh': script('true') }, { suite: { branch: 'master', test_pattern: '*_test.sh' } });
    const first = await w.build(repo);
    const second = await w.build(repo, { force: true });

    // Both builds finish while the receiver is still down: it holds up nothing.
    const finished = async (session: number) => {
      const { rows } = await w.sluice.pool.query('SELECT status FROM sessions WHERE id = $1', [session]);
      return ['passed', 'failed', 'error'].includes(rows[0].status);
    };
    await eventually('both builds to finish', async () => (await finished(first.session)) && (await finished(second.session)));
    const { rows: failedAttempts } = await w.sluice.pool.query(
      "SELECT xid, event FROM deliveries WHERE webhook_id = $1 AND outcome = 'retrying'",
      [hook.id],
    );
    expect(failedAttempts.length).toBeGreaterThan(0);

    const late = await startReceiver({ port });
    try {
      const [e1, e2] = [await w.eventsOf(first.session, late), await w.eventsOf(second.session, late)];
      for (const events of [e1, e2]) {
        expect(events.map((e) => e.event)).toEqual(['received', 'start', 'test', 'stop']);
      }
      // Each event arrived once, with the xid it had on every failed attempt before. (The log
      // row of an attempt is written once the receiver has answered: wait for the last ones.)
      const log = await eventually('every delivery to be logged', async () => {
        const { rows } = await w.sluice.pool.query(
          'SELECT xid, event, session_id, attempt, outcome FROM deliveries WHERE webhook_id = $1 ORDER BY id',
          [hook.id],
        );
        return rows.filter((r) => r.outcome === 'delivered').length === e1.length + e2.length && rows;
      });
      for (const e of [...e1, ...e2]) {
        const attempts = log.filter((r) => r.xid === e.xid);
        expect(attempts.map((r) => r.event)).toEqual(attempts.map(() => e.event));
        expect(attempts.at(-1)).toMatchObject({ outcome: 'delivered', session_id: e.session });
        expect(attempts.map((r) => r.attempt)).toEqual(attempts.map((_, i) => i + 1));
      }
      const retried = [...e1, ...e2].filter((e) => log.filter((r) => r.xid === e.xid).length > 1);
      expect(retried.length).toBeGreaterThan(0);
      expect(late.requests.filter((r) => (r.json as Payload).session === first.session)).toHaveLength(4);
    } finally {
      await late.close();
    }
  });
});
