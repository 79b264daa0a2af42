/**
 * The sandbox around every build process (SLUICE_SANDBOX=auto, the default, where it works; or
 * bwrap, required): bubblewrap, from Debian's
 * `bubblewrap` package, started unprivileged in new user, PID, IPC, UTS and mount namespaces
 * (and a network namespace of its own when SLUICE_SANDBOX_NETWORK=none).
 *
 * What the test sees: the host's /usr and /etc read-only, its own tree and home read-write, an
 * empty /tmp, a /proc of its own namespace and a minimal /dev. Not the runner's working
 * directory, the data directory, other builds' trees, /run (PostgreSQL's socket), /home or
 * /root, and no process outside the sandbox: not the runner, not other builds' tests. With
 * --die-with-parent and a PID namespace, everything the test started, daemons that called
 * setsid included, dies when the test ends or is killed: nothing survives a build.
 *
 * The build user (SLUICE_BUILD_USER) still applies: bwrap runs as that user, so a sandbox
 * escape lands in an unprivileged account.
 */
import { spawn } from 'node:child_process';
import { lstatSync, readlinkSync } from 'node:fs';
import type { BuildUser } from './process';

export interface Sandbox {
  /** The bwrap executable. */
  bwrap: string;
  /** Whether the test may use the host's network (false: only a loopback of its own). */
  network: boolean;
}

/** Top-level directories a program needs to load: symbolic links into /usr on merged-/usr systems. */
const LOADER_DIRS = ['bin', 'sbin', 'lib', 'lib32', 'lib64', 'libx32'];

/**
 * How the host's root directories appear inside: /usr and /etc bound read-only, /bin & co. as
 * they are. Read once per process: the host's layout does not change between tests.
 */
let layout: readonly string[] | undefined;
function rootLayout(): readonly string[] {
  if (layout) return layout;
  const args = ['--ro-bind', '/usr', '/usr', '--ro-bind', '/etc', '/etc'];
  for (const name of LOADER_DIRS) {
    const path = `/${name}`;
    const info = (() => {
      try {
        return lstatSync(path);
      } catch {
        return null;
      }
    })();
    if (info?.isSymbolicLink()) args.push('--symlink', readlinkSync(path), path);
    else if (info?.isDirectory()) args.push('--ro-bind', path, path);
  }
  layout = args;
  return args;
}

/**
 * The argv that runs `argv` in the sandbox, in `workdir`, with `writable` directories (the tree
 * and the test's home) bound at the same paths, read-write.
 */
export function sandboxArgv(sandbox: Sandbox, workdir: string, writable: readonly string[], argv: readonly string[]): string[] {
  const args = [
    sandbox.bwrap,
    '--unshare-user',
    '--unshare-pid',
    '--unshare-ipc',
    '--unshare-uts',
    '--unshare-cgroup-try',
    ...(sandbox.network ? [] : ['--unshare-net']),
    // The sandbox dies with the runner's child (bwrap), and the PID namespace with its first process.
    '--die-with-parent',
    // No controlling terminal to push keystrokes into (TIOCSTI).
    '--new-session',
    '--cap-drop',
    'ALL',
    ...rootLayout(),
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    '--tmpfs',
    '/tmp',
  ];
  for (const dir of writable) args.push('--bind', dir, dir);
  args.push('--chdir', workdir, '--', ...argv);
  return args;
}

/**
 * Tries the sandbox for real, as the build user: bwrap installed, user namespaces allowed. Null
 * when it works; otherwise why not.
 */
export async function probeSandbox(sandbox: Sandbox, runAs?: BuildUser): Promise<string | null> {
  const argv = sandboxArgv(sandbox, '/', [], ['/bin/sh', '-c', 'exit 0']);
  const result = await new Promise<{ code: number | null; stderr: string; error?: Error }>((resolve) => {
    const child = spawn(argv[0]!, argv.slice(1), {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { PATH: '/usr/bin:/bin' },
      ...(runAs ? { uid: runAs.uid, gid: runAs.gid } : {}),
    });
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.once('error', (error) => resolve({ code: null, stderr, error }));
    child.once('close', (code) => resolve({ code, stderr }));
  });
  if (result.code === 0) return null;
  return result.error?.message ?? (result.stderr.trim() || `exit code ${result.code}`);
}
