/**
 * The runner figures (issue 9), measured on Sluice in its production shape (test/support/cluster.ts:
 * a Temporal server, the API, a worker and runner processes from `npm run build`):
 * - parallel efficiency = (sum of file durations ÷ N) ÷ (first file start → last file end), for
 *   N = 1, 2, 4 runners on 40 sleeping files of 0.5 s to 8 s, after one build that recorded their
 *   durations (longest first needs them); beside the best a longest-first schedule could do;
 * - a runner killed with SIGKILL while it runs a file: the time until the file runs elsewhere,
 *   beside the lease a lane holds a file under;
 * - orchestration per file: 300 files of `exit 0` at N = 1 and 4 (exec → post_build) on runners
 *   without a sandbox, beside running the same files with `sh` in a loop; on runners that hold
 *   only a token (their claims and results through the API) and on the default (sandboxed)
 *   runners beside that;
 * - the history of a 5,000-file build, beside Temporal's own limit.
 */
import { execFileSync } from 'node:child_process';
import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { LEASE_MS } from '../src/steps/tests/lane';
import type { Cluster, ClusterRepo } from '../test/support/cluster';
import type { RepoFiles } from '../test/support/gitRepo';
import { eventually } from '../test/support/wait';
import { script } from '../test/support/world';
import type { Row } from './table';
import { loadWorkflowIds } from '../src/temporal/ids';

/** Temporal's hard limit on a workflow's history (events), the default of `limit.historyCount.error`. */
const TEMPORAL_HISTORY_LIMIT = 51_200;

/** 40 files, 0.5 s to 8 s, unevenly: a few long ones, many short ones (68 s in all). */
const DURATIONS = [8, 8, 6, 6, 4, 4, 4, 2, 2, 2, 2, 2, ...Array(8).fill(1), ...Array(20).fill(0.5)] as number[];

export async function scaleFigures(c: Cluster, log: (line: string) => void): Promise<Row[]> {
  const rows: Row[] = [];
  const connection = await Connection.connect({ address: c.temporal.address });
  const client = new Client({ connection });
  try {
    rows.push(...(await efficiency(c, log)));
    rows.push(await runnerDeath(c, log));
    rows.push(...(await perFileCost(c, log)));
    rows.push(await history(c, client, log));
  } finally {
    await connection.close();
  }
  return rows;
}

async function buildAndWait(c: Cluster, repo: ClusterRepo, queue?: string): Promise<number> {
  const session = await c.build(repo, { branch: 'master', force: true, ...(queue ? { queue } : {}) });
  const events = await c.eventsOf(session, 600_000);
  const stop = events.find((e) => e.event === 'stop')!;
  if (stop.status !== 'passed') {
    const { rows } = await c.db.pool.query<{ path: string; output: string }>(
      "SELECT path, left(output, 500) AS output FROM test_results WHERE session_id = $1 AND status <> 'passed' LIMIT 3",
      [session],
    );
    const view = await c.admin<{ reason: string | null }>('GET', `/api/v1/sessions/${session}`);
    throw new Error(`session ${session} ended ${stop.status} (${view.reason ?? 'no reason'}): ${JSON.stringify(rows)}`);
  }
  return session;
}

async function setWorkers(c: Cluster, repo: ClusterRepo, workers: number): Promise<void> {
  const suites = await c.admin<Array<{ id: number }>>('GET', `/api/v1/repos/${repo.id}/suites`);
  await c.admin('PATCH', `/api/v1/repos/${repo.id}/suites/${suites[0]!.id}`, { workers });
}

/** The best makespan a longest-first schedule gets on `n` lanes. */
function lptMakespan(durations: number[], n: number): number {
  const lanes = Array<number>(n).fill(0);
  for (const d of [...durations].sort((a, b) => b - a)) {
    const i = lanes.indexOf(Math.min(...lanes));
    lanes[i]! += d;
  }
  return Math.max(...lanes);
}

async function efficiency(c: Cluster, log: (line: string) => void): Promise<Row[]> {
  const files: RepoFiles = Object.fromEntries(DURATIONS.map((d, i) => [`test/f${String(i).padStart(2, '0')}_test.sh`, script(`sleep ${d}`)]));
  const repo = await c.makeRepo(files, { branch: 'master', test_pattern: 'test/*_test.sh', workers: 4 });
  log('efficiency: a first build records the files\' durations');
  await buildAndWait(c, repo);
  const sum = DURATIONS.reduce((a, b) => a + b, 0);
  const rows: Row[] = [];
  for (const n of [1, 2, 4]) {
    await setWorkers(c, repo, n);
    log(`efficiency: N = ${n}`);
    const session = await buildAndWait(c, repo);
    const { rows: span } = await c.db.pool.query<{ wall: number; sum: number }>(
      `SELECT extract(epoch FROM max(finished_at) - min(finished_at - duration_ms * interval '1 millisecond'))::float8 AS wall,
              sum(duration_ms)::float8 / 1000 AS sum
         FROM test_results WHERE session_id = $1`,
      [session],
    );
    const { wall, sum: measured } = span[0]!;
    const value = measured / n / wall;
    const best = sum / n / lptMakespan(DURATIONS, n);
    rows.push({
      name: `Parallel efficiency, N = ${n} runner process${n === 1 ? '' : 'es'} (40 files, 0.5–8 s)`,
      value,
      unit: '',
      baseline: { name: 'longest-first on these durations', value: best },
      target: n === 4 ? { text: '≥ 0.9', met: value >= 0.9 } : undefined,
      note: `${wall.toFixed(1)} s from first start to last end; files summed ${measured.toFixed(1)} s`,
    });
  }
  return rows;
}

/** The queue of the two runners the runner-death figure kills one of. */
const DEATH_QUEUE = 'sluice-bench-death';

async function runnerDeath(c: Cluster, log: (line: string) => void): Promise<Row> {
  // The slow file tells the bench its runner's pid and when it started through files of the
  // bench's, which bubblewrap's private /tmp and PID namespace would hide: two more runners
  // without it, on a queue of their own, and a directory the build user may write in.
  await Promise.all([0, 1].map(() => c.addRunner({ SLUICE_SANDBOX: 'none', SLUICE_BUILD_QUEUE: DEATH_QUEUE })));
  const tmp = await mkdtemp(path.join(os.tmpdir(), 'sluice-bench-death-'));
  await chmod(tmp, 0o1777);
  try {
    const starts = path.join(tmp, 'starts.log');
    const marker = path.join(tmp, 'first');
    // Logs each start (ns clock, runner pid); the first run hangs until its runner is killed.
    const slow = script(`echo "$(date +%s%N) $PPID" >> ${starts}\nif [ ! -e ${marker} ]; then touch ${marker}; sleep 600; fi`);
    const repo = await c.makeRepo({ 'test/slow_test.sh': slow, 'test/other_test.sh': script('sleep 1') }, { branch: 'master', test_pattern: 'test/*_test.sh', workers: 2 });
    const session = await c.build(repo, { branch: 'master', queue: DEATH_QUEUE });
    const first = await eventually('the slow file to start', async () => (await readFile(starts, 'utf8').catch(() => '')).split('\n')[0]?.match(/^\d+ (\d+)$/));
    const victim = c.runners.find((r) => r.pid === Number(first[1]))!;
    log(`runner death: killing runner ${victim.pid}`);
    const killedAt = Date.now();
    victim.kill('SIGKILL');
    await victim.exited;
    const again = await eventually('the slow file to run again', async () => (await readFile(starts, 'utf8')).split('\n')[1]?.match(/^(\d+) \d+$/), 120_000);
    const seconds = (Number(BigInt(again[1]!) / 1_000_000n) - killedAt) / 1000;
    await c.eventsOf(session);
    c.runners.splice(c.runners.indexOf(victim), 1);
    return {
      name: 'Runner killed (SIGKILL) → its file running on another runner',
      value: seconds,
      unit: 's',
      baseline: { name: 'lease a lane holds a file under', value: LEASE_MS / 1000 },
      note: 'counted once; the build passed',
    };
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}

/** The queue of the runners without bubblewrap the per-file figure measures orchestration on. */
const BARE_QUEUE = 'sluice-bench-scale-bare';
/** The same, for runners that hold only a token (their records and results go through the API). */
const TOKEN_QUEUE = 'sluice-bench-scale-token';

/**
 * Issue 22's target is Sluice's own orchestration, so it is measured on runners with
 * SLUICE_SANDBOX=none; the default runners' figure beside it adds bubblewrap's start per file,
 * which issue 23 bounds separately (≤ bare + 10 ms).
 */
async function perFileCost(c: Cluster, log: (line: string) => void): Promise<Row[]> {
  const files: RepoFiles = Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`test/t${String(i).padStart(3, '0')}_test.sh`, script('exit 0')]));
  const repo = await c.makeRepo(files, { branch: 'master', test_pattern: 'test/*_test.sh', workers: 1 });
  log('per-file cost: four more runners, SLUICE_SANDBOX=none, on a queue of their own, and four with a runner token on another');
  const { token } = await c.admin<{ token: string }>('POST', '/api/v1/runner-tokens', { name: 'bench-scale' });
  await Promise.all([
    ...[0, 1, 2, 3].map(() => c.addRunner({ SLUICE_SANDBOX: 'none', SLUICE_BUILD_QUEUE: BARE_QUEUE })),
    ...[0, 1, 2, 3].map(() => c.addRunner({ SLUICE_SANDBOX: 'none', SLUICE_BUILD_QUEUE: TOKEN_QUEUE, SLUICE_RUNNER_TOKEN: token, DATABASE_URL: '', SLUICE_SECRET_KEY: '' })),
  ]);
  // The same files run with sh in a loop, from a clone of the same repository.
  const clone = await mkdtemp(path.join(os.tmpdir(), 'sluice-bench-sh-'));
  const rows: Row[] = [];
  const perFileMs = async (queue: string | undefined) => {
    const session = await buildAndWait(c, repo, queue);
    const { rows: t } = await c.db.pool.query<{ exec: number; post: number }>(
      "SELECT (timing->>'exec')::float8 AS exec, (timing->>'post_build')::float8 AS post FROM sessions WHERE id = $1",
      [session],
    );
    return ((t[0]!.post - t[0]!.exec) * 1000) / 300;
  };
  try {
    execFileSync('git', ['clone', '--quiet', repo.bare, clone]);
    for (const n of [1, 4]) {
      await setWorkers(c, repo, n);
      log(`per-file cost: N = ${n}`);
      const bare = await perFileMs(BARE_QUEUE);
      const keyless = await perFileMs(TOKEN_QUEUE);
      const sandboxed = await perFileMs(undefined);
      const started = performance.now();
      execFileSync('sh', ['-c', 'for f in test/*_test.sh; do ./"$f"; done'], { cwd: clone });
      const shMs = (performance.now() - started) / 300;
      rows.push({
        name: `Per-file cost, 300 files of \`exit 0\`, N = ${n}, SLUICE_SANDBOX=none (exec → post_build ÷ 300)`,
        value: bare,
        unit: 'ms',
        baseline: { name: 'sh in a loop', value: shMs },
        target: { text: '≤ 3 × sh', met: bare <= 3 * shMs },
        note: `${(bare / shMs).toFixed(2)}× sh; ${(bare - shMs).toFixed(2)} ms of orchestration a file`,
      });
      rows.push({
        name: `Per-file cost, the same on runners with a token (no keys: all through the API), N = ${n}`,
        value: keyless,
        unit: 'ms',
        baseline: { name: 'keyed runners, SLUICE_SANDBOX=none, above', value: bare },
        target: { text: '≤ 3 × sh', met: keyless <= 3 * shMs },
        note: `${(keyless / bare).toFixed(2)}× keyed; ${(keyless / shMs).toFixed(2)}× sh`,
      });
      rows.push({
        name: `Per-file cost, the same on the default runners (bubblewrap), N = ${n}`,
        value: sandboxed,
        unit: 'ms',
        baseline: { name: 'SLUICE_SANDBOX=none, above', value: bare },
        target: { text: '≤ bare + 10 ms', met: sandboxed <= bare + 10 },
        note: `${(sandboxed - bare).toFixed(2)} ms a file for the sandbox`,
      });
    }
  } finally {
    await rm(clone, { recursive: true, force: true });
  }
  return rows;
}

async function history(c: Cluster, client: Client, log: (line: string) => void): Promise<Row> {
  const files: RepoFiles = Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`test/h${String(i).padStart(4, '0')}_test.sh`, script('exit 0')]));
  const repo = await c.makeRepo(files, { branch: 'master', test_pattern: 'test/*_test.sh', workers: 4 });
  log('history: a build of 5,000 files');
  const started = Date.now();
  const session = await buildAndWait(c, repo);
  const seconds = (Date.now() - started) / 1000;
  const events = (await client.workflow.getHandle((await loadWorkflowIds(c.db.pool)).session(session)).fetchHistory()).events?.length ?? 0;
  return {
    name: 'History of a 5,000-file build (N = 4), events',
    value: events,
    unit: 'events',
    baseline: { name: "Temporal's limit", value: TEMPORAL_HISTORY_LIMIT },
    note: `the build took ${seconds.toFixed(0)} s from trigger to stop`,
  };
}
