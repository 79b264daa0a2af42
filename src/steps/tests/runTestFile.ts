/**
 * Running one test file, as a lane does (tests/lane.ts).
 *
 * The file runs as the suite's `test_command` split into argv (no shell) with the file path
 * appended, or as the file itself when there is no command. It gets a clean environment
 * (nothing of the runner's, which holds database URLs and the secret key), and is started as
 * every build process is (steps/isolation/process.ts): its own process group, so a timeout or a stop kills
 * everything it started, the build user and the sandbox, and bounded output capture.
 */
import { constants } from 'node:fs';
import { access, chown, mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { isAbsolute, join, normalize, sep } from 'node:path';
import { runProcess, type ProcessResult, type RunProcessInput } from '../isolation/process';

/** How the file runs: the process settings of steps/isolation/process.ts (time limit, stop, user, sandbox), and what names the file. */
export interface RunTestFileInput
  extends Pick<RunProcessInput, 'timeoutMs' | 'signal' | 'killGraceMs' | 'maxOutputBytes' | 'onOutput' | 'processGroups' | 'runAs' | 'sandbox' | 'trace'> {
  workdir: string;
  /** Test file, relative to the repository root (as discoverTests returns it). */
  path: string;
  /** The suite's test command, or null to execute the file itself. */
  command: string | null;
  /** Build environment (trigger env, secrets): added to the clean base, may override it. */
  env: Record<string, string>;
  /** The worker's home, shared with its hooks; none: a fresh one for this file, removed after. */
  home?: string;
}

export type RunTestFileResult = ProcessResult;

export const TEST_PATH = '/usr/local/bin:/usr/bin:/bin';

// --- argv -------------------------------------------------------------------------------------

export class CommandSyntaxError extends Error {
  override readonly name = 'CommandSyntaxError';
}

/**
 * Splits a command line into words like a POSIX shell would, minus everything that makes it a
 * shell: quotes (`'…'` literal; `"…"` where `\` escapes only `"`, `\`, `$`, `` ` `` and newline)
 * and backslash escapes are honoured; `$VAR`, `*`, `|`, `&&`, `>` and friends are plain text.
 */
export function splitArgs(command: string): string[] {
  const words: string[] = [];
  let word = '';
  let inWord = false; // distinguishes `''` (an empty argument) from no argument at all
  let i = 0;
  while (i < command.length) {
    const ch = command[i]!;
    if (ch === ' ' || ch === '\t' || ch === '\n' || ch === '\r') {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
      i += 1;
    } else if (ch === "'") {
      const end = command.indexOf("'", i + 1);
      if (end === -1) throw new CommandSyntaxError('unterminated single quote in the test command');
      word += command.slice(i + 1, end);
      inWord = true;
      i = end + 1;
    } else if (ch === '"') {
      i += 1;
      inWord = true;
      for (;;) {
        if (i >= command.length) throw new CommandSyntaxError('unterminated double quote in the test command');
        const c = command[i]!;
        if (c === '"') break;
        if (c === '\\' && i + 1 < command.length && '"\\$`\n'.includes(command[i + 1]!)) {
          if (command[i + 1] !== '\n') word += command[i + 1];
          i += 2;
        } else {
          word += c;
          i += 1;
        }
      }
      i += 1;
    } else if (ch === '\\') {
      if (i + 1 >= command.length) throw new CommandSyntaxError('the test command ends with a backslash');
      if (command[i + 1] !== '\n') {
        word += command[i + 1];
        inWord = true;
      }
      i += 2;
    } else {
      word += ch;
      inWord = true;
      i += 1;
    }
  }
  if (inWord) words.push(word);
  return words;
}

// --- environment and paths --------------------------------------------------------------------

/** The whole environment of a test: a fixed base plus the build's own variables. */
export function testEnvironment(home: string, env: Record<string, string>): Record<string, string> {
  const base: Record<string, string> = { PATH: TEST_PATH, HOME: home, LANG: 'C.UTF-8', CI: 'true', SLUICE: 'true' };
  for (const [name, value] of Object.entries(env)) {
    // Names with `=` or NULs can't be represented in an environment block; skip rather than crash.
    if (name !== '' && !name.includes('=') && !name.includes('\0') && !value.includes('\0')) base[name] = value;
  }
  return base;
}

/** Why `path` can't be a test file path, or null. */
export function checkTestPath(path: string): string | null {
  if (path === '' || path.includes('\0')) return 'empty test path';
  if (isAbsolute(path)) return `test path must be relative to the repository root: ${path}`;
  const parts = normalize(path).split(sep);
  if (path.split(/[/\\]/).includes('..') || parts[0] === '..') return `test path must stay inside the repository: ${path}`;
  if (parts.includes('.git')) return `test path must not be inside .git: ${path}`;
  return null;
}

// --- running ----------------------------------------------------------------------------------

export async function runTestFile(input: RunTestFileInput): Promise<RunTestFileResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const error = (why: string): RunTestFileResult => ({ status: 'error', exitCode: null, durationMs: elapsed(), output: `[sluice] ${why}\n` });

  const pathProblem = checkTestPath(input.path);
  if (pathProblem) return error(pathProblem);
  const absolute = join(input.workdir, input.path);
  const workdirInfo = await stat(input.workdir).catch(() => null);
  if (!workdirInfo?.isDirectory()) return error(`the working tree ${input.workdir} does not exist`);

  const runsFileItself = input.command === null || input.command.trim() === '';
  let argv: string[];
  if (runsFileItself) {
    const info = await stat(absolute).catch(() => null);
    if (!info?.isFile()) return error(`${input.path} does not exist or is not a file`);
    const executable = await access(absolute, constants.X_OK).then(
      () => true,
      () => false,
    );
    if (!executable) {
      return error(`${input.path} is not executable: set its executable bit (chmod +x) or configure a test command`);
    }
    argv = [absolute];
  } else {
    let words: string[];
    try {
      words = splitArgs(input.command ?? '');
    } catch (e) {
      return error((e as Error).message);
    }
    // A file named `-x.sh` must not read as an option to the test command.
    argv = [...words, input.path.startsWith('-') ? `./${input.path}` : input.path];
  }
  if (input.signal?.aborted) return error('stopped before it started');

  // The worker's home when it has one (shared with its hooks: caches, installed tools); else one for this file.
  const home = input.home ?? (await mkdtemp(join(tmpdir(), 'sluice-test-home-')));
  if (!input.home && input.runAs) await chown(home, input.runAs.uid, input.runAs.gid);
  try {
    return await runProcess(
      {
        ...input,
        argv,
        cwd: input.workdir,
        env: testEnvironment(home, input.env),
        program: runsFileItself ? input.path : argv[0]!,
        dirs: { tree: input.workdir, home },
      },
      started,
    );
  } finally {
    if (!input.home) await rm(home, { recursive: true, force: true }).catch(() => undefined);
  }
}

