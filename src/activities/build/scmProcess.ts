/**
 * Running git or hg for a pull or push: no shell, the tool in its own process group (so a
 * timeout or an abort also kills the ssh it started; otherwise ssh could linger until its own
 * timeouts), stderr kept up to a cap. The promise settles once the tool and its ssh have let
 * go of our pipes, i.e. have exited, so the caller may remove the key file right after.
 */
import { spawn } from 'node:child_process';

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
