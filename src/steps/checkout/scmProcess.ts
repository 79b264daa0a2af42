/**
 * Running git or hg for a pull or push: no shell, the tool in its own process group (so a
 * timeout or an abort also kills the ssh it started; otherwise ssh could linger until its own
 * timeouts), stderr kept up to a cap. The promise settles once the tool and its ssh have let
 * go of our pipes, i.e. have exited, so the caller may remove the key file right after.
 */
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** How one pull or push runs: where, with what environment, for how long, and its secrets. */
export interface ScmContext {
  workdir: string;
  env: NodeJS.ProcessEnv;
  timeoutMs: number;
  signal?: AbortSignal;
  /** What must never show in an error: the key, and the paths of its temporary file. */
  secrets: { privateKey: string; paths: string[] };
}

export interface ScmOutcome {
  ok: boolean;
  stdout: string;
  stderr: string;
  /** Why the tool did not get to finish on its own, if it didn't. */
  interrupted: 'timeout' | 'aborted' | null;
}

const MAX_STDERR = 64 * 1024;

/** Runs `program argv` in `ctx.workdir`; `notInstalled` is the error when the program is missing. */
export function runScmProcess(program: string, argv: string[], ctx: ScmContext, notInstalled: string): Promise<ScmOutcome> {
  return new Promise((resolve) => {
    if (ctx.signal?.aborted) return resolve({ ok: false, stdout: '', stderr: '', interrupted: 'aborted' });
    const child = spawn(program, argv, { cwd: ctx.workdir, env: ctx.env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    const stdout: Buffer[] = [];
    let stderr = '';
    let interrupted: ScmOutcome['interrupted'] = null;
    child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => {
      if (stderr.length < MAX_STDERR) stderr += chunk.toString('utf8');
    });
    const interrupt = (why: 'timeout' | 'aborted') => {
      interrupted ??= why;
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    };
    const timer = setTimeout(() => interrupt('timeout'), ctx.timeoutMs);
    const onAbort = () => interrupt('aborted');
    ctx.signal?.addEventListener('abort', onAbort, { once: true });
    const done = (outcome: ScmOutcome) => {
      clearTimeout(timer);
      ctx.signal?.removeEventListener('abort', onAbort);
      resolve(outcome);
    };
    child.once('error', (error: NodeJS.ErrnoException) => {
      done({ ok: false, stdout: '', stderr: error.code === 'ENOENT' ? notInstalled : error.message, interrupted });
    });
    child.once('close', (code) => {
      done({ ok: code === 0 && interrupted === null, stdout: Buffer.concat(stdout).toString('utf8'), stderr, interrupted });
    });
  });
}

/** Limit of each git or hg command unless the caller sets one. */
export const DEFAULT_SCM_TIMEOUT_MS = 10 * 60_000;
const FALLBACK_PATH = '/usr/local/bin:/usr/bin:/bin';

/** A pull or push failure with a message safe to show users and store; `reason` says what kind. */
export class ScmError<Reason extends string> extends Error {
  constructor(
    message: string,
    readonly reason: Reason,
  ) {
    super(message);
  }

  /** Whether trying again later may succeed (network trouble), as opposed to a setup error. */
  get retryable(): boolean {
    return this.reason === 'unreachable';
  }
}

/** The fresh temporary directory of one pull or push: an empty HOME, and where the key file goes. */
export interface ScmScratch {
  dir: string;
  keyDir: string;
  keyFile: string;
  /** What must never show in an error: the key and the paths of its file. */
  secrets: ScmContext['secrets'];
  /**
   * The whole environment the tool starts from: PATH (how the worker was told where git, hg and
   * ssh live; it carries no secrets), the empty HOME and the C locale. Nothing else of the
   * worker's environment (database URL, secret key, tokens) reaches the tool or its hooks.
   */
  env: NodeJS.ProcessEnv;
}

/**
 * Where scratch directories go: $TMPDIR as this module sees it, else the system's. (Under jest,
 * os.tmpdir() reads the real process's environment, not the test file's; tests that count
 * scratch directories give each file a TMPDIR of its own.)
 */
export function scratchBase(): string {
  return process.env.TMPDIR || tmpdir();
}

/** Makes the scratch directory; the caller removes `dir` in `finally`. */
export async function makeScratch(tool: string, privateKey: string): Promise<ScmScratch> {
  const dir = await mkdtemp(join(scratchBase(), `sluice-${tool}-`));
  const home = join(dir, 'home');
  const keyDir = join(dir, 'key');
  const keyFile = join(keyDir, 'id');
  try {
    await mkdir(home, { mode: 0o700 });
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    dir,
    keyDir,
    keyFile,
    secrets: { privateKey, paths: [keyFile, keyDir, dir] },
    env: { PATH: process.env.PATH || FALLBACK_PATH, HOME: home, LANG: 'C', LC_ALL: 'C' },
  };
}

export async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

/** `email NUL name` lines (newest first) as distinct committers: the e-mail, else the name. */
export function parseCommitters(out: string): string[] {
  const seen = new Set<string>();
  for (const line of out.split('\n')) {
    if (!line) continue;
    const [email = '', name = ''] = line.split('\0');
    const who = email.trim() || name.trim();
    if (who) seen.add(who);
  }
  return [...seen];
}

/**
 * A tool's stderr as one line for an error message: each line with `prefix` removed, blank and
 * `boilerplate` lines dropped (unless nothing else is left), at most 1,000 characters.
 */
export function summarizeStderr(stderr: string, prefix: (line: string) => string, boilerplate: readonly RegExp[]): string {
  const lines = stderr
    .split(/\r?\n/)
    .map((l) => prefix(l.trim()))
    .filter((l) => l.length > 0);
  const meaningful = lines.filter((l) => !boilerplate.some((re) => re.test(l)));
  const chosen = meaningful.length > 0 ? meaningful : lines;
  const summary = chosen.join('; ');
  return summary.length > 1000 ? `${summary.slice(0, 1000)}…` : summary;
}

/** What ssh says when the key is not let in or the host is not trusted, whichever tool ran it. */
export const SSH_DENIED = /Permission denied|Host key verification failed|Too many authentication failures|no matching host key/i;
