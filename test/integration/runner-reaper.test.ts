/**
 * Test processes die with their runner, however it dies (runner/reaper.ts). A stand-in runner
 * (test/support/reaperChild.ts, a real Node process) runs a real test file that starts a
 * background process; the runner is then killed with SIGKILL, alone or with its whole process
 * group, and every process the test started must be gone.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startReaper } from '../../src/steps/isolation/reaper';
import { isAlive } from '../support/pids';
import { eventually } from '../support/wait';

const CHILD = join(__dirname, '..', 'support', 'reaperChild.ts');

let tmp: string;
beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'sluice-reaper-'));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

/** Starts the stand-in runner on a test that leaves `sleep 300` in the background; returns the pids. */
async function startRunner(name: string, mode: 'guarded' | 'unguarded' = 'guarded') {
  const pids = join(tmp, `${name}.pids`);
  await writeFile(join(tmp, `${name}.sh`), `#!/bin/sh\nsleep 300 &\necho "$$ $!" > ${pids}.tmp && mv ${pids}.tmp ${pids}\nsleep 300\n`, { mode: 0o755 });
  // Detached: the runner has a process group of its own, which one test kills whole.
  // `node --import tsx`, not the tsx wrapper: the process killed must be the runner itself.
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, `${name}.sh`, tmp, mode], { detached: true, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  await eventually('the test to start', async () => /started \d+\n/.test(out) && /^\d+ \d+\n$/.test(await readFile(pids, 'utf8').catch(() => '')), 30_000);
  const [test, background] = (await readFile(pids, 'utf8')).trim().split(' ').map(Number) as [number, number];
  return { child, test, background, watchdog: Number(/started (\d+)/.exec(out)![1]) };
}

describe('the reaper', () => {
  it('kills the tests of a runner killed with SIGKILL, and what they left in the background', async () => {
    const r = await startRunner('alone');
    expect(isAlive(r.test) && isAlive(r.background)).toBe(true);
    r.child.kill('SIGKILL');
    await eventually('the test and its background process to die', async () => !isAlive(r.test) && !isAlive(r.background), 15_000);
    await eventually('the watchdog to exit', async () => !isAlive(r.watchdog), 15_000);
  });

  it('survives a kill of the runner\'s whole process group, and kills the tests', async () => {
    const r = await startRunner('group');
    process.kill(-r.child.pid!, 'SIGKILL');
    await eventually('the test and its background process to die', async () => !isAlive(r.test) && !isAlive(r.background), 15_000);
  });

  it('is what kills them: without it, the test outlives its runner', async () => {
    const r = await startRunner('unguarded', 'unguarded');
    r.child.kill('SIGKILL');
    await new Promise((res) => r.child.once('exit', res));
    // The runner is gone; its test is not. (Cleaned up here by hand.)
    expect(isAlive(r.test)).toBe(true);
    process.kill(-r.test, 'SIGKILL');
  });

  it('ends quietly on close, killing nothing that was untracked', async () => {
    const reaper = await startReaper();
    const bystander = spawn('sleep', ['300'], { detached: true, stdio: 'ignore' });
    reaper.track(bystander.pid!);
    reaper.untrack(bystander.pid!);
    await reaper.close();
    expect(isAlive(reaper.pid)).toBe(false);
    expect(isAlive(bystander.pid!)).toBe(true);
    process.kill(-bystander.pid!, 'SIGKILL');
  });
});
