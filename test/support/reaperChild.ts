/**
 * A stand-in runner for test/integration/runner-reaper.test.ts: starts a reaper, runs one test
 * file (argv[2], in workdir argv[3]) through runTestFile with it, and prints `started` once the
 * reaper knows the test's group. Its parent then kills it however it likes.
 */
import { runTestFile } from '../../src/steps/tests/runTestFile';
import { startReaper } from '../../src/steps/isolation/reaper';

async function main(): Promise<void> {
  const [, , file, workdir, mode] = process.argv;
  const reaper = mode === 'unguarded' ? undefined : await startReaper();
  const processGroups = reaper && {
    track(pgid: number) {
      reaper.track(pgid);
      process.stdout.write(`started ${reaper.pid}\n`);
    },
    untrack: (pgid: number) => reaper.untrack(pgid),
  };
  if (!reaper) process.stdout.write('started 0\n');
  await runTestFile({ workdir: workdir!, path: file!, command: null, env: {}, timeoutMs: 0, processGroups });
}

void main();
