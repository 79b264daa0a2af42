/**
 * A hostile test file, as build code would try to reach what it should not (issue 23): Sluice's
 * secrets in any process's environment or command line or its own, the runner's working
 * directory, memory and data directory, signalling the runner, other builds' trees, /root,
 * PostgreSQL's socket, the API's port, and a daemon left behind (setsid, so outside its process
 * group). It prints `BREACH: …` for what must never work, and plain words for what it saw,
 * which each level of isolation allows or not (test/e2e/sandbox.test.ts, npm-start.test.ts).
 */
import { randomBytes } from 'node:crypto';
import type { RepoFiles } from './gitRepo';
import { processesMatching } from './pids';
import { eventually } from './wait';
import { script } from './world';

export interface HostileProbe {
  /** The daemon's `sleep` argument, which names it among the machine's processes (daemonMarkerName). */
  daemonMarker: string;
  apiPort: number;
  /** The process that runs builds, and a word of its command line that tells it is that one. */
  runner: { pid: number; cmdline: string };
  /** Values that must appear nowhere the build can read: the database URL, the secret key, the admin token. */
  secrets: string[];
  /** Sluice's data directory (`npm start`: the secret key and admin token files), when there is one. */
  dataDir?: string;
}

/** An unusual sleep length that names the daemon (sleep takes fractions). */
export function daemonMarkerName(): string {
  return `3${randomBytes(2).readUInt16BE(0)}.${randomBytes(2).readUInt16BE(0)}7`;
}

/** The repository's files: `hostile_test.sh`, and `secrets.txt` beside it, one value a line, for grep -F -f. */
export function hostileFiles(probe: HostileProbe): RepoFiles {
  if (probe.secrets.some((s) => s.length === 0)) throw new Error('an empty secret would match everything');
  return {
    'hostile_test.sh': script(hostileScript(probe)),
    'secrets.txt': { content: `${probe.secrets.join('\n')}\n` },
  };
}

function hostileScript({ daemonMarker, apiPort, runner, dataDir }: HostileProbe): string {
  return [
    'echo "uid=$(id -u)"',
    'echo "pwd=$(pwd)"',
    // Sluice's secrets (secrets.txt, beside this file) in any process's environment or command
    // line this user can read, or its own.
    'for p in /proc/[0-9]*; do tr "\\0" "\\n" <$p/environ 2>/dev/null; done | grep -q -F -f secrets.txt && echo "BREACH: read a secret of Sluice in an environment"',
    'for p in /proc/[0-9]*; do tr "\\0" "\\n" <$p/cmdline 2>/dev/null; echo; done | grep -q -F -f secrets.txt && echo "BREACH: read a secret of Sluice in a command line"',
    'env | grep -q -F -f secrets.txt && echo "BREACH: has a secret of Sluice in its environment"',
    'for p in /proc/[0-9]*; do tr "\\0" "\\n" <$p/environ 2>/dev/null; done | grep -q -e SLUICE_TEST_DATABASE_URL -e SLUICE_SECRET_KEY -e SLUICE_ADMIN_TOKEN && echo "BREACH: read a Sluice environment"',
    // The runner's working directory (this project: jest.config.js), through any process's cwd link.
    'for p in /proc/[0-9]*; do [ -e $p/cwd/jest.config.js ] && echo "BREACH: reached the runner\'s working directory"; done',
    ...(dataDir
      ? [
          `ls -A '${dataDir}' >/dev/null 2>&1 && echo "BREACH: listed the data directory"`,
          `cat '${dataDir}/secret.key' '${dataDir}/admin.token' 2>/dev/null | grep -q . && echo "BREACH: read the secret key or the admin token file"`,
        ]
      : []),
    `R=${runner.pid}`,
    `if grep -q ${runner.cmdline} /proc/$R/cmdline 2>/dev/null; then`,
    '  echo "sees the runner"',
    // Opening another process's memory needs ptrace access to it.
    '  (exec 3</proc/$R/mem) 2>/dev/null && echo "BREACH: opened the runner\'s memory"',
    '  kill -0 $R 2>/dev/null && echo "BREACH: could signal the runner"',
    'fi',
    // Its own checkout and its worker's home (HOME, beside it) are all it may see there.
    'ls -A "$(dirname "$PWD")" 2>/dev/null | grep -v -x -e "$(basename "$PWD")" -e "$(basename "$HOME")" | grep -q . && echo "BREACH: listed the other checkouts"',
    'ls /root >/dev/null 2>&1 && echo "BREACH: listed /root"',
    '[ -S /run/postgresql/.s.PGSQL.5432 ] && echo "sees the database socket"',
    `bash -c 'exec 3<>/dev/tcp/127.0.0.1/${apiPort}' 2>/dev/null && echo "reached the API"`,
    // A daemon that leaves the process group and the session, as `nohup cmd &` with setsid would.
    `setsid sh -c 'exec sleep ${daemonMarker}' </dev/null >/dev/null 2>&1 &`,
    'echo work > mine.txt && cat mine.txt >/dev/null && echo "wrote in its tree"',
    'exit 0',
  ].join('\n');
}

/**
 * What the hostile file's output shows of a build in bubblewrap: it worked in its tree, reached
 * nothing of Sluice's (no BREACH), saw neither the runner nor PostgreSQL's socket, and its daemon
 * died with the sandbox's PID namespace when the test ended.
 */
export async function expectSandboxed(output: string, daemonMarker: string): Promise<void> {
  expect(output).toContain('wrote in its tree\n');
  expect(output).not.toContain('BREACH');
  expect(output).not.toContain('sees the runner');
  expect(output).not.toContain('sees the database socket');
  await eventually('the daemon gone', async () => processesMatching(`sleep ${daemonMarker}`).length === 0);
}
