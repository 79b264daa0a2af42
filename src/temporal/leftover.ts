/**
 * A Temporal dev server that an earlier `npm start` on the same data directory left running:
 * `npm start` killed with SIGKILL never stops the server it started (it runs in a process
 * group of its own so that Ctrl-C reaches Sluice first), and the next start would find its
 * ports taken. Such a server is found by its command line, which names the data directory's
 * database, and stopped, so the new start owns its data directory again. Linux only (/proc);
 * elsewhere there is nothing to find, and a busy port is reported as before.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';

/** Pids of `temporal server start-dev` processes whose database is `dbFile`. */
export async function devServersOf(dbFile: string): Promise<number[]> {
  const entries = await readdir('/proc').catch(() => [] as string[]);
  const pids: number[] = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    const argv = (await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '')).split('\0');
    const db = argv.indexOf('--db-filename');
    if (argv.includes('start-dev') && db !== -1 && argv[db + 1] === dbFile) pids.push(Number(entry));
  }
  return pids;
}

/** Stops each process (SIGTERM, SIGKILL after `graceMs`); resolves once all are gone. Returns their pids. */
export async function stopLeftoverDevServers(dbFile: string, graceMs = 10_000): Promise<number[]> {
  const pids = await devServersOf(dbFile);
  await Promise.all(pids.map((pid) => stopProcess(pid, graceMs)));
  return pids;
}

async function stopProcess(pid: number, graceMs: number): Promise<void> {
  if (!signal(pid, 'SIGTERM')) return;
  const deadline = Date.now() + graceMs;
  while (isRunning(pid)) {
    if (Date.now() > deadline) signal(pid, 'SIGKILL');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Sends `sig`; false when the process is gone already. */
function signal(pid: number, sig: NodeJS.Signals): boolean {
  try {
    process.kill(pid, sig);
    return true;
  } catch {
    return false;
  }
}

/**
 * Whether the process still runs. A zombie does not: it holds no port or file any more, and
 * where PID 1 does not reap orphans (some containers) it would stay one for good. But a leader
 * that is a zombie while other threads of its process still exit (a Go program, such as the
 * dev server, on SIGTERM) still holds them: its files go with the last thread. So: any thread
 * of the process not yet a zombie.
 */
export function isRunning(pid: number): boolean {
  let threads: string[];
  try {
    threads = readdirSync(`/proc/${pid}/task`);
  } catch {
    return false;
  }
  return threads.some((tid) => {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      // pid (comm) state ...; comm may hold spaces and parentheses.
      const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
      return state !== 'Z' && state !== 'X';
    } catch {
      return false; // gone between the listing and the read
    }
  });
}
