/**
 * runTestFile with real processes: outcomes, the clean environment, output capture, and that a
 * timeout or a stop leaves nothing of the test running.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { processGroupAlive } from '../../src/steps/isolation/process';
import { runTestFile, type RunTestFileInput, type RunTestFileResult } from '../../src/steps/tests/runTestFile';
import { runFilesFromShell } from '../../src/steps/tests/shellDriver';
import type { Sandbox } from '../../src/steps/isolation/sandbox';
import { bwrapWorks, isAlive, processesMatching } from '../support/pids';
import { eventually } from '../support/wait';

let workdir: string;

async function script(name: string, body: string, mode = 0o755): Promise<string> {
  await writeFile(join(workdir, name), `#!/bin/sh\n${body}\n`, { mode });
  return name;
}

/** runTestFile, one process started from here. */
const direct = (path: string, overrides: Partial<RunTestFileInput> = {}) => runTestFile({ workdir, path, command: null, env: {}, timeoutMs: 30_000, ...overrides });

/**
 * The same file started by the shell driver a lane uses for several files (shellDriver.ts),
 * between two other files, which must pass untouched whatever the middle one does.
 */
const viaDriver = (path: string, overrides: Partial<RunTestFileInput> = {}) => throughDriver('bash', path, overrides);
/** The driver of a machine without bash: sh, and setsid to start each file. */
const viaShDriver = (path: string, overrides: Partial<RunTestFileInput> = {}) => throughDriver('sh', path, overrides);

async function throughDriver(shell: 'bash' | 'sh', path: string, overrides: Partial<RunTestFileInput>): Promise<RunTestFileResult> {
  await writeFile(join(overrides.workdir ?? workdir, 'before_ok.sh'), '#!/bin/sh\necho before\n', { mode: 0o755 }).catch(() => undefined);
  await writeFile(join(overrides.workdir ?? workdir, 'after_ok.sh'), '#!/bin/sh\necho after\n', { mode: 0o755 }).catch(() => undefined);
  const home = await mkdtemp(join(tmpdir(), 'sluice-test-home-driver-'));
  try {
    const { workdir: wd = workdir, command = null, env = {}, timeoutMs = 30_000, ...rest } = overrides;
    const fillers = command === null ? ['before_ok.sh', 'after_ok.sh'] : [];
    const results = await runFilesFromShell({ workdir: wd, home, command, env, timeoutMs, ...rest, shell, files: [...fillers.slice(0, 1), path, ...fillers.slice(1)] });
    // The file before is untouched; the one after too, unless the run was stopped (then it is stopped, or never ran).
    const [before, after] = fillers.map((p) => results.find((r) => r.path === p));
    if (before) expect([before.status, before.output]).toEqual(['passed', 'before\n']);
    if (after && !rest.signal?.aborted) expect([after.status, after.output]).toEqual(['passed', 'after\n']);
    if (after && rest.signal?.aborted) expect(after.status === 'passed' || after.output.endsWith('[sluice] stopped\n')).toBe(true);
    const mine = results.find((r) => r.path === path);
    if (!mine) throw new Error(`no result for ${path}`);
    const { path: _path, startedAt: _startedAt, ...result } = mine;
    return result;
  } finally {
    await rm(home, { recursive: true, force: true });
  }
}

async function readPid(name: string): Promise<number> {
  for (let i = 0; i < 100; i++) {
    const text = await readFile(join(workdir, name), 'utf8').catch(() => '');
    if (text.trim()) return Number(text.trim());
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`${name} was never written`);
}

/** Removes pid files an earlier run left (each case runs twice: directly and through the driver). */
const fresh = (...names: string[]) => Promise.all(names.map((n) => rm(join(workdir, n), { force: true })));

beforeAll(async () => {
  workdir = await mkdtemp(join(tmpdir(), 'sluice-runtest-'));
});

afterAll(async () => {
  await rm(workdir, { recursive: true, force: true });
});

describe.each([
  ['runTestFile', direct],
  ['the shell driver', viaDriver],
  ['the shell driver on sh', viaShDriver],
])('%s', (_how, run) => {
  it('passes on exit 0, with output', async () => {
    const result = await run(await script('pass.sh', 'echo all good'));
    expect(result).toMatchObject({ status: 'passed', exitCode: 0, output: 'all good\n' });
    expect(result.durationMs).toBeGreaterThanOrEqual(0);
  });

  it('fails on a non-zero exit, keeping stdout and stderr in order', async () => {
    const result = await run(await script('fail.sh', 'echo one; sleep 0.05; echo two >&2; sleep 0.05; echo three; exit 3'));
    expect(result).toMatchObject({ status: 'failed', exitCode: 3, output: 'one\ntwo\nthree\n' });
  });

  it('runs in the repository root', async () => {
    await script('pwd.sh', 'pwd');
    expect((await run('pwd.sh')).output.trim()).toBe(workdir);
  });

  it('is an error, with a clear message, when the file is not executable', async () => {
    const result = await run(await script('plain.sh', 'exit 0', 0o644));
    expect(result.status).toBe('error');
    expect(result.exitCode).toBeNull();
    expect(result.output).toMatch(/plain\.sh is not executable/);
  });

  it('is an error when the interpreter named by #! is missing', async () => {
    await writeFile(join(workdir, 'nointerp.sh'), '#!/no/such/interpreter\nexit 0\n', { mode: 0o755 });
    expect(await run('nointerp.sh')).toMatchObject({
      status: 'error',
      output: expect.stringMatching(/could not start nointerp\.sh: its interpreter \(the #! line\) was not found/),
    });
  });

  it('is an error when the working tree is gone', async () => {
    expect(await run('x.sh', { workdir: join(workdir, 'nope'), command: 'sh', timeoutMs: 1000 })).toMatchObject({
      status: 'error',
      output: expect.stringMatching(/working tree .* does not exist/),
    });
  });

  it('is an error when the file does not exist or the path leaves the repository', async () => {
    expect((await run('missing.sh')).output).toMatch(/missing\.sh does not exist/);
    expect(await run('../etc/passwd')).toMatchObject({ status: 'error', output: expect.stringMatching(/inside the repository/) });
    expect(await run('/bin/true')).toMatchObject({ status: 'error', output: expect.stringMatching(/relative/) });
  });

  it('runs a command with the file appended, without a shell', async () => {
    await writeFile(join(workdir, 'args.txt'), 'not executable, read by sh\n');
    await script('argv.sh', 'for a in "$@"; do echo "[$a]"; done');
    const result = await run('argv.sh', { command: `sh -e "argv.sh" 'a b' $HOME '*' '&&'` });
    // sh runs argv.sh with the rest as arguments: quotes honoured, nothing expanded.
    expect(result).toMatchObject({ status: 'passed', output: '[a b]\n[$HOME]\n[*]\n[&&]\n[argv.sh]\n' });
  });

  it('is an error when the command cannot be started or cannot be parsed', async () => {
    expect(await run('pass.sh', { command: 'no-such-program-here --x' })).toMatchObject({
      status: 'error',
      output: expect.stringMatching(/could not start no-such-program-here: command not found/),
    });
    expect(await run('pass.sh', { command: `sh 'unterminated` })).toMatchObject({
      status: 'error',
      output: expect.stringMatching(/unterminated single quote/),
    });
  });

  it('gives the test a clean environment: the base plus the build env, nothing of ours', async () => {
    process.env.SLUICE_TEST_LEAK = 'from-the-worker';
    try {
      await script('env.sh', 'env');
      const result = await run('env.sh', { env: { GIVEN: 'yes', API_TOKEN: 's3cret' } });
      const env = Object.fromEntries(
        result.output
          .trim()
          .split('\n')
          .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
      );
      expect(result.status).toBe('passed');
      expect(env.SLUICE_TEST_LEAK).toBeUndefined();
      expect(env.GIVEN).toBe('yes');
      expect(env.API_TOKEN).toBe('s3cret');
      expect(env).toMatchObject({ PATH: '/usr/local/bin:/usr/bin:/bin', LANG: 'C.UTF-8', CI: 'true', SLUICE: 'true' });
      expect(env.HOME).toMatch(/sluice-test-home-/);
      // Only the base, the given variables, and what sh itself sets (PWD, SHLVL, _).
      expect(Object.keys(env).filter((k) => !['PWD', 'SHLVL', '_', 'OLDPWD'].includes(k)).sort()).toEqual(
        ['API_TOKEN', 'CI', 'GIVEN', 'HOME', 'LANG', 'PATH', 'SLUICE'].sort(),
      );
    } finally {
      delete process.env.SLUICE_TEST_LEAK;
    }
  });

  it('times out: an error, and the test and everything it started are gone', async () => {
    await fresh('slow-child.pid', 'slow-main.pid');
    await script(
      'slow.sh',
      ['sleep 300 &', 'echo $! > slow-child.pid', 'echo $$ > slow-main.pid', 'echo started', 'sleep 300'].join('\n'),
    );
    const started = Date.now();
    const result = await run('slow.sh', { timeoutMs: 500, killGraceMs: 500 });
    expect(Date.now() - started).toBeLessThan(5000);
    expect(result.status).toBe('error');
    expect(result.output).toMatch(/started\n[\s\S]*\[sluice\] timed out after 500 ms\n$/);

    const main = await readPid('slow-main.pid');
    const child = await readPid('slow-child.pid');
    expect(isAlive(main)).toBe(false);
    expect(isAlive(child)).toBe(false);
    expect(await processGroupAlive(main)).toBe(false); // the test was the leader of its own group
  });

  it('kills with SIGKILL what ignores SIGTERM', async () => {
    await fresh('stubborn-child.pid', 'stubborn-main.pid');
    await script('stubborn.sh', ["trap '' TERM", 'sleep 300 &', 'echo $! > stubborn-child.pid', 'echo $$ > stubborn-main.pid', 'sleep 300'].join('\n'));
    const result = await run('stubborn.sh', { timeoutMs: 300, killGraceMs: 300 });
    expect(result).toMatchObject({ status: 'error', exitCode: null });
    expect(result.output).toMatch(/timed out after 300 ms/);
    expect(isAlive(await readPid('stubborn-main.pid'))).toBe(false);
    expect(isAlive(await readPid('stubborn-child.pid'))).toBe(false);
  });

  it('stops when aborted (a stopped session, a cancelled activity)', async () => {
    await fresh('abort-main.pid');
    await script('abort.sh', 'echo $$ > abort-main.pid; sleep 300');
    const controller = new AbortController();
    const pending = run('abort.sh', { signal: controller.signal, killGraceMs: 300 });
    const main = await readPid('abort-main.pid');
    controller.abort();
    const result = await pending;
    expect(result).toMatchObject({ status: 'error', output: expect.stringMatching(/\[sluice\] stopped\n$/) });
    expect(isAlive(main)).toBe(false);
  });

  it('kills background processes a finished test left behind, keeping its verdict', async () => {
    await fresh('daemon-child.pid');
    await script('daemon.sh', 'sleep 300 &\necho $! > daemon-child.pid\necho done');
    const result = await run('daemon.sh', { killGraceMs: 300 });
    expect(result).toMatchObject({ status: 'passed', exitCode: 0 });
    expect(result.output).toMatch(/^done\n\[sluice\] killed processes the test left running\n$/);
    expect(isAlive(await readPid('daemon-child.pid'))).toBe(false);
  });

  it('is an error when the test dies of a signal', async () => {
    const result = await run(await script('segv.sh', 'kill -SEGV $$'));
    expect(result).toMatchObject({ status: 'error', exitCode: null, output: expect.stringMatching(/killed by signal SIGSEGV/) });
  });

  it('keeps only the end of a huge output, and says so', async () => {
    await script('loud.sh', 'i=0; while [ $i -lt 3000 ]; do echo "line $i ................................................"; i=$((i+1)); done; echo THE END');
    const result = await run('loud.sh', { maxOutputBytes: 4096 });
    expect(result.status).toBe('passed');
    expect(result.output).toMatch(/^\[sluice\] output truncated: the first \d+ bytes were dropped\n/);
    expect(result.output.endsWith('THE END\n')).toBe(true);
    expect(Buffer.byteLength(result.output)).toBeLessThan(4096 + 100);
  });
});

// bubblewrap is installed by .ci/run; a machine without it (or without user namespaces) skips these, saying why.
const sandboxed = bwrapWorks();
if (!sandboxed) console.warn('build-runTestFile.test.ts: the sandbox tests are skipped: bwrap is missing or user namespaces are not allowed here');

const sandbox: Sandbox = { bwrap: 'bwrap', network: false };

(sandboxed ? describe.each : describe.skip.each)([
  ['runTestFile', direct],
  ['the shell driver', viaDriver],
  ['the shell driver on sh', viaShDriver],
])('%s in the sandbox (bubblewrap)', (_how, run) => {
  it('sees its tree, its own processes only, no network; a daemon that left its session dies with the test', async () => {
    const marker = `31${process.pid % 1000}.77`;
    await script(
      'boxed.sh',
      [
        `[ -e /proc/${process.pid}/cmdline ] && grep -q jest /proc/${process.pid}/cmdline && echo "sees the runner"`,
        'ls /proc | grep -c "^[0-9]" | xargs echo processes:',
        '[ -e /run/postgresql ] && echo "sees /run"',
        // PostgreSQL listens on the host's loopback (the tests' database): not this one's.
        `bash -c 'exec 3<>/dev/tcp/127.0.0.1/5432' 2>/dev/null && echo "reached PostgreSQL"`,
        `setsid sh -c 'exec sleep ${marker}' </dev/null >/dev/null 2>&1 &`,
        'echo in-tree > boxed.out && echo wrote',
      ].join('\n'),
    );
    const result = await run('boxed.sh', { sandbox });
    expect(result.status).toBe('passed');
    expect(result.output).toMatch(/^processes: [1-5]\nwrote\n$/);
    expect(await readFile(join(workdir, 'boxed.out'), 'utf8')).toBe('in-tree\n');
    // The PID namespace ends with the test: its daemon goes with it (the kernel may take a moment
    // to finish it on a loaded machine; it never lingers).
    await eventually('the daemon gone with its sandbox', async () => processesMatching(`sleep ${marker}`).length === 0, 5_000);
  });

  it('reports a death by signal as outside it', async () => {
    const result = await run(await script('segv-boxed.sh', 'kill -SEGV $$'), { sandbox });
    expect(result).toMatchObject({ status: 'error', exitCode: null, output: expect.stringMatching(/killed by signal SIGSEGV/) });
  });
});
