/**
 * The event figures (issue 11), on Sluice in its production shape (test/support/cluster.ts),
 * each beside a baseline from the same run:
 * - P1 ingest: triggers/s and p50/p99 acknowledgement latency with 10, 20 and 50 clients, and at an
 *   open-loop 100/s, beside bare `signalWithStart` calls on the same Temporal server;
 * - P2 overhead: trigger → first test process start minus a clone, and last test exit → `stop`
 *   at the receiver, p50 over 20 builds of two files; beside `git clone` over the same SSH;
 * - P4 events: trigger → `received` at the receiver during a burst of 600 triggers on one
 *   branch and on 100 branches (20 clients), beside the trigger's own acknowledgement; and a
 *   webhook closure's cost per call (warm), beside the same transform as plain JavaScript.
 * Repositories have CI squash on where a burst would otherwise queue hundreds of builds.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { unseal } from '../src/crypto/sealed';
import { runClosure } from '../src/delivery/closure';
import type { Cluster, ClusterRepo } from '../test/support/cluster';
import { git } from '../test/support/gitRepo';
import { eventually } from '../test/support/wait';
import { script, sessionOfGuid, type Payload } from '../test/support/world';
import { describeCpu, recordCpu } from './cpu';
import { closedLoop, openLoop, quantile, type Load } from './load';
import type { Row } from './table';

const sum = (cpu: Record<string, number>): number => Object.values(cpu).reduce((a, b) => a + b, 0);

const run = promisify(execFile);

export async function eventFigures(c: Cluster, log: (line: string) => void): Promise<Row[]> {
  const connection = await Connection.connect({ address: c.temporal.address });
  const client = new Client({ connection });
  try {
    // SLUICE_BENCH_EVENTS=p4 (or a list: p1,p2,p4,closure) runs only those, for a quick look at one figure.
    const only = process.env.SLUICE_BENCH_EVENTS?.split(',');
    const part = (name: string) => only === undefined || only.includes(name);
    return [
      ...(part('p1') ? await ingest(c, client, log) : []),
      ...(part('p2') ? await overhead(c, log) : []),
      ...(part('p4') ? await bursts(c, log) : []),
      ...(part('closure') ? await closureCost(log) : []),
    ];
  } finally {
    await connection.close();
  }
}

/** The guids each repository's triggers were answered with, so far. */
const accepts = new Map<number, string[]>();

async function trigger(repo: ClusterRepo, body: unknown): Promise<string> {
  const res = await fetch(repo.webhook_url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`trigger answered ${res.status}: ${text}`);
  const guid = (JSON.parse(text) as { guid: string }).guid;
  accepts.set(repo.id, [...(accepts.get(repo.id) ?? []), guid]);
  return guid;
}

/**
 * Waits until every trigger of the repository accepted so far is recorded (the suites write them
 * after the answer) and every one of its sessions has ended (its `stop` reached the receiver).
 */
async function settle(c: Cluster, repo: ClusterRepo): Promise<void> {
  const accepted = (accepts.get(repo.id) ?? []).length;
  const rows = await eventually(
    `the ${accepted} triggers of repository ${repo.id} to be recorded`,
    async () => {
      const { rows } = await c.db.pool.query<{ id: number }>(
        'SELECT s.id FROM sessions s JOIN suites su ON su.id = s.suite_id WHERE su.repo_id = $1',
        [repo.id],
      );
      return rows.length >= accepted ? rows : undefined;
    },
    600_000,
  );
  const ids = new Set(rows.map((r) => Number(r.id)));
  await eventually(
    `the ${ids.size} sessions of repository ${repo.id} to end`,
    async () => {
      const stopped = new Set(c.receiver.requests.map((r) => r.json as Payload).filter((p) => p?.event === 'stop').map((p) => p.session));
      return [...ids].every((id) => stopped.has(id));
    },
    600_000,
  );
}

// --- P1 ---------------------------------------------------------------------------------------

async function ingest(c: Cluster, client: Client, log: (line: string) => void): Promise<Row[]> {
  const repo = await c.makeRepo({ 'a_test.sh': script('true') }, { branch: 'master', test_pattern: '*_test.sh' });
  await c.admin('PATCH', `/api/v1/repos/${repo.id}`, { ci_squash: true });
  const TOTAL = 300;
  // Bare: the one Temporal call an accepted trigger needs, on a queue nobody polls.
  const bare = (i: number) =>
    client.workflow.signalWithStart('benchBare', {
      workflowId: `bench-bare-${randomUUID()}`,
      taskQueue: 'bench-nobody',
      args: [{ i }],
      signal: 'enqueue',
      signalArgs: [{ sessionId: i, queuePosition: 'tail' }],
    });
  const sluice = () => trigger(repo, { branch: 'master', force: true });

  const rows: Row[] = [];
  const compare = (what: string, s: Load, b: Load, target: number | null) => {
    rows.push({
      name: `P1 ingest, ${what}: triggers/s`,
      value: s.rate,
      unit: '/s',
      baseline: { name: 'bare signalWithStart', value: b.rate },
      ...(target !== null ? { target: { text: `≥ ${target} × bare`, met: s.rate >= target * b.rate } } : {}),
      note: `${(s.rate / b.rate).toFixed(2)} of bare`,
    });
    for (const q of [0.5, 0.99]) {
      rows.push({
        name: `P1 ingest, ${what}: ack p${q * 100}`,
        value: quantile(s.latencies, q),
        unit: 'ms',
        baseline: { name: 'bare signalWithStart', value: quantile(b.latencies, q) },
      });
    }
  };
  // Targets: 0.9 × bare at 10 and 50 clients (issue 11), 0.8 × at 20 (issue 24's trigger path).
  const cpu = recordCpu(c);
  try {
    for (const [clients, target] of [[10, 0.9], [20, 0.8], [50, 0.9]] as const) {
      log(`P1: ${TOTAL} triggers and ${TOTAL} bare calls at ${clients} clients`);
      const t0 = Date.now();
      const b = await closedLoop(TOTAL, clients, bare);
      const t1 = Date.now();
      const s = await closedLoop(TOTAL, clients, sluice);
      const t2 = Date.now();
      await settle(c, repo);
      compare(`${clients} clients`, s, b, target);
      // Where the CPU went: during each loop, and Sluice's until every trigger had ended.
      rows.push({
        name: `P1 ingest, ${clients} clients: CPU while answering ${TOTAL}`,
        value: sum(cpu.between(t1, t2)),
        unit: 'CPU-s',
        baseline: { name: 'bare signalWithStart', value: sum(cpu.between(t0, t1)) },
        note: `Sluice ${describeCpu(cpu.between(t1, t2))}; to the last stop ${describeCpu(cpu.between(t1, Date.now()))}; bare ${describeCpu(cpu.between(t0, t1))}`,
      });
    }
  } finally {
    cpu.stop();
  }
  log(`P1: ${TOTAL} triggers and ${TOTAL} bare calls open-loop at 100/s`);
  const b = await openLoop(TOTAL, 100, bare);
  const s = await openLoop(TOTAL, 100, sluice);
  await settle(c, repo);
  compare('open loop 100/s', s, b, null);
  return rows;
}

// --- P2 ---------------------------------------------------------------------------------------

async function overhead(c: Cluster, log: (line: string) => void): Promise<Row[]> {
  // Each file says when it started and ended, in the runner's clock (this machine's).
  const file = script('echo "start $(date +%s%N)"\necho "end $(date +%s%N)"');
  const repo = await c.makeRepo({ 'a_test.sh': file, 'b_test.sh': file }, { branch: 'master', test_pattern: '*_test.sh' });
  const BUILDS = 20;
  const toStart: number[] = [];
  const toStop: number[] = [];
  log(`P2: ${BUILDS} builds of two files, one after another`);
  for (let i = 0; i < BUILDS; i++) {
    const sent = Date.now();
    const session = await sessionOfGuid(c.db.pool, await trigger(repo, { branch: 'master', force: true }));
    await c.eventsOf(session);
    const stopAt = c.receiver.requests.find((r) => (r.json as Payload | undefined)?.session === session && (r.json as Payload).event === 'stop')!.at;
    const { rows } = await c.db.pool.query<{ output: string }>('SELECT output FROM test_results WHERE session_id = $1', [session]);
    const stamps = (word: string) => rows.map((r) => Number(new RegExp(`${word} (\\d+)`).exec(r.output)![1]) / 1e6);
    toStart.push(Math.min(...stamps('start')) - sent);
    toStop.push(stopAt - Math.max(...stamps('end')));
  }
  // The clone a build cannot do without, over the same SSH server with the repository's key.
  const clones: number[] = [];
  const tmp = await mkdtemp(path.join(os.tmpdir(), 'sluice-bench-clone-'));
  try {
    const { rows } = await c.db.pool.query<{ pull_url: string; ssh_private_key_sealed: string }>(
      'SELECT pull_url, ssh_private_key_sealed FROM repos WHERE id = $1',
      [repo.id],
    );
    const keyFile = path.join(tmp, 'key');
    const key = unseal(Buffer.from(c.env.SLUICE_SECRET_KEY!, 'base64'), rows[0]!.ssh_private_key_sealed);
    await writeFile(keyFile, key.endsWith('\n') ? key : `${key}\n`, { mode: 0o600 });
    for (let i = 0; i < BUILDS; i++) {
      const dir = path.join(tmp, `clone-${i}`);
      const t0 = performance.now();
      await cloneOverSsh(rows[0]!.pull_url, dir, keyFile);
      clones.push(performance.now() - t0);
    }
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
  const clone = quantile(clones, 0.5);
  const start = quantile(toStart, 0.5) - clone;
  const stop = quantile(toStop, 0.5);
  return [
    {
      name: 'P2 trigger → first test start, minus a clone (p50 of 20)',
      value: start,
      unit: 'ms',
      baseline: { name: 'git clone over SSH, p50', value: clone },
      target: { text: '< 300 ms', met: start < 300 },
      note: `trigger → first test start ${quantile(toStart, 0.5).toFixed(0)} ms`,
    },
    {
      name: 'P2 last test exit → `stop` at the receiver (p50 of 20)',
      value: stop,
      unit: 'ms',
      baseline: null,
      target: { text: '< 300 ms', met: stop < 300 },
    },
  ];
}

async function cloneOverSsh(url: string, dir: string, keyFile: string): Promise<void> {
  const ssh = ['ssh', '-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null', '-o', 'LogLevel=ERROR', '-o', 'IdentitiesOnly=yes', '-i', keyFile];
  await run('git', ['clone', '--quiet', url, dir], { env: { PATH: process.env.PATH, GIT_SSH_COMMAND: ssh.join(' '), HOME: os.tmpdir() } });
}

// --- P4 ---------------------------------------------------------------------------------------

async function bursts(c: Cluster, log: (line: string) => void): Promise<Row[]> {
  const rows: Row[] = [];
  for (const branches of [1, 100]) {
    const repo = await c.makeRepo({ 'a_test.sh': script('true') }, { branch: 'b0', test_pattern: '*_test.sh' });
    await c.admin('PATCH', `/api/v1/repos/${repo.id}`, { ci_squash: true });
    const master = await git(repo.bare, ['rev-parse', 'refs/heads/master']);
    for (let b = 0; b < branches; b++) {
      await git(repo.bare, ['update-ref', `refs/heads/b${b}`, master]);
      if (b > 0) await c.admin('POST', `/api/v1/repos/${repo.id}/suites`, { branch: `b${b}`, test_pattern: '*_test.sh' });
    }
    const TOTAL = 600;
    log(`P4: a burst of ${TOTAL} triggers on ${branches} branch${branches === 1 ? '' : 'es'}, 20 clients`);
    const sent: { guid: string; at: number }[] = [];
    const load = await closedLoop(TOTAL, 20, async (i) => {
      const at = Date.now();
      sent.push({ guid: await trigger(repo, { branch: `b${i % branches}`, force: true }), at });
    });
    await settle(c, repo);
    const { rows: ids } = await c.db.pool.query<{ guid: string; id: string }>(
      'SELECT e.guid, s.id FROM sessions s JOIN ci_events e ON e.id = s.ci_event_id WHERE e.guid = ANY($1)',
      [sent.map((s) => s.guid)],
    );
    const sessionOf = new Map(ids.map((r) => [r.guid, Number(r.id)]));
    const receivedAt = new Map<number, number>();
    for (const r of c.receiver.requests) {
      const p = r.json as Payload | undefined;
      if (p?.event === 'received' && !receivedAt.has(p.session)) receivedAt.set(p.session, r.at);
    }
    const lags = sent.map((s) => receivedAt.get(sessionOf.get(s.guid)!)! - s.at);
    const what = branches === 1 ? 'one branch' : `${branches} branches`;
    rows.push(
      {
        name: `P4 trigger → \`received\`, ${TOTAL} on ${what}: p50`,
        value: quantile(lags, 0.5),
        unit: 'ms',
        baseline: { name: 'trigger acknowledged, p50', value: quantile(load.latencies, 0.5) },
      },
      {
        name: `P4 trigger → \`received\`, ${TOTAL} on ${what}: p99`,
        value: quantile(lags, 0.99),
        unit: 'ms',
        baseline: { name: 'trigger acknowledged, p99', value: quantile(load.latencies, 0.99) },
        target: { text: '< 1 s', met: quantile(lags, 0.99) < 1000 },
        note: `ingest ${load.rate.toFixed(0)} triggers/s`,
      },
    );
  }
  return rows;
}

/** A typical closure (spec §2): reshape the payload into a chat-like message. */
const CLOSURE = `function transform_payload(p) {
  return { text: p.repository.name + " " + p.branch + " #" + p.session + ": " + p.status, counts: p.counts };
}`;

async function closureCost(log: (line: string) => void): Promise<Row[]> {
  const payload = {
    event: 'stop',
    session: 42,
    status: 'passed',
    branch: 'master',
    counts: { passed: 10, failed: 0 },
    repository: { name: 'app', url: 'ssh://x/app', org_name: 'acme' },
  };
  const native = (p: typeof payload) => JSON.parse(JSON.stringify({ text: `${p.repository.name} ${p.branch} #${p.session}: ${p.status}`, counts: p.counts })) as unknown;
  const CALLS = 2_000;
  log(`P4: ${CALLS} warm closure runs`);
  for (let i = 0; i < 50; i++) await runClosure(CLOSURE, payload); // warm: engine loaded, instance made
  let t0 = performance.now();
  for (let i = 0; i < CALLS; i++) await runClosure(CLOSURE, payload);
  const perCall = ((performance.now() - t0) * 1000) / CALLS;
  t0 = performance.now();
  for (let i = 0; i < CALLS; i++) native(JSON.parse(JSON.stringify(payload)) as typeof payload);
  const nativePerCall = ((performance.now() - t0) * 1000) / CALLS;
  return [
    {
      name: 'P4 closure run, warm, per call',
      value: perCall,
      unit: 'µs',
      baseline: { name: 'the same transform in plain JavaScript', value: nativePerCall },
    },
  ];
}
