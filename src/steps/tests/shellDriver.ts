/**
 * Many test files, still one process each, started from one small shell instead of from the
 * runner: Node.js pays about 2 ms to start a process from a small process and 6 ms from one the
 * size of a runner (fork copies its page tables), `sh` a fraction of that. For short files that
 * start is the whole cost, so a lane hands a claim of several files to one `sh` (the driver)
 * that starts each in turn (issue 22: per-file cost within 3× of a plain `sh` loop).
 *
 * Each file still runs as runTestFile runs it: the test command's words (or the file itself),
 * in the sandbox when there is one, as the build user, in a session and process group of its
 * own (`setsid`), with the worker's environment, stdin closed, stdout and stderr together. The
 * runner keeps every control it had: it hears of each file's start with its process group (the
 * reaper tracks it; a time-out or a stop kills it), of its end with its exit status, and reads
 * its output up to a boundary the driver prints after it, which carries a random value the
 * tests never see (it comes on the driver's stdin), so a file cannot end another's output.
 */
import { randomBytes } from 'node:crypto';
import { spawn, type ChildProcess } from 'node:child_process';
import { constants, existsSync } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { killProcessGroup, processGroupAlive, signalOfExitCode, TailBuffer, type ProcessResult, type RunProcessInput } from '../isolation/process';
import { insideSandbox, launch } from '../isolation/sandbox';
import { checkTestPath, splitArgs, testEnvironment } from './runTestFile';

export interface ShellDriverInput extends Pick<RunProcessInput, 'timeoutMs' | 'signal' | 'killGraceMs' | 'maxOutputBytes' | 'processGroups' | 'runAs' | 'sandbox'> {
  workdir: string;
  /** The worker's home (HOME of every file). */
  home: string;
  /** The profile's test command (split into words, the file appended), or null: each file runs itself. */
  command: string | null;
  /** The build's variables, over the clean base. */
  env: Record<string, string>;
  /** Paths relative to the checkout, in the order they run. */
  files: string[];
  /** Which driver: bash's (by default where there is one) or sh's with setsid. */
  shell?: keyof typeof SHELLS;
  /** Where a file's output goes while it runs (steps/liveOutput.ts), made when it starts. */
  live?: (path: string) => { onOutput(chunk: Buffer): void; end(result: Pick<ProcessResult, 'status' | 'exitCode' | 'durationMs'>): Promise<void> };
}

export interface DriverFileResult extends ProcessResult {
  path: string;
  startedAt: Date;
}

const DEFAULT_GRACE_MS = 2000;
const DEFAULT_MAX_OUTPUT = 64 * 1024;
/** Paths written ahead of the file that runs. */
const WINDOW = 8;

/**
 * The driver: reads the boundary value, then one path a line; starts each file in a process
 * group of its own, says `start <n> <pid>` and `end <n> <status>` on fd 3, and prints the
 * boundary on stdout after each file's output. Files get stdin from /dev/null and no fd 3.
 *
 * bash with job control (`set -m`) gives each background job a group of its own as it starts it;
 * where there is no bash, sh has `setsid` (util-linux) start the file in a session of its own,
 * an exec more a file (about half a millisecond).
 */
const driver = (start: string) => `IFS= read -r boundary || exit 0
n=0
while IFS= read -r f; do
  n=$((n + 1))
  ${start} "$@" "$f" </dev/null 2>&1 3>&- &
  pid=$!
  printf 'start %s %s\\n' "$n" "$pid" >&3
  wait "$pid"
  rc=$?
  printf '\\n%s %s\\n' "$boundary" "$n"
  printf 'end %s %s\\n' "$n" "$rc" >&3
done`;
const SHELLS = { bash: ['/bin/bash', '-c', `set -m\n${driver('')}`], sh: ['/bin/sh', '-c', driver('setsid')] } as const;
const SHELL = existsSync('/bin/bash') ? 'bash' : 'sh';

/** Runs `files` one after another from one shell; their results, in order (fewer when stopped). */
export async function runFilesFromShell(input: ShellDriverInput): Promise<DriverFileResult[]> {
  const results: DriverFileResult[] = [];
  const error = (path: string, why: string): DriverFileResult => ({ path, status: 'error', exitCode: null, durationMs: 0, output: `[sluice] ${why}\n`, startedAt: new Date() });

  const workdirInfo = await stat(input.workdir).catch(() => null);
  if (!workdirInfo?.isDirectory()) return input.files.map((f) => error(f, `the working tree ${input.workdir} does not exist`));
  const runsFileItself = input.command === null || input.command.trim() === '';
  let words: string[] = [];
  if (!runsFileItself) {
    try {
      words = splitArgs(input.command ?? '');
    } catch (e) {
      return input.files.map((f) => error(f, (e as Error).message));
    }
  }

  // What runTestFile refuses before starting anything, refused the same way here.
  const runnable: string[] = [];
  const refused = new Map<string, DriverFileResult>();
  for (const path of input.files) {
    const problem = checkTestPath(path) ?? (path.includes('\n') ? `test path has a line break: ${JSON.stringify(path)}` : null) ?? (runsFileItself ? await notRunnable(input.workdir, path) : null);
    if (problem) refused.set(path, error(path, problem));
    else runnable.push(path);
  }
  const started = runnable.length > 0 ? await drive(input, runsFileItself, words, runnable) : [];
  const byPath = new Map(started.map((r) => [r.path, r]));
  for (const path of input.files) {
    const r = refused.get(path) ?? byPath.get(path);
    if (r) results.push(r);
  }
  return results;
}

async function notRunnable(workdir: string, path: string): Promise<string | null> {
  const info = await stat(join(workdir, path)).catch(() => null);
  if (!info?.isFile()) return `${path} does not exist or is not a file`;
  const executable = await access(join(workdir, path), constants.X_OK).then(
    () => true,
    () => false,
  );
  return executable ? null : `${path} is not executable: set its executable bit (chmod +x) or configure a test command`;
}

interface Running {
  path: string;
  startedAt: Date;
  t0: number;
  pid: number | null;
  output: TailBuffer;
  notes: string[];
  /** Why the runner stopped it (a time-out, a stop), if it did. */
  stopped: string | null;
  killed: Promise<void> | null;
  timer: NodeJS.Timeout | null;
  status: number | null;
  /** Its output ended (the boundary came). */
  drained: boolean;
  durationMs: number;
  live: ReturnType<NonNullable<ShellDriverInput['live']>> | null;
  /**
   * What it printed before the driver's `start` line came: stdout and fd 3 are two pipes, so its
   * first output can be read first. Handed to its live output when that starts.
   */
  early: Buffer[];
}

async function drive(input: ShellDriverInput, runsFileItself: boolean, words: string[], files: string[]): Promise<DriverFileResult[]> {
  const graceMs = input.killGraceMs ?? DEFAULT_GRACE_MS;
  const cap = input.maxOutputBytes ?? DEFAULT_MAX_OUTPUT;
  const boundary = randomBytes(16).toString('hex');
  const dirs = { tree: input.workdir, home: input.home };
  // Each file starts with these words (in the sandbox, when there is one) and its path after them.
  const start = launch(input.sandbox, dirs, input.workdir, words, testEnvironment(input.home, input.env));
  // A file that runs itself is named by its absolute path, as the sandbox shows it when there is one.
  const absolute = (path: string) => (input.sandbox ? insideSandbox(dirs, join(input.workdir, path)) : join(input.workdir, path));
  const arg = (path: string) => (runsFileItself ? absolute(path) : path.startsWith('-') ? `./${path}` : path);
  const program = (path: string) => (runsFileItself ? path : words[0]!);

  const files$ = files.map<Running>((path) => ({
    path,
    startedAt: new Date(),
    t0: 0,
    pid: null,
    output: new TailBuffer(cap),
    notes: [],
    stopped: null,
    killed: null,
    timer: null,
    status: null,
    drained: false,
    durationMs: 0,
    live: null,
    early: [],
  }));
  const done: Promise<void>[] = [];

  let child: ChildProcess;
  try {
    const [shell, ...args] = SHELLS[input.shell ?? SHELL];
    child = spawn(shell, [...args, 'sluice-driver', ...start.argv], {
      cwd: input.workdir,
      env: start.env,
      // The driver's own group: a stop kills it with the file it is on.
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
      ...(input.runAs ? { uid: input.runAs.uid, gid: input.runAs.gid } : {}),
    });
  } catch (e) {
    return files$.map((f) => ({ path: f.path, status: 'error', exitCode: null, durationMs: 0, output: `[sluice] could not start the shell that runs test files: ${(e as Error).message}\n`, startedAt: f.startedAt }));
  }
  const driverPid = child.pid;
  if (driverPid !== undefined) input.processGroups?.track(driverPid);
  // Paths go a few ahead of the file running, so a stop holds back the rest: the driver is never
  // killed (between starting a file and saying so, that would orphan it); it runs out of work.
  child.stdin!.on('error', () => undefined);
  let sent = 0;
  const feed = () => {
    if (child.stdin!.writableEnded) return;
    const upTo = Math.min(files.length, files$.filter((f) => f.status !== null).length + WINDOW);
    if (upTo > sent) child.stdin!.write(files.slice(sent, upTo).map((p) => `${arg(p)}\n`).join(''));
    sent = upTo;
    if (sent === files.length) child.stdin!.end();
  };
  child.stdin!.write(`${boundary}\n`);
  feed();

  const take = (f: Running, bytes: Buffer) => {
    f.output.push(bytes);
    if (f.live) f.live.onOutput(bytes);
    else if (f.pid === null) f.early.push(bytes);
  };
  // stdout: each file's output, up to its boundary line.
  const marker = Buffer.from(`\n${boundary} `);
  let current = 0;
  let pending: Buffer = Buffer.alloc(0);
  child.stdout!.on('data', (chunk: Buffer) => {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
    for (;;) {
      const at = pending.indexOf(marker);
      if (at === -1) {
        // Keep back only what could be the start of a boundary split across chunks.
        const keep = boundaryStart(pending, marker);
        if (pending.length > keep && current < files$.length) take(files$[current]!, pending.subarray(0, pending.length - keep));
        if (pending.length > keep) pending = pending.subarray(pending.length - keep);
        return;
      }
      const eol = pending.indexOf(0x0a, at + marker.length);
      if (eol === -1) return; // the rest of the boundary line comes with the next chunk
      if (current < files$.length) {
        const f = files$[current]!;
        if (at > 0) take(f, pending.subarray(0, at));
        f.drained = true;
        maybeDone(f);
      }
      current += 1;
      pending = pending.subarray(eol + 1);
    }
  });
  child.stderr!.on('data', () => undefined); // the driver's own complaints (none expected)

  // fd 3: starts and ends.
  let control = '';
  const controlPipe = child.stdio[3] as NodeJS.ReadableStream;
  controlPipe.on('data', (chunk: Buffer) => {
    control += chunk.toString('utf8');
    let nl: number;
    while ((nl = control.indexOf('\n')) !== -1) {
      const line = control.slice(0, nl);
      control = control.slice(nl + 1);
      const [what, n, value] = line.split(' ');
      const f = files$[Number(n) - 1];
      if (!f) continue;
      if (what === 'start') {
        f.startedAt = new Date();
        f.t0 = performance.now();
        f.pid = Number(value);
        f.live = input.live?.(f.path) ?? null;
        for (const bytes of f.early.splice(0)) f.live?.onOutput(bytes);
        input.processGroups?.track(f.pid);
        if (input.timeoutMs > 0) f.timer = setTimeout(() => stop(f, `timed out after ${input.timeoutMs} ms`), input.timeoutMs);
        if (input.signal?.aborted) stop(f, 'stopped');
      } else if (what === 'end') {
        f.durationMs = Math.round(performance.now() - f.t0);
        f.status = Number(value);
        if (f.timer) clearTimeout(f.timer);
        maybeDone(f);
        if (!input.signal?.aborted) feed();
      }
    }
  });

  const stop = (f: Running, reason: string) => {
    if (f.stopped !== null || f.pid === null) return;
    f.stopped = reason;
    f.killed = killProcessGroup(f.pid, graceMs);
  };
  const onAbort = () => {
    child.stdin!.end();
    for (const f of files$) if (f.pid !== null && f.status === null) stop(f, 'stopped');
  };
  input.signal?.addEventListener('abort', onAbort, { once: true });
  if (input.signal?.aborted) onAbort(); // stopped while the files were being checked

  /** A file whose end and output both came: its leftovers killed, its result made. */
  function maybeDone(f: Running): void {
    if (f.status === null || !f.drained || f.pid === null) return;
    const pid = f.pid;
    done.push(
      (async () => {
        if (f.killed) {
          await f.killed;
        } else if (await processGroupAlive(pid)) {
          // The file is over; background processes it left behind must not outlive it.
          f.notes.push('killed processes the test left running');
          await killProcessGroup(pid, graceMs);
        }
        input.processGroups?.untrack(pid);
        // Its live output ends now (the writer flushes only while the file runs).
        await f.live?.end(verdict(f, program(f.path)));
      })(),
    );
  }

  const exited = await new Promise<number | null>((resolve) => {
    child.once('error', () => resolve(null));
    child.once('exit', (code) => resolve(code));
  });
  input.signal?.removeEventListener('abort', onAbort);
  // The last boundary may still be in the pipe after the driver exited, and so may the last
  // starts and ends on fd 3: `exit` can come before either pipe's data has been read (under load,
  // files that had passed were counted as never started). Only the driver holds fd 3 (files get
  // none), so its end comes as soon as what is in it has been read; a file's leftover process may
  // hold stdout open, so that wait is bounded.
  const ended = (stream: NodeJS.ReadableStream & { readableEnded?: boolean; destroy?: () => void }, boundMs: number) =>
    new Promise<void>((resolve) => {
      if (stream.readableEnded) return resolve();
      const timer = setTimeout(() => {
        stream.destroy?.();
        resolve();
      }, boundMs);
      // `close` too: a pipe destroyed unread (the driver never started) has no `end`.
      for (const event of ['end', 'close']) {
        stream.once(event, () => {
          clearTimeout(timer);
          resolve();
        });
      }
    });
  await Promise.all([ended(child.stdout!, 1000), ended(controlPipe, 30_000)]);
  // A file the driver never told the end of (it was killed under it): its timer goes, its group too.
  for (const f of files$) {
    if (f.timer) clearTimeout(f.timer);
    if (f.status === null && f.pid !== null) {
      f.durationMs = Math.round(performance.now() - f.t0);
      stop(f, input.signal?.aborted ? 'stopped' : 'the shell running the test files died');
      done.push(f.killed!.then(() => input.processGroups?.untrack(f.pid!)).then(() => f.live?.end(verdict(f, program(f.path)))));
    }
  }
  await Promise.all(done);
  if (driverPid !== undefined) input.processGroups?.untrack(driverPid);
  (controlPipe as unknown as { destroy?: () => void }).destroy?.();

  const results: DriverFileResult[] = [];
  for (const f of files$) {
    if (f.status === null && f.stopped === null) {
      // Never started: stopped before its turn (nothing of it counts), or the driver died first.
      if (input.signal?.aborted) continue;
      const why = `the shell running the test files died${exited === null ? '' : ` (exit ${exited})`}`;
      results.push({ path: f.path, status: 'error', exitCode: null, durationMs: f.durationMs, output: withNotes(f.output.toString(), [why]), startedAt: f.startedAt });
      continue;
    }
    results.push(verdict(f, program(f.path)));
  }
  return results;
}

function verdict(f: Running, program: string): DriverFileResult {
  const text = f.output.toString();
  const base = { path: f.path, durationMs: f.durationMs, startedAt: f.startedAt };
  if (f.stopped !== null) {
    const exitCode = f.status !== null && signalOfExitCode(f.status) === null ? f.status : null;
    return { ...base, status: 'error', exitCode, output: withNotes(text, [...f.notes, f.stopped]) };
  }
  // The driver could not start the file (its #! interpreter is missing) or the command: said by
  // setsid, or by bash as the driver (its $0).
  const startFailure = f.status === 126 || f.status === 127 ? /^(setsid: failed to execute |sluice-driver: line \d+: )(.*)$/m.exec(text) : null;
  if (startFailure) {
    const said = startFailure[2]!;
    const missing = /bad interpreter|required file not found$|No such file or directory$|command not found$/.test(said);
    const why = missing ? (program === f.path ? 'its interpreter (the #! line) was not found' : 'command not found') : 'permission denied';
    return { ...base, status: 'error', exitCode: null, output: withNotes('', [`could not start ${program}: ${why}`]) };
  }
  // `wait` reports a death by signal N as 128 + N.
  const died = f.status !== null ? signalOfExitCode(f.status) : null;
  if (died !== null) return { ...base, status: 'error', exitCode: null, output: withNotes(text, [...f.notes, `killed by signal ${died}`]) };
  return { ...base, status: f.status === 0 ? 'passed' : 'failed', exitCode: f.status, output: withNotes(text, f.notes) };
}

/** How many bytes at the end of `data` are the beginning of `marker` (a boundary cut in two). */
function boundaryStart(data: Buffer, marker: Buffer): number {
  for (let k = Math.min(data.length, marker.length); k > 0; k--) {
    if (data.subarray(data.length - k).equals(marker.subarray(0, k))) return k;
  }
  return 0;
}

function withNotes(text: string, notes: string[]): string {
  const tail = notes.map((n) => `[sluice] ${n}\n`).join('');
  const sep = text && tail && !text.endsWith('\n') ? '\n' : '';
  return text + sep + tail;
}
