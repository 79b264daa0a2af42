/**
 * One process of a build (a test file, a hook), as every build step starts it: in a process
 * group of its own, so a time-out or a stop kills everything it started; with the environment
 * it is given and nothing of the runner's (which holds database URLs and the secret key); as
 * the build user and in the sandbox when the runner has them; with bounded output capture.
 */
import { tracedArgv } from '../tests/fileTrace';
import { spawn, type ChildProcess } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { constants as osConstants } from 'node:os';
import { launch, type BuildUser, type Sandbox, type SandboxDirs } from './sandbox';

export type { BuildUser } from './sandbox';

/** Where a process group is reported while it lives. */
export interface ProcessGroups {
  track(pgid: number): void;
  untrack(pgid: number): void;
}

export interface RunProcessInput {
  argv: string[];
  /** Working directory (the checkout). */
  cwd: string;
  /** The whole environment. */
  env: Record<string, string>;
  /** What to call the program in messages. */
  program: string;
  /** The checkout and its home: what the process may write in the sandbox, where it sees them at SANDBOX_TREE and SANDBOX_HOME. */
  dirs: SandboxDirs;
  /** Wall-clock limit; 0 or less means none. */
  timeoutMs: number;
  /** Aborting stops the process (the session was stopped, the activity was cancelled). */
  signal?: AbortSignal;
  /** Between SIGTERM and SIGKILL. Default 2000 ms. */
  killGraceMs?: number;
  /** How much output is kept (the end of it). Default 64 KiB. */
  maxOutputBytes?: number;
  /** Told of every piece of output as it arrives, stdout and stderr alike (live output: liveOutput.ts). */
  onOutput?: (chunk: Buffer) => void;
  /** Told of the process group while it lives, so that it dies with the runner (reaper.ts). */
  processGroups?: ProcessGroups;
  /** Run as this unprivileged user (the runner is root): it cannot read the runner. */
  runAs?: BuildUser;
  /** Run in bubblewrap (SLUICE_SANDBOX=bwrap): it sees its tree and nothing of the runner's. */
  sandbox?: Sandbox;
  /**
   * `argv` is `sh -c …`: an exit code of 128 + N is the shell saying its command died of signal
   * N (a crash), as bwrap says it for the sandbox.
   */
  viaShell?: boolean;
  /** Run under strace, its trace written to this file (a mapping run: steps/tests/fileTrace.ts). */
  trace?: string;
}

export interface ProcessResult {
  status: 'passed' | 'failed' | 'error';
  exitCode: number | null;
  durationMs: number;
  /** stdout and stderr in arrival order, possibly truncated at the front; our notes last. */
  output: string;
}

const DEFAULT_GRACE_MS = 2000;
const DEFAULT_MAX_OUTPUT = 64 * 1024;
/** How long to wait for output pipes after the process exited (an escaped daemon may hold them). */
const DRAIN_MS = 1000;
const POLL_MS = 25;

// --- output -----------------------------------------------------------------------------------

/** Keeps the last `cap` bytes of what is pushed, counting what was dropped. */
export class TailBuffer {
  private chunks: Buffer[] = [];
  private size = 0;
  private dropped = 0;

  constructor(private readonly cap: number) {}

  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.size += chunk.length;
    while (this.chunks.length > 1 && this.size - this.chunks[0]!.length >= this.cap) {
      const first = this.chunks.shift()!;
      this.size -= first.length;
      this.dropped += first.length;
    }
  }

  toString(): string {
    let all = Buffer.concat(this.chunks);
    let dropped = this.dropped;
    if (all.length > this.cap) {
      dropped += all.length - this.cap;
      all = all.subarray(all.length - this.cap);
    }
    if (dropped === 0) return all.toString('utf8');
    // Don't start in the middle of a UTF-8 character.
    let start = 0;
    while (start < 3 && start < all.length && (all[start]! & 0xc0) === 0x80) start += 1;
    return `[sluice] output truncated: the first ${dropped + start} bytes were dropped\n${all.subarray(start).toString('utf8')}`;
  }
}

// --- process groups ---------------------------------------------------------------------------

function signalGroup(pgid: number, sig: NodeJS.Signals | 0): boolean {
  // kill(-1) would signal every process we may signal, kill(-0) our own group: never.
  if (!Number.isInteger(pgid) || pgid <= 1) return false;
  try {
    process.kill(-pgid, sig);
    return true;
  } catch {
    return false; // ESRCH: nobody left in the group
  }
}

/**
 * Whether any live process is still in group `pgid`. kill(0) alone would also count zombies,
 * which linger when PID 1 of a container does not reap orphans; on Linux /proc tells them apart.
 */
export async function processGroupAlive(pgid: number): Promise<boolean> {
  if (!signalGroup(pgid, 0)) return false;
  let entries: string[];
  try {
    entries = await readdir('/proc');
  } catch {
    return true;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const text = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    // pid (comm) state ppid pgrp ...; comm may contain spaces and parentheses.
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    if (Number(fields[2]) === pgid && fields[0] !== 'Z' && fields[0] !== 'X') return true;
  }
  return false;
}

async function waitGroupGone(pgid: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (!(await processGroupAlive(pgid))) return true;
    if (Date.now() >= deadline) return false;
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

/** SIGTERM the whole group, then SIGKILL whatever is still there after `graceMs`. */
export async function killProcessGroup(pgid: number, graceMs: number): Promise<void> {
  if (!signalGroup(pgid, 'SIGTERM')) return;
  signalGroup(pgid, 'SIGCONT'); // a stopped process only sees SIGTERM once it runs again
  if (await waitGroupGone(pgid, graceMs)) return;
  signalGroup(pgid, 'SIGKILL');
  await waitGroupGone(pgid, 2000);
}

function waitForClose(child: ChildProcess, ms: number): Promise<void> {
  return new Promise((resolve) => {
    if (child.stdout?.closed !== false && child.stderr?.closed !== false) return resolve();
    const timer = setTimeout(() => {
      // Something outside the group (it called setsid) still holds our pipes: stop reading.
      child.stdout?.destroy();
      child.stderr?.destroy();
      resolve();
    }, ms);
    child.once('close', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/** The signal an exit code of 128 + N stands for, or null. */
export function signalOfExitCode(code: number): NodeJS.Signals | null {
  if (code <= 128) return null;
  const found = Object.entries(osConstants.signals).find(([, n]) => n === code - 128);
  return found ? (found[0] as NodeJS.Signals) : null;
}

// --- running ---------------------------------------------------------------------------------

/** Runs `input.argv`; `started` is when the caller began (so checks before the start count in the duration). */
export async function runProcess(input: RunProcessInput, started = performance.now()): Promise<ProcessResult> {

  const { program, argv } = input;
  const graceMs = input.killGraceMs ?? DEFAULT_GRACE_MS;
  const output = new TailBuffer(input.maxOutputBytes ?? DEFAULT_MAX_OUTPUT);
  const notes: string[] = [];
  const finish = (status: ProcessResult['status'], exitCode: number | null, durationMs: number): ProcessResult => {
    const text = output.toString();
    const tail = notes.map((n) => `[sluice] ${n}\n`).join('');
    const sep = text && tail && !text.endsWith('\n') ? '\n' : '';
    return { status, exitCode, durationMs, output: text + sep + tail };
  };

  const strace = input.sandbox?.image ? input.sandbox.strace?.command : undefined;
  const command = launch(input.sandbox, input.dirs, input.cwd, input.trace ? tracedArgv(input.trace, argv, strace) : argv, input.env);
  let child: ChildProcess;
  try {
    child = spawn(command.argv[0]!, command.argv.slice(1), {
      cwd: input.cwd,
      env: command.env,
      // Its own process group: on timeout or stop we kill the test and all it started.
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      // As another user, the test can read neither the runner's environment nor its memory.
      ...(input.runAs ? { uid: input.runAs.uid, gid: input.runAs.gid } : {}),
    });
  } catch (e) {
    notes.push(`could not start ${program}: ${(e as Error).message}`);
    return finish('error', null, Math.round(performance.now() - started));
  }
  const onOutput = input.onOutput;
  const take = onOutput
    ? (chunk: Buffer) => {
        output.push(chunk);
        onOutput(chunk);
      }
    : (chunk: Buffer) => output.push(chunk);
  child.stdout?.on('data', take);
  child.stderr?.on('data', take);

  const spawnError = await new Promise<NodeJS.ErrnoException | null>((resolve) => {
    child.once('spawn', () => resolve(null));
    child.once('error', (e) => resolve(e));
  });
  if (spawnError || child.pid === undefined) {
    let why = spawnError?.message ?? 'no process id';
    if (spawnError?.code === 'ENOENT') {
      // The file exists (checked above), so for a test run directly ENOENT means its #! line.
      why = program === argv[0] ? 'command not found' : 'its interpreter (the #! line) was not found';
    }
    notes.push(`could not start ${program}: ${why}`);
    return finish('error', null, Math.round(performance.now() - started));
  }
  const pgid = child.pid;
  // Until its group is known dead below, the runner's reaper kills it if the runner dies.
  input.processGroups?.track(pgid);

  // Set from timer/abort callbacks, hence an object (TypeScript can't see closure writes).
  const stopping: { reason: string | null; killed: Promise<void> | null } = { reason: null, killed: null };
  const stop = (reason: string) => {
    if (stopping.reason !== null) return;
    stopping.reason = reason;
    stopping.killed = killProcessGroup(pgid, graceMs);
  };
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve({ code: child.exitCode, signal: child.signalCode });
    else child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  const timer = input.timeoutMs > 0 ? setTimeout(() => stop(`timed out after ${input.timeoutMs} ms`), input.timeoutMs) : null;
  const onAbort = () => stop('stopped');
  input.signal?.addEventListener('abort', onAbort, { once: true });
  if (input.signal?.aborted) onAbort(); // aborted while we waited for the spawn

  const { code, signal } = await exited;
  const durationMs = Math.round(performance.now() - started);
  if (timer) clearTimeout(timer);
  input.signal?.removeEventListener('abort', onAbort);

  if (stopping.killed) {
    await stopping.killed;
  } else if (await processGroupAlive(pgid)) {
    // The test is over; background processes it left behind must not outlive it.
    notes.push('killed processes the test left running');
    await killProcessGroup(pgid, graceMs);
  }
  await waitForClose(child, DRAIN_MS);
  input.processGroups?.untrack(pgid);

  if (stopping.reason !== null) {
    notes.push(stopping.reason);
    return finish('error', code, durationMs);
  }
  // In the sandbox, bwrap reports its test's death by signal N as the shell does: 128 + N.
  const died = signal ?? ((input.sandbox || input.viaShell) && code !== null ? signalOfExitCode(code) : null);
  if (died !== null) {
    notes.push(`killed by signal ${died}`);
    return finish('error', null, durationMs);
  }
  return finish(code === 0 ? 'passed' : 'failed', code, durationMs);
}
