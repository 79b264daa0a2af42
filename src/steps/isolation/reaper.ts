/**
 * Test processes never outlive their runner. Each test runs in a process group of its own,
 * which the runner kills on time-out, stop or exit; but a runner killed with SIGKILL (or by the
 * OOM killer) kills nothing. So each runner starts one watchdog: a small `sh`, in a process
 * group of its own (a kill of the runner's group leaves it standing), reading from a pipe the
 * runner holds. The runner writes `+<pgid>` when a test starts and `-<pgid>` when its group is
 * gone. When the pipe closes, whatever the runner died of, the watchdog SIGKILLs every group
 * still listed and exits.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { ProcessGroups } from './process';

export interface Reaper extends ProcessGroups {
  /** The watchdog's pid (tests check that it ends). */
  readonly pid: number;
  /** Ends the watchdog; groups still tracked are killed. */
  close(): Promise<void>;
}

// `groups` holds the tracked pgids between spaces; a handful at a time (one per lane), so the
// loop that drops one costs nothing worth a `sed` process.
const WATCHDOG = `
groups=' '
while IFS= read -r line; do
  case "$line" in
    +*) groups="$groups\${line#+} " ;;
    -*) kept=' '
        for g in $groups; do [ "$g" = "\${line#-}" ] || kept="$kept$g "; done
        groups=$kept ;;
  esac
done
for g in $groups; do kill -s KILL -- "-$g" 2>/dev/null; done
`;

export async function startReaper(): Promise<Reaper> {
  const child: ChildProcess = spawn('/bin/sh', ['-c', WATCHDOG], { detached: true, stdio: ['pipe', 'ignore', 'ignore'] });
  await new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', reject);
  });
  const stdin = child.stdin!;
  // The watchdog gone (killed by hand): the runner carries on; its tests just lose that guard.
  stdin.on('error', () => undefined);
  // Neither keeps the runner's event loop alive.
  child.unref();
  (stdin as unknown as { unref?: () => void }).unref?.();
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
  const send = (sign: '+' | '-', pgid: number) => {
    // Never a group the watchdog must not kill: `kill -- -1` is every process we may signal.
    if (!Number.isInteger(pgid) || pgid <= 1) return;
    if (!stdin.destroyed && stdin.writable) stdin.write(`${sign}${pgid}\n`);
  };
  return {
    pid: child.pid!,
    track: (pgid) => send('+', pgid),
    untrack: (pgid) => send('-', pgid),
    async close() {
      stdin.end();
      // Bounded: a watchdog stuck on a kill must not hold up the runner's shutdown.
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5_000).unref())]);
    },
  };
}
