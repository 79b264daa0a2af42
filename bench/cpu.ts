/**
 * Where the CPU went while a build ran: the processes of Sluice's cluster (API, worker, runners;
 * each its own, not its children's, so a runner's count leaves out the tests it started), the
 * Temporal server and every PostgreSQL process, sampled from /proc every SAMPLE_MS. On a machine
 * whose cores the tests use fully, what these spend during the test span is time the tests lose.
 */
import { readFileSync, readdirSync } from 'node:fs';
import type { Cluster } from '../test/support/cluster';

const SAMPLE_MS = 200;
/** Clock ticks a second (getconf CLK_TCK: 100 on Linux everywhere we run). */
const TICKS = 100;

type Group = 'api' | 'worker' | 'runners' | 'temporal' | 'postgresql';
interface Sample {
  at: number;
  cpu: Record<Group, number>;
}

/** CPU seconds of one process (user + system, itself only), or 0 when it is gone. */
function cpuOf(pid: number): number {
  try {
    // Fields after the command (which may hold spaces), counted from its closing parenthesis.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / TICKS;
  } catch {
    return 0;
  }
}

function postgresPids(): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === 'postgres') pids.push(Number(entry));
    } catch {
      // Gone between the listing and the read.
    }
  }
  return pids;
}

export interface CpuRecorder {
  /** CPU seconds each group spent between two epoch times (ms), from the samples around them. */
  between(fromMs: number, toMs: number): Record<Group, number>;
  stop(): void;
}

export function recordCpu(c: Cluster): CpuRecorder {
  const samples: Sample[] = [];
  const sample = () => {
    const pg = postgresPids();
    samples.push({
      at: Date.now(),
      cpu: {
        api: cpuOf(c.api.pid),
        worker: cpuOf(c.worker.pid),
        runners: c.runners.reduce((sum, r) => sum + cpuOf(r.pid), 0),
        temporal: cpuOf(c.temporal.pid),
        postgresql: pg.reduce((sum, pid) => sum + cpuOf(pid), 0),
      },
    });
  };
  sample();
  const timer = setInterval(sample, SAMPLE_MS);
  return {
    between(fromMs, toMs) {
      const at = (t: number) => samples.reduce((best, s) => (Math.abs(s.at - t) < Math.abs(best.at - t) ? s : best));
      const [a, b] = [at(fromMs), at(toMs)];
      // PostgreSQL's backends come and go: one that ended between the samples takes its count
      // with it, so its group's difference can only be read as at least this much.
      return Object.fromEntries(Object.keys(a.cpu).map((g) => [g, Math.max(0, b.cpu[g as Group] - a.cpu[g as Group])])) as Record<Group, number>;
    },
    stop: () => clearInterval(timer),
  };
}

/** "API 0.3 s, worker 0.1 s, ..." for a table's note. */
export function describeCpu(cpu: Record<Group, number>): string {
  const names: Record<Group, string> = { api: 'API', worker: 'worker', runners: 'runners', temporal: 'Temporal', postgresql: 'PostgreSQL' };
  const total = Object.values(cpu).reduce((a, b) => a + b, 0);
  return `${total.toFixed(1)} CPU-s (${(Object.keys(names) as Group[]).map((g) => `${names[g]} ${cpu[g].toFixed(1)}`).join(', ')})`;
}
