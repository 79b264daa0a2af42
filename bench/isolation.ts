/**
 * What isolating builds costs (issue 23), in one run: the same builds on the cluster's runners
 * (the default: each build process in bubblewrap) and on one more runner started with
 * SLUICE_SANDBOX=none, serving a build queue of its own (a trigger's `queue`), in turns, three
 * times each, the best of each kept. A root runner runs builds as its unprivileged build user
 * either way, so the difference is bubblewrap's:
 * - plain mode: 200 files of `exit 0`, one process each, `workers: 1` (exec → post_build ÷ 200);
 * - batch mode: expressjs/express's mocha suite with `{files}` (when a copy is here),
 *   `workers: 1`: the test span (exec → post_build).
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import type { Cluster, ClusterRepo } from '../test/support/cluster';
import type { RepoFiles } from '../test/support/gitRepo';
import { script } from '../test/support/world';
import { EXPRESS, SUITES } from './suite';
import type { Row } from './table';

/** The queue the unsandboxed runner serves, and only it. */
const BARE_QUEUE = 'sluice-bench-unsandboxed';
const FILES = 200;
const ROUNDS = 3;

export async function isolationFigures(c: Cluster, log: (line: string) => void): Promise<Row[]> {
  log('isolation: one more runner, SLUICE_SANDBOX=none, on a queue of its own');
  await c.addRunner({ SLUICE_SANDBOX: 'none', SLUICE_BUILD_QUEUE: BARE_QUEUE });
  const rows: Row[] = [];

  const files: RepoFiles = Object.fromEntries(Array.from({ length: FILES }, (_, i) => [`test/t${String(i).padStart(3, '0')}_test.sh`, script('exit 0')]));
  const plain = await c.makeRepo(files, { branch: 'master', test_pattern: 'test/*_test.sh', workers: 1 });
  const perFile = await inTurns(c, plain, 'master', log, 'plain mode', (t) => (t * 1000) / FILES);
  rows.push({
    name: `Isolation, plain mode: per test file (${FILES} files of \`exit 0\`, exec → post_build ÷ ${FILES}, best of ${ROUNDS})`,
    value: perFile.sandboxed,
    unit: 'ms',
    baseline: { name: 'the same on a runner with SLUICE_SANDBOX=none', value: perFile.bare },
    target: { text: '≤ bare + 10 ms', met: perFile.sandboxed <= perFile.bare + 10 },
    note: `${(perFile.sandboxed - perFile.bare).toFixed(2)} ms a file for bubblewrap (both sides run builds as the build user when root)`,
  });

  const express = SUITES.find((s) => s.source === EXPRESS)!;
  if (!existsSync(EXPRESS)) {
    log(`isolation: batch mode skipped, no copy of express at ${EXPRESS} (SLUICE_BENCH_EXPRESS)`);
    return rows;
  }
  const work = await mkdtemp(path.join(c.tmp, 'isolation-'));
  try {
    const bare = path.join(work, 'express.git');
    execFileSync('git', ['clone', '--bare', '--quiet', EXPRESS, bare]);
    const branch = execFileSync('git', ['symbolic-ref', '--short', 'HEAD'], { cwd: bare, encoding: 'utf8' }).trim();
    const repo = await c.addRepo(bare, { branch, workers: 1, ...express.sluice });
    log('isolation: express, a cold build on each side first (install, cache, durations)');
    await span(c, repo, branch, undefined);
    await span(c, repo, branch, BARE_QUEUE);
    const batch = await inTurns(c, repo, branch, log, 'batch mode', (t) => t);
    rows.push({
      name: `Isolation, batch mode: expressjs/express's test span (88 mocha files, {files}, workers: 1, best of ${ROUNDS})`,
      value: batch.sandboxed,
      unit: 's',
      baseline: { name: 'the same on a runner with SLUICE_SANDBOX=none', value: batch.bare },
      target: { text: 'nothing measurable (≤ bare + 5 %)', met: batch.sandboxed <= batch.bare * 1.05 },
      note: `${((batch.sandboxed / batch.bare - 1) * 100).toFixed(1)} % of the span`,
    });
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  return rows;
}

/** The build's test span in seconds on the default runners (queue undefined) or the unsandboxed one. */
async function span(c: Cluster, repo: ClusterRepo, branch: string, queue: string | undefined): Promise<number> {
  const session = await c.build(repo, { branch, force: true, ...(queue ? { queue } : {}) });
  const stop = (await c.eventsOf(session, 600_000)).find((e) => e.event === 'stop')!;
  if (stop.status !== 'passed') throw new Error(`session ${session} ended ${String(stop.status)}`);
  const t = stop.timing as Record<string, number>;
  return t.post_build! - t.exec!;
}

/** Builds on each side in turns, ROUNDS times; the best of each side, through `figure`. */
async function inTurns(
  c: Cluster,
  repo: ClusterRepo,
  branch: string,
  log: (line: string) => void,
  what: string,
  figure: (seconds: number) => number,
): Promise<{ sandboxed: number; bare: number }> {
  let sandboxed = Infinity;
  let bare = Infinity;
  for (let round = 1; round <= ROUNDS; round++) {
    log(`isolation: ${what}, round ${round} of ${ROUNDS}`);
    sandboxed = Math.min(sandboxed, figure(await span(c, repo, branch, undefined)));
    bare = Math.min(bare, figure(await span(c, repo, branch, BARE_QUEUE)));
  }
  return { sandboxed, bare };
}
