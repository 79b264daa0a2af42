/**
 * What a test file's run touched in the repository, read from `strace -f -y` output (issue 40):
 * any language, no change to the project, from inside the unprivileged sandbox (a process may
 * trace its own children there). The runner traces the syscalls that name a path
 * (TRACED_SYSCALLS); this reads the lines, no I/O.
 *
 * - `openat` that succeeded: the file read (its resolved path, as `-y` prints the new
 *   descriptor), or, with O_DIRECTORY, the directory listed;
 * - `execve` that succeeded: the program run (a compiled test binary);
 * - any of them that failed with ENOENT or ENOTDIR, and the `stat` family and `access` whatever
 *   they answered: a path looked for (a module resolver's candidates), which a file made there
 *   would change.
 *
 * What it cannot see: files a long-lived process outside the test's own (a database server, a
 * daemon it talks to over a socket) reads for it, and reads through descriptors passed in.
 * Paths outside `root` and inside `.git`/`.hg` are left out; the rest are relative to `root`.
 */
import path from 'node:path/posix';
import type { TestFileDeps } from '../../core/affected';

/** The syscalls to trace (`strace -e trace=…`). */
export const TRACED_SYSCALLS = ['open', 'openat', 'openat2', 'execve', 'execveat', 'chdir', 'stat', 'lstat', 'newfstatat', 'statx', 'access', 'faccessat', 'faccessat2'];

/** Where the runner finds strace (its own /usr, which a sandbox without an image shows too). */
export const STRACE = '/usr/bin/strace';

/**
 * `argv` run under strace, its trace written to `out`: every process it starts (`-f`), each
 * descriptor's path resolved (`-y`), no notes of attaches and exits (`-qq`). strace exits with
 * the test's own status, or dies of its signal. `strace`: how to start it (in an image, the
 * runner's brought in: isolation/straceKit.ts).
 */
export function tracedArgv(out: string, argv: readonly string[], strace: readonly string[] = [STRACE]): string[] {
  return [...strace, '-f', '-qq', '-y', '-e', `trace=${TRACED_SYSCALLS.join(',')}`, '-o', out, '--', ...argv];
}

const PATH_CALLS = new Set(TRACED_SYSCALLS);
const LOOKUPS = new Set(['stat', 'lstat', 'newfstatat', 'statx', 'access', 'faccessat', 'faccessat2']);

/** One finished syscall line: `PID name(args) = result`. */
const CALL = /^(\d+) +(\w+)\((.*)\) += (.*)$/;
/** A call strace split because another process's came between: its start, and its end. */
const UNFINISHED = /^(\d+) +(.*) <unfinished \.\.\.>$/;
const RESUMED = /^(\d+) +<\.\.\. \w+ resumed>(.*)$/;

export function parseFileTrace(trace: string, root: string): TestFileDeps {
  const reads = new Set<string>();
  const lists = new Set<string>();
  const probes = new Set<string>();
  const cwd = new Map<string, string>();
  const pending = new Map<string, string>();
  const inside = (p: string | null): string | null => {
    if (p === null) return null;
    const rel = path.relative(root, path.normalize(p));
    if (rel === '' || rel.startsWith('..') || path.isAbsolute(rel)) return null;
    if (rel === '.git' || rel === '.hg' || rel.startsWith('.git/') || rel.startsWith('.hg/')) return null;
    return rel;
  };
  for (const raw of trace.split('\n')) {
    let line = raw;
    const unfinished = UNFINISHED.exec(line);
    if (unfinished) {
      pending.set(unfinished[1]!, unfinished[2]!);
      continue;
    }
    const resumed = RESUMED.exec(line);
    if (resumed) {
      const start = pending.get(resumed[1]!);
      if (start === undefined) continue;
      pending.delete(resumed[1]!);
      line = `${resumed[1]} ${start}${resumed[2]}`;
    }
    const m = CALL.exec(line);
    if (!m || !PATH_CALLS.has(m[2]!)) continue;
    const [, pid, name, args, result] = m as unknown as [string, string, string, string, string];
    const here = cwd.get(pid) ?? root;
    const strings = quoted(args);
    const first = strings[0];
    if (first === undefined) continue;
    // The directory a relative path starts from: the descriptor's path (`AT_FDCWD</dir>`, `3</dir>`) when the call takes one.
    const dirfd = /^(?:AT_FDCWD|\d+)<([^>]*)>,/.exec(args)?.[1];
    const target = path.resolve(dirfd ?? here, first);
    const ok = /^0(?:\s|$)|^\d+</.test(result) || result === '0';
    if (name === 'chdir') {
      if (ok) cwd.set(pid, target);
      continue;
    }
    if (LOOKUPS.has(name)) {
      const rel = inside(target);
      if (rel !== null) probes.add(rel);
      continue;
    }
    if (!ok) {
      if (/ENOENT|ENOTDIR/.test(result)) {
        const rel = inside(target);
        if (rel !== null) probes.add(rel);
      }
      continue;
    }
    if (name === 'execve' || name === 'execveat') {
      const rel = inside(target);
      if (rel !== null) reads.add(rel);
      continue;
    }
    // An open: the resolved path of the new descriptor, which follows symbolic links.
    const opened = inside(/^\d+<([^>]*)>/.exec(result)?.[1] ?? target);
    if (opened === null) continue;
    if (/\bO_DIRECTORY\b/.test(args)) lists.add(opened);
    else reads.add(opened);
    // The path as the test named it, when a link led elsewhere: changing the link changes the test.
    const named = inside(target);
    if (named !== null && named !== opened) reads.add(named);
  }
  const sorted = (s: Iterable<string>) => [...s].sort();
  return { reads: sorted(reads), lists: sorted(lists), probes: sorted([...probes].filter((p) => !reads.has(p) && !lists.has(p))) };
}

/** The C strings of a syscall's arguments as strace prints them (`"…"`, with its escapes), in order. */
function quoted(args: string): string[] {
  const out: string[] = [];
  for (const m of args.matchAll(/"((?:[^"\\]|\\.)*)"/g)) out.push(unescapeC(m[1]!));
  return out;
}

function unescapeC(s: string): string {
  const bytes: number[] = [];
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (c !== '\\') {
      bytes.push(...Buffer.from(c, 'utf8'));
      continue;
    }
    const n = s[++i]!;
    if (n === 'x') {
      bytes.push(parseInt(s.slice(i + 1, i + 3), 16));
      i += 2;
    } else if (/[0-7]/.test(n)) {
      const oct = /^[0-7]{1,3}/.exec(s.slice(i))![0];
      bytes.push(parseInt(oct, 8));
      i += oct.length - 1;
    } else {
      bytes.push(({ n: 10, t: 9, r: 13, v: 11, f: 12 } as Record<string, number>)[n] ?? n.charCodeAt(0));
    }
  }
  return Buffer.from(bytes).toString('utf8');
}
