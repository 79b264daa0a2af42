import { startCluster } from '../test/support/cluster';
import { script, sessionOfGuid, type Payload } from '../test/support/world';
async function main() {
  const c = await startCluster({ runners: 4 });
  const file = script('echo "start $(date +%s%N)"\necho "end $(date +%s%N)"');
  const repo = await c.makeRepo({ 'a_test.sh': file, 'b_test.sh': file }, { branch: 'master', test_pattern: '*_test.sh' });
  const rows: Record<string, number>[] = [];
  for (let i = 0; i < 12; i++) {
    const sent = Date.now() / 1000;
    const res = await fetch(repo.webhook_url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ branch: 'master', force: true }) });
    const acked = Date.now() / 1000;
    const session = await sessionOfGuid(c.db.pool, ((await res.json()) as { guid: string }).guid);
    const events = await c.eventsOf(session);
    const stop = events.at(-1)! as Payload & { timing: Record<string, number> };
    const { rows: out } = await c.db.pool.query<{ output: string }>('SELECT output FROM test_results WHERE session_id = $1', [session]);
    const first = Math.min(...out.map((r) => Number(/start (\d+)/.exec(r.output)![1]) / 1e9));
    const t = stop.timing;
    const startEv = c.receiver.requests.find((r) => (r.json as Payload)?.session === session && (r.json as Payload).event === 'start')!.at / 1000;
    rows.push({ ack: acked - sent, seen: t.queue_first_seen_at! - sent, allowed: t.queue_first_allowed_at! - sent, assigned: t.workers_assigned_at! - sent, startEvent: startEv - sent, setup: t.setup! - sent, exec: t.exec! - sent, firstTest: first - sent });
  }
  const keys = Object.keys(rows[0]!);
  const med = (k: string) => rows.map((r) => r[k]!).sort((a, b) => a - b)[Math.floor(rows.length / 2)]!;
  console.log(keys.map((k) => `${k}=${(med(k) * 1000).toFixed(0)}ms`).join(' '));
  await c.stop();
}
main().catch((e) => { console.error(e); process.exit(1); });
