/**
 * The sandbox around every build process (SLUICE_SANDBOX=auto, the default, where it works; or
 * bwrap, required): bubblewrap, from Debian's `bubblewrap` package, started unprivileged in new
 * user, PID, IPC, UTS and mount namespaces (and a network namespace of its own when
 * SLUICE_SANDBOX_NETWORK=none).
 *
 * What the test sees: the host's /usr and /etc read-only (or an image's root filesystem, read-only: steps/image/), its own tree and home read-write at
 * /sluice/tree and /sluice/home (the same for every build), an empty /tmp, a /proc of its own
 * namespace and a minimal /dev. Not the runner's working directory, the data directory, other
 * builds' trees, /run (PostgreSQL's socket), /home or /root, and no process outside the
 * sandbox: not the runner, not other builds' tests. With
 * --die-with-parent and a PID namespace, everything the test started, daemons that called
 * setsid included, dies when the test ends or is killed: nothing survives a build.
 *
 * The build user (SLUICE_BUILD_USER) still applies: bwrap runs as that user, so a sandbox
 * escape lands in an unprivileged account.
 */
import { spawn } from 'node:child_process';
import { lstatSync, readlinkSync } from 'node:fs';
import path from 'node:path';
import type { StraceKit } from './straceKit';

/** The Unix user build processes run as (SLUICE_BUILD_USER), by number. */
export interface BuildUser {
  uid: number;
  gid: number;
}

export interface Sandbox {
  /** The bwrap executable. */
  bwrap: string;
  /** Whether the test may use the host's network (false: only a loopback of its own). */
  network: boolean;
  /** The image whose root filesystem is `/` (steps/image/); none: the host's /usr and /etc. */
  image?: SandboxImage;
  /** In an image, for a mapping run: the runner's strace brought in (straceKit.ts). */
  strace?: StraceKit;
}

/** An image's root filesystem as the sandbox shows it: read-only, with the build user named in its passwd and group. */
export interface SandboxImage {
  rootfs: string;
  passwd: string;
  group: string;
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
 * An image's root filesystem as `/`, read-only (its mount points made by steps/image/pull.ts),
 * with its passwd and group naming the build user, and, with the network, the host's name
 * resolution (as Docker gives a container the host's resolv.conf). Nothing of the host's is
 * visible but those two files.
 */
function imageLayout(image: SandboxImage, network: boolean): string[] {
  const args = ['--ro-bind', image.rootfs, '/', '--ro-bind', image.passwd, '/etc/passwd', '--ro-bind', image.group, '/etc/group'];
  if (network) args.push('--ro-bind-try', '/etc/resolv.conf', '/etc/resolv.conf', '--ro-bind-try', '/etc/hosts', '/etc/hosts');
  return args;
}

/**
 * Where a build process sees its checkout and its home inside the sandbox: the same paths for
 * every build, whatever the session, so that tools whose caches are keyed by absolute paths find
 * theirs again from one build to the next (jest's transform cache holds the project's root
 * directory; a Python virtualenv, its own path), as GitLab's /builds/<project> does.
 */
export const SANDBOX_TREE = '/sluice/tree';
export const SANDBOX_HOME = '/sluice/home';

/** A build process's writable directories on the host: its checkout and its worker's home. */
export interface SandboxDirs {
  tree: string;
  home: string;
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * `value` (a path, a PATH-like list, a command line) with the host paths of `dirs` as the
 * sandbox shows them: a path counts where it ends at `/`, `:`, a quote, a space or the end, so
 * the tree's path does not match inside its home's (`session-12` in `session-12.home`).
 */
export function insideSandbox(dirs: SandboxDirs, value: string): string {
  let out = value;
  for (const [host, inside] of [
    [dirs.home, SANDBOX_HOME],
    [dirs.tree, SANDBOX_TREE],
  ] as const) {
    out = out.replace(new RegExp(`${escapeRegExp(path.resolve(host))}(?=$|[/:'"\\s])`, 'g'), inside);
  }
  return out;
}

/** A path a build process printed (a JUnit report's `file`) as the host sees it. */
export function outsideSandbox(dirs: SandboxDirs, value: string): string {
  for (const [inside, host] of [
    [SANDBOX_TREE, dirs.tree],
    [SANDBOX_HOME, dirs.home],
  ] as const) {
    if (value === inside || value.startsWith(`${inside}/`)) return path.resolve(host) + value.slice(inside.length);
  }
  return value;
}

/**
 * The argv that runs `argv` in the sandbox, in `cwd`, with the checkout and home (`dirs`) bound
 * read-write at SANDBOX_TREE and SANDBOX_HOME; host paths of them in `argv` and `cwd` are
 * rewritten to those (the environment: launch).
 */
export function sandboxArgv(sandbox: Sandbox, dirs: SandboxDirs | null, cwd: string, argv: readonly string[]): string[] {
  const inside = (v: string) => (dirs ? insideSandbox(dirs, v) : v);
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
    ...(sandbox.image ? imageLayout(sandbox.image, sandbox.network) : rootLayout()),
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    '--tmpfs',
    '/tmp',
    // An image's root is read-only: its scratch places are the build's own, gone with it.
    ...(sandbox.image ? ['--tmpfs', '/var/tmp', '--tmpfs', '/run'] : []),
    ...(sandbox.image && sandbox.strace ? sandbox.strace.binds.flatMap(([host, inside]) => ['--ro-bind', host, inside]) : []),
  ];
  if (dirs) args.push('--bind', dirs.tree, SANDBOX_TREE, '--bind', dirs.home, SANDBOX_HOME);
  args.push('--chdir', inside(cwd), '--', ...argv.map(inside));
  return args;
}

/**
 * What a build process is started with: `argv` and `env` as they are without a sandbox; in one,
 * bwrap's argv around them and every value of `env` with the host paths of `dirs` as the sandbox
 * shows them. Every build process starts through this (process.ts, the shell driver).
 */
export function launch(
  sandbox: Sandbox | undefined,
  dirs: SandboxDirs,
  cwd: string,
  argv: readonly string[],
  env: Record<string, string>,
): { argv: string[]; env: Record<string, string> } {
  if (!sandbox) return { argv: [...argv], env };
  return {
    argv: sandboxArgv(sandbox, dirs, cwd, argv),
    env: Object.fromEntries(Object.entries(env).map(([k, v]) => [k, insideSandbox(dirs, v)])),
  };
}

/**
 * Tries the sandbox for real, as the build user: bwrap installed, user namespaces allowed. Null
 * when it works; otherwise why not.
 */
export async function probeSandbox(sandbox: Sandbox, runAs?: BuildUser): Promise<string | null> {
  const argv = sandboxArgv(sandbox, null, '/', ['/bin/sh', '-c', 'exit 0']);
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
