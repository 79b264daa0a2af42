import { execFileSync } from 'node:child_process';
import { isRunning } from '../../src/temporal/leftover';

/**
 * Whether `pid` is a live process. A zombie is not: where PID 1 does not reap orphans (some
 * containers), a killed test's process lingers as one, and kill(pid, 0) alone would say alive.
 * The same check `npm start` uses on a dev server it stops (src/temporal/leftover.ts).
 */
export const isAlive = isRunning;

/**
 * Processes whose whole command line is `commandLine`, taken literally (pgrep, which never lists
 * itself): `sleep 31.77` must not also find `sleep 3137712.7`, another test's daemon.
 */
export function processesMatching(commandLine: string): string[] {
  const literal = commandLine.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  try {
    return execFileSync('pgrep', ['-f', '-x', literal], { encoding: 'utf8' }).split('\n').filter(Boolean);
  } catch {
    return []; // pgrep exits 1 when nothing matches
  }
}

/** Whether bubblewrap runs here with a user and a PID namespace (installed, and user namespaces allowed). */
export function bwrapWorks(): boolean {
  try {
    execFileSync('bwrap', ['--unshare-user', '--unshare-pid', '--ro-bind', '/', '/', '--proc', '/proc', 'true'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
