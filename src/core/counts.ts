import type { Counts, SessionStatus, TestStatus } from './types';

/** All-zero counts (spec §2 keys), the shape every payload carries. */
export function emptyCounts(): Counts {
  return { notstarted: 0, started: 0, passed: 0, failed: 0, pending: 0, skipped: 0, error: 0 };
}

/**
 * Counts of test files: `total` discovered, `running` under way, and the statuses of those done.
 * Every file is in exactly one bucket, so the values always add up to `total`.
 */
export function countTests(total: number, running: number, done: readonly TestStatus[]): Counts {
  const counts = emptyCounts();
  for (const status of done) counts[status] += 1;
  counts.started = running;
  counts.notstarted = Math.max(0, total - running - done.length);
  return counts;
}

/**
 * The session's status from its finished test files: any failure makes it `failed`; else any
 * file that could not run properly (crash, time-out) makes it `error`; else `passed`.
 */
export function finalStatus(done: readonly TestStatus[]): SessionStatus {
  if (done.includes('failed')) return 'failed';
  if (done.includes('error')) return 'error';
  return 'passed';
}

/** A test result that counts as the "first failure" of spec §6. */
export function isFailure(status: TestStatus): boolean {
  return status === 'failed' || status === 'error';
}

/** Counts of a plan: the sum of its sessions' counts. */
export function sumCounts(all: readonly Counts[]): Counts {
  const sum = emptyCounts();
  for (const c of all) for (const k of Object.keys(sum) as (keyof Counts)[]) sum[k] += c[k];
  return sum;
}

/**
 * The status of a plan from its sessions': stopped if it was stopped, else failed if any
 * failed, else error if any erred (or none ran), else passed.
 */
export function planStatus(statuses: readonly SessionStatus[]): SessionStatus {
  if (statuses.includes('stopped')) return 'stopped';
  if (statuses.includes('failed')) return 'failed';
  if (statuses.length === 0 || statuses.some((s) => s !== 'passed' && s !== 'skipped')) return 'error';
  return 'passed';
}
