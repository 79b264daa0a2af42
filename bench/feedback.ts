/**
 * Feedback in seconds (issue 49), on Sluice in its production shape (the bench's cluster: the
 * API, a worker and four runner processes of one slot each):
 * - a trivial build (three files of `exit 0`) on a warm runner, trigger → `stop` at the
 *   receiver, the fastest of five, with where its time went, beside the same files run by `sh`;
 * - a burst of 20 builds of `workers: 2` triggered at once on the 4 slots: when the last ends,
 *   beside the time the slots allow (every file's run, one after another, ÷ 4). Before issue 49
 *   such a burst could hold every slot with a lane waiting for its partner, for good.
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Cluster, ClusterRepo } from '../test/support/cluster';
import { script } from '../test/support/world';
import { stepShares } from './suite';
import type { Row } from './table';

const BURST = 20;
const SLOTS = 4;
/** Each burst build: four files of this long. */
const FILE_S = 0.5;

export async function feedbackFigures(c: Cluster, log: (line: string) => void): Promise<Row[]> {
  return [await trivialBuild(c, log), await burst(c, log)];
}

/** When `stop` of `session` reached the receiver, ms since the epoch, and its payload. */
async function stopOf(c: Cluster, session: number): Promise<{ at: number; status: string; timing: Record<string, number> }> {
  const stop = (await c.eventsOf(session, 600_000)).find((e) => e.event === 'stop')!;
  const arrived = c.receiver.requests.find((r) => (r.json as { xid?: string })?.xid === stop.xid)!;
  return { at: arrived.at, status: String(stop.status), timing: stop.timing as Record<string, number> };
}

async function trivialBuild(c: Cluster, log: (line: string) => void): Promise<Row> {
  const files = Object.fromEntries(['a', 'b', 'c'].map((n) => [`test/${n}_test.sh`, script('exit 0')]));
  const repo = await c.makeRepo(files, { branch: 'master', test_pattern: 'test/*_test.sh' });
  log('a trivial build: one cold, then five warm');
  let best: { whole: number; steps: string } | null = null;
  for (let i = 0; i < 6; i++) {
    const sent = Date.now();
    const stop = await stopOf(c, await c.build(repo, { branch: 'master', force: true }));
    if (stop.status !== 'passed') throw new Error(`the trivial build ended ${stop.status}`);
    const whole = (stop.at - sent) / 1000;
    if (i > 0 && (best === null || whole < best.whole)) best = { whole, steps: stepShares(stop.timing, sent, stop.at) };
  }
  // The same three files by sh alone, in a checkout of them.
  const dir = await mkdtemp(path.join(c.tmp, 'trivial-'));
  try {
    for (const n of ['a', 'b', 'c']) await writeFile(path.join(dir, `${n}_test.sh`), 'exit 0\n', { mode: 0o755 });
    const t = performance.now();
    execFileSync('sh', ['-c', 'for f in ./*_test.sh; do "$f"; done'], { cwd: dir });
    const alone = (performance.now() - t) / 1000;
    return {
      name: 'A trivial build (3 files of exit 0) on a warm runner: trigger → stop',
      value: best!.whole,
      unit: 's',
      baseline: { name: 'the three files run by sh', value: alone },
      target: { text: '≤ 0.6 s', met: best!.whole <= 0.6 },
      note: `the fastest of 5; where it went: ${best!.steps}`,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function burst(c: Cluster, log: (line: string) => void): Promise<Row> {
  const repos: ClusterRepo[] = [];
  for (let i = 0; i < BURST; i++) {
    const files = Object.fromEntries(['a', 'b', 'c', 'd'].map((n) => [`test/${n}_test.sh`, script(`sleep ${FILE_S}`)]));
    repos.push(await c.makeRepo(files, { branch: 'master', test_pattern: 'test/*_test.sh', workers: 2 }));
  }
  log(`a burst: ${BURST} builds of workers: 2 at once on ${SLOTS} slots`);
  const sent = Date.now();
  const sessions = await Promise.all(repos.map((r) => c.build(r, { branch: 'master' })));
  const stops = await Promise.all(sessions.map((s) => stopOf(c, s)));
  const wall = (Math.max(...stops.map((s) => s.at)) - sent) / 1000;
  const failed = stops.filter((s) => s.status !== 'passed').length;
  const { rows } = await c.db.pool.query<{ ms: string }>('SELECT sum(duration_ms) AS ms FROM test_results WHERE session_id = ANY($1::bigint[])', [sessions]);
  const allow = Number(rows[0]!.ms) / 1000 / SLOTS;
  return {
    name: `A burst of ${BURST} builds of workers: 2 on ${SLOTS} slots: trigger → the last stop`,
    value: wall,
    unit: 's',
    baseline: { name: `the time the slots allow (every file's run ÷ ${SLOTS})`, value: allow },
    target: { text: 'all end', met: failed === 0 && stops.length === BURST },
    note: `${(wall / allow).toFixed(2)}× what the slots allow; ${BURST - failed} of ${BURST} passed; the rest is each lane's checkout and setup, and the builds' own steps`,
  };
}
