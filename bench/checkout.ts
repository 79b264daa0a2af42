/**
 * The checkout figures (issue 39, P8): a repository of 50,000 commits and about 500 MB of history
 * (generated with `git fast-import`: each commit changes one of 1,000 files to 10 KiB of random
 * bytes, which no delta or zlib shrinks), served by the tests' SSH git server on loopback, and
 * pulled the way a runner pulls (steps/checkout/git.ts with its mirror, mirror.ts):
 * - cold (the runner has no mirror) beside a plain `git clone` over the same SSH with the same key;
 * - warm (the mirror has the commit) beside `git worktree add` of that commit from a local mirror;
 * - how many times a build of four workers asks the site, with the mirror and without.
 * Each figure the median of its runs, the two sides in turns, after a `sync`.
 * `SLUICE_BENCH_COMMITS` and `SLUICE_BENCH_BLOB_BYTES` scale the repository down for a quick look.
 */
import { execFile, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { fetchRepository, type FetchRepositoryInput } from '../src/steps/checkout/git';
import { generateRepoKeyPair } from '../src/ssh/keys';
import type { Cluster } from '../test/support/cluster';
import { startSshGitServer } from '../test/support/sshGitServer';
import { pushCommit } from '../test/support/gitRepo';
import type { Row } from './table';

const execFileAsync = promisify(execFile);
const COMMITS = Number(process.env.SLUICE_BENCH_COMMITS ?? 50_000);
const BLOB_BYTES = Number(process.env.SLUICE_BENCH_BLOB_BYTES ?? 10 * 1024);
const FILES = 1_000;
const COLD_RUNS = 3;
const WARM_RUNS = 9;

const TIMELINE_RUNS = 5;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** `git fast-import` of COMMITS commits on master, each writing one file of random bytes. */
async function generate(bare: string): Promise<void> {
  execFileSync('git', ['init', '--quiet', '--bare', '--initial-branch=master', bare]);
  const child = spawn('git', ['--git-dir', bare, 'fast-import', '--quiet'], { stdio: ['pipe', 'ignore', 'inherit'] });
  const write = (chunk: string | Buffer) => (child.stdin.write(chunk) ? Promise.resolve() : new Promise<void>((r) => child.stdin.once('drain', () => r())));
  const when = 1_700_000_000;
  for (let i = 0; i < COMMITS; i++) {
    const data = randomBytes(BLOB_BYTES);
    const message = `commit ${i}\n`;
    await write(`commit refs/heads/master\ncommitter Bench <bench@example.test> ${when + i} +0000\ndata ${message.length}\n${message}`);
    await write(`M 100644 inline f${String(i % FILES).padStart(4, '0')}.bin\ndata ${data.length}\n`);
    await write(data);
    await write('\n');
  }
  child.stdin.end();
  await new Promise<void>((resolve, reject) => child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`git fast-import exited ${code}`)))));
}

/**
 * The checkout as a build's timeline shows it (workers_assigned_at → setup: the activity, the
 * site asked for the branch's tip, the tree made), on the bench's cluster: COLD_RUNS builds, each
 * on a runner of its own that has never seen the repository (its own workspace, so no mirror),
 * each beside a `git clone` over the same SSH server run just after it (this machine's speed
 * drifts within minutes: the two sides of a figure are timed in turns); three builds at once to
 * warm the cluster's runners; then, for each of TIMELINE_RUNS new commits (one file changed), a
 * build on those runners (which keep the trees of ended builds, steps/checkout/kept.ts) and one on
 * a runner that keeps none.
 */
async function timelineFigures(
  c: Cluster,
  bare: string,
  clone: (into: string) => Promise<unknown>,
  log: (line: string) => void,
): Promise<{ cold: number; coldClone: number; coldRuns: string; warm: number; unkept: number; runs: string }> {
  await pushCommit(bare, { 't/ok_test.sh': { content: 'exit 0\n', mode: 0o755 } }, 'a test');
  const repo = await c.addRepo(bare, { branch: 'master', test_pattern: 't/*_test.sh' });
  const span = async (session: number) => {
    const stop = (await c.eventsOf(session, 1_800_000)).find((e) => e.event === 'stop')!;
    if (stop.status !== 'passed') throw new Error(`a build of the big repository ended ${String(stop.status)}`);
    const t = stop.timing as Record<string, number>;
    return t.setup! - t.workers_assigned_at!;
  };
  const cold: number[] = [];
  const clones: number[] = [];
  for (let i = 0; i < COLD_RUNS; i++) {
    const queue = `bench-cold-${i}`;
    // Beside the cluster's directory (0700), where the build user may pass, as the default workspace is.
    const workspace = await mkdtemp(path.join(os.tmpdir(), 'sluice-bench-cold-'));
    const runner = await c.addRunner({ SLUICE_BUILD_QUEUE: queue, SLUICE_WORKSPACE_DIR: workspace });
    try {
      execFileSync('sync');
      cold.push(await span(await c.build(repo, { branch: 'master', force: true, queue })));
    } finally {
      await runner.stop();
      await rm(workspace, { recursive: true, force: true });
    }
    const into = path.join(path.dirname(bare), `timeline-clone-${i}`);
    execFileSync('sync');
    const t = performance.now();
    await clone(into);
    clones.push((performance.now() - t) / 1000);
    await rm(into, { recursive: true, force: true });
    log(`timeline: cold checkout ${cold.at(-1)!.toFixed(2)} s, git clone beside it ${clones.at(-1)!.toFixed(2)} s`);
  }
  log('timeline: warming the other runners and one that keeps no trees');
  const queue = 'bench-no-kept-trees';
  const unkeptRunner = await c.addRunner({ SLUICE_BUILD_QUEUE: queue, SLUICE_KEPT_TREES: '0' });
  try {
    await Promise.all([
      ...[1, 2, 3].map(async () => span(await c.build(repo, { branch: 'master', force: true }))),
      span(await c.build(repo, { branch: 'master', force: true, queue })),
    ]);
    const warm: number[] = [];
    const unkept: number[] = [];
    for (let i = 0; i < TIMELINE_RUNS; i++) {
      await pushCommit(bare, { [`f${String(i).padStart(4, '0')}.bin`]: { content: `changed ${i}\n` } }, `change ${i}`);
      warm.push(await span(await c.build(repo, { branch: 'master' })));
      unkept.push(await span(await c.build(repo, { branch: 'master', force: true, queue })));
      log(`timeline: warm checkout ${warm.at(-1)!.toFixed(2)} s, on a runner that keeps no trees ${unkept.at(-1)!.toFixed(2)} s`);
    }
    return {
      cold: median(cold),
      coldClone: median(clones),
      coldRuns: cold.map((x, i) => `${x.toFixed(1)} s beside ${clones[i]!.toFixed(1)} s`).join(', '),
      warm: median(warm),
      unkept: median(unkept),
      runs: warm.map((w) => `${w.toFixed(2)} s`).join(', '),
    };
  } finally {
    await unkeptRunner.stop();
  }
}

export async function checkoutFigures(c: Cluster, log: (line: string) => void): Promise<Row[]> {
  const dir = await mkdtemp(path.join(c.tmp, 'checkout-'));
  const bare = path.join(dir, 'big.git');
  let started = performance.now();
  log(`generating ${COMMITS} commits of ${BLOB_BYTES} random bytes each (git fast-import)`);
  await generate(bare);
  const size = Number(execFileSync('du', ['-sk', bare], { encoding: 'utf8' }).split(/\s/)[0]) * 1024;
  log(`generated in ${((performance.now() - started) / 1000).toFixed(0)} s: ${(size / 2 ** 20).toFixed(0)} MiB`);
  const head = execFileSync('git', ['--git-dir', bare, 'rev-parse', 'master'], { encoding: 'utf8' }).trim();

  const key = generateRepoKeyPair('sluice:bench/checkout');
  const server = await startSshGitServer({ authorizedKeys: [key.publicKey] });
  const pullUrl = server.url(bare);
  const keyFile = path.join(dir, 'id');
  await writeFile(keyFile, key.privateKey.trimEnd() + '\n');
  await chmod(keyFile, 0o600);
  const ssh = `ssh -F /dev/null -i ${keyFile} -o IdentitiesOnly=yes -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR`;
  const uploads = () => server.commands.filter((x) => x.startsWith('git-upload-pack')).length;
  let n = 0;
  const pull = (mirrorDir: string | null, over: Partial<FetchRepositoryInput> = {}) =>
    fetchRepository({
      pullUrl,
      privateKey: key.privateKey,
      workdir: path.join(dir, `tree-${n++}`),
      branch: 'master',
      head: 'HEAD',
      ...(mirrorDir ? { mirror: { dir: mirrorDir, key: '1' } } : {}),
      ...over,
    });
  const timed = async (fn: () => Promise<unknown>) => {
    execFileSync('sync');
    const t = performance.now();
    await fn();
    return (performance.now() - t) / 1000;
  };
  const cleanTrees = () => execFileSync('sh', ['-c', 'rm -rf tree-* clone-* wt-*'], { cwd: dir });

  try {
    // Cold: no mirror yet, beside a plain clone.
    const cold: number[] = [];
    const clone: number[] = [];
    for (let i = 0; i < COLD_RUNS; i++) {
      const mirrors = path.join(dir, `mirrors-cold-${i}`);
      cold.push(await timed(() => pull(mirrors)));
      await rm(mirrors, { recursive: true, force: true });
      // Not execFileSync: the SSH git server answers in this very process.
      clone.push(await timed(() => execFileAsync('git', ['clone', '--quiet', pullUrl, path.join(dir, `clone-${i}`)], { env: { ...process.env, GIT_SSH_COMMAND: ssh } })));
      cleanTrees();
      log(`cold: Sluice ${cold.at(-1)!.toFixed(1)} s, git clone ${clone.at(-1)!.toFixed(1)} s`);
    }

    // Warm: the mirror has the commit, beside `git worktree add` from a local mirror.
    const mirrors = path.join(dir, 'mirrors');
    await pull(mirrors);
    const local = path.join(dir, 'local-mirror.git');
    execFileSync('git', ['clone', '--quiet', '--mirror', bare, local]);
    const warm: number[] = [];
    const worktree: number[] = [];
    for (let i = 0; i < WARM_RUNS; i++) {
      warm.push(await timed(() => pull(mirrors, { head })));
      const wt = path.join(dir, `wt-${i}`);
      worktree.push(await timed(async () => execFileSync('git', ['--git-dir', local, 'worktree', 'add', '--quiet', '--detach', wt, head])));
      execFileSync('git', ['--git-dir', local, 'worktree', 'remove', '--force', wt]);
      cleanTrees();
      log(`warm: Sluice ${warm.at(-1)!.toFixed(2)} s, git worktree add ${worktree.at(-1)!.toFixed(2)} s`);
    }

    // A build of four workers: its first checkout (the branch's tip), then each worker's (the commit).
    const build = async (mirrorDir: string | null) => {
      const before = uploads();
      const lead = await pull(mirrorDir);
      await Promise.all([1, 2, 3, 4].map(() => pull(mirrorDir, { head: lead.commitId })));
      cleanTrees();
      return uploads() - before;
    };
    started = performance.now();
    const withMirror = await build(path.join(dir, 'mirrors-build'));
    const without = await build(null);
    log(`a build of 4 workers asked the site ${withMirror} time(s) with the mirror, ${without} without (${((performance.now() - started) / 1000).toFixed(0)} s)`);

    const coldM = median(cold);
    const cloneM = median(clone);
    const warmM = median(warm);
    const wtM = median(worktree);
    const timeline = await timelineFigures(c, bare, (into) => execFileAsync('git', ['clone', '--quiet', pullUrl, into], { env: { ...process.env, GIT_SSH_COMMAND: ssh } }), log);
    const repo = `${COMMITS.toLocaleString('en')} commits, ${(size / 2 ** 20).toFixed(0)} MiB`;
    return [
      {
        name: `P8 cold checkout, no mirror yet (${repo}; median of ${COLD_RUNS})`,
        value: coldM,
        unit: 's',
        baseline: { name: 'git clone over the same SSH', value: cloneM },
        target: { text: '≤ 1.1 × git clone', met: coldM <= 1.1 * cloneM },
        note: `${(coldM / cloneM).toFixed(2)}×`,
      },
      {
        name: `P8 warm checkout from the runner’s mirror (median of ${WARM_RUNS})`,
        value: warmM,
        unit: 's',
        baseline: { name: 'git worktree add from a local mirror', value: wtM },
        target: { text: '≤ 1.2 × git worktree add', met: warmM <= 1.2 * wtM },
        note: `${(warmM / wtM).toFixed(2)}×`,
      },
      {
        name: `Cold checkout as a build’s timeline shows it (workers_assigned_at → setup), a runner without a mirror (median of ${COLD_RUNS})`,
        value: timeline.cold,
        unit: 's',
        baseline: { name: 'git clone over the same SSH, each just after a build', value: timeline.coldClone },
        target: { text: '≤ 1.1 × git clone', met: timeline.cold <= 1.1 * timeline.coldClone },
        note: `${(timeline.cold / timeline.coldClone).toFixed(2)}×; each: ${timeline.coldRuns}`,
      },
      {
        name: `Warm checkout as a build’s timeline shows it: a new commit on a warm runner (median of ${TIMELINE_RUNS})`,
        value: timeline.warm,
        unit: 's',
        baseline: { name: 'git worktree add from a local mirror', value: wtM },
        target: { text: '≤ 1.2 × git worktree add + 0.3 s', met: timeline.warm <= 1.2 * wtM + 0.3 },
        note: `${((1.2 * wtM + 0.3) / timeline.warm).toFixed(2)}× under the target; each: ${timeline.runs}; on a runner that keeps no trees (SLUICE_KEPT_TREES=0) ${timeline.unkept.toFixed(2)} s`,
      },
      {
        name: 'P8 times the site is asked for a build of 4 workers on one runner',
        value: withMirror,
        unit: '',
        baseline: { name: 'without a mirror', value: without },
        target: { text: 'once', met: withMirror === 1 },
      },
    ];
  } finally {
    await server.close();
    await rm(dir, { recursive: true, force: true });
  }
}
