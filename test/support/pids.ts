import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/**
 * Whether `pid` is a live process. A zombie is not: where PID 1 does not reap orphans (some
 * containers), a killed test's process lingers as one, and kill(pid, 0) alone would say alive.
 */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // pid (comm) state ...; comm may hold spaces and parentheses.
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

/** Processes whose command line contains `marker` (pgrep, which never lists itself). */
export function processesMatching(marker: string): string[] {
  try {
    return execFileSync('pgrep', ['-f', marker], { encoding: 'utf8' }).split('\n').filter(Boolean);
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
