/**
 * Sluice's roles as real processes, run the way production runs them: `npm run build`, then
 * `node dist/<role>/main.js`, each with an environment of its own (not the test's); and a bare
 * Temporal dev server, without Sluice's search attributes, like a server Sluice did not start.
 * For tests of the production shape: roles started separately, several of a kind, killed.
 *
 *   const temporal = await startBareTemporal();
 *   await buildDist();
 *   const env = await sluiceEnv({ databaseUrl, temporalAddress: temporal.address });
 *   const api = startRole('api', env);
 *   await waitForHealthy(env.SLUICE_BASE_URL!);
 *   const worker = startRole('worker', env);
 *   await worker.waitForOutput(/sluice worker: serving /);
 *   ...
 *   afterAll(() => stopAllProcesses());   // every role and bare server this module started
 *
 * Every wait here is bounded and waits for a state (a line of output, an answer), never a time.
 */
import { unmountUnder } from '../../src/steps/cache/overlay';
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { freePort, startDevServer, type DevServer } from '../../src/temporal/devServer';
import { eventually } from './wait';

/** A role of the production shape, or `dev`: `npm start`'s all-in-one process (dist/dev.js). */
export type Role = 'api' | 'worker' | 'runner' | 'dev';

export interface RoleExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface RoleProcess {
  role: Role;
  pid: number;
  /** Everything it printed so far, stdout and stderr interleaved as they came. */
  output(): string;
  /**
   * Waits until its output (all of it, from the start) matches `pattern`; returns the match.
   * Rejects after `timeoutMs` (default 60 s), or when the process exits without printing it,
   * with the tail of the output.
   */
  waitForOutput(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** Sends `signal` (default SIGTERM) to the process; nothing once it has exited. */
  kill(signal?: NodeJS.Signals): void;
  /** Settles once the process has exited. */
  exited: Promise<RoleExit>;
  /** SIGTERM, then SIGKILL if it is still there after `graceMs` (default 10 s); resolves on exit. */
  stop(graceMs?: number): Promise<RoleExit>;
}

export const REPO_ROOT = path.join(__dirname, '..', '..');
const DIST = path.join(REPO_ROOT, 'dist');

/** What a role's environment takes from the test's: enough to find git, ssh, hg and a home. */
const PASSED_THROUGH = ['PATH', 'HOME', 'USER', 'LOGNAME', 'TMPDIR', 'LANG', 'LC_ALL', 'TZ'];
const OUTPUT_LIMIT = 4 * 1024 * 1024;

const roles = new Set<RoleProcess>();
const servers = new Set<DevServer>();
/** Workspace directories sluiceEnv made; stopAllProcesses removes them. */
const workspaces = new Set<string>();

/**
 * Starts `node dist/<role>/main.js` (build it first: buildDist) with `env` over a minimal
 * environment (PATH, HOME and the like; nothing else of the test's), as the user `as` when given. Its output is kept, and
 * copied to the test's stderr when SLUICE_TEST_ECHO_ROLES=1.
 */
export function startRole(role: Role, env: NodeJS.ProcessEnv, as?: { uid: number; gid: number }): RoleProcess {
  const main = role === 'dev' ? path.join(DIST, 'dev.js') : path.join(DIST, role, 'main.js');
  if (!existsSync(main)) throw new Error(`${main} does not exist: call buildDist() first`);
  const base = Object.fromEntries(PASSED_THROUGH.filter((k) => process.env[k] !== undefined).map((k) => [k, process.env[k]]));
  // SLUICE_TEST_CPU_PROF=<dir>: each role writes a V8 CPU profile under <dir>/<role> when it exits (profiling the bench; NODE_OPTIONS refuses --cpu-prof).
  const profile = process.env.SLUICE_TEST_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${path.join(process.env.SLUICE_TEST_CPU_PROF, role)}`] : [];
  const child = spawn(process.execPath, [...profile, main], { cwd: REPO_ROOT, env: { ...base, ...env }, stdio: ['ignore', 'pipe', 'pipe'], ...(as ?? {}) });
  if (child.pid === undefined) throw new Error(`could not start ${main}`);
  const pid = child.pid;

  let output = '';
  const listeners = new Set<() => void>();
  const echo = process.env.SLUICE_TEST_ECHO_ROLES === '1';
  for (const stream of [child.stdout, child.stderr]) {
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      output = (output + chunk).slice(-OUTPUT_LIMIT);
      if (echo) process.stderr.write(chunk.replace(/^(?=.)/gm, `[${role} ${pid}] `));
      for (const l of listeners) l();
    });
  }
  let exit: RoleExit | undefined;
  const exited = new Promise<RoleExit>((resolve) => {
    child.once('exit', (code, signal) => {
      exit = { code, signal };
      resolve(exit);
      for (const l of listeners) l();
    });
  });

  const handle: RoleProcess = {
    role,
    pid,
    output: () => output,
    waitForOutput(pattern, timeoutMs = 60_000) {
      return new Promise<RegExpMatchArray>((resolve, reject) => {
        const check = () => {
          const match = output.match(pattern);
          if (match) return done(() => resolve(match));
          if (exit) done(() => reject(new Error(`${role} (pid ${pid}) exited (${describeExit(exit!)}) without printing ${pattern}\n${tail(output)}`)));
        };
        const timer = setTimeout(
          () => done(() => reject(new Error(`${role} (pid ${pid}) did not print ${pattern} within ${timeoutMs} ms\n${tail(output)}`))),
          timeoutMs,
        );
        const done = (settle: () => void) => {
          clearTimeout(timer);
          listeners.delete(check);
          settle();
        };
        listeners.add(check);
        check();
      });
    },
    kill(signal = 'SIGTERM') {
      if (!exit) child.kill(signal);
    },
    exited,
    async stop(graceMs = 10_000) {
      if (exit) return exit;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      const result = await exited;
      clearTimeout(timer);
      return result;
    },
  };
  roles.add(handle);
  void exited.then(() => roles.delete(handle));
  return handle;
}

/**
 * A Temporal dev server as the roles meet one in production: without Sluice's search
 * attributes (in-memory, headless, on loopback; on `port` when given, else a free one).
 */
export async function startBareTemporal(opts: { port?: number; namespace?: string } = {}): Promise<DevServer> {
  const server = await startDevServer({ headless: true, searchAttributes: false, port: opts.port, namespace: opts.namespace });
  servers.add(server);
  return {
    ...server,
    stop: async () => {
      servers.delete(server);
      await server.stop();
    },
  };
}

/**
 * Stops every role process and bare Temporal server this module started and that still runs,
 * and removes the workspace directories of sluiceEnv.
 */
export async function stopAllProcesses(graceMs = 5_000): Promise<void> {
  await Promise.allSettled([...roles].map((r) => r.stop(graceMs)));
  await Promise.allSettled([...servers].map((s) => s.stop()));
  servers.clear();
  for (const dir of workspaces) {
    // Caches restored by overlay mounts in trees not swept yet: detached first.
    await unmountUnder([dir]);
    rmSync(dir, { recursive: true, force: true });
  }
  workspaces.clear();
}

// Jest killed, or a test file that forgot stopAllProcesses: leave nothing running behind.
process.once('exit', () => {
  for (const r of roles) r.kill('SIGKILL');
});

/**
 * The environment of one Sluice whose roles run as separate processes: its database and
 * Temporal, a generated admin token and secret key, task queues of its own (so it never takes
 * another test's work), a workspace directory, and a free PORT with SLUICE_BASE_URL for its API.
 * Give every role of that Sluice the same environment (a second API needs its own PORT).
 */
export async function sluiceEnv(opts: {
  databaseUrl: string;
  temporalAddress: string;
  namespace?: string;
  /** More variables, or overrides. */
  env?: NodeJS.ProcessEnv;
}): Promise<NodeJS.ProcessEnv> {
  const tag = randomBytes(4).toString('hex');
  const port = await freePort();
  const workspace = await mkdtemp(path.join(os.tmpdir(), 'sluice-ws-'));
  workspaces.add(workspace);
  return {
    DATABASE_URL: opts.databaseUrl,
    TEMPORAL_ADDRESS: opts.temporalAddress,
    TEMPORAL_NAMESPACE: opts.namespace ?? 'default',
    SLUICE_ADMIN_TOKEN: `admin-${randomBytes(16).toString('hex')}`,
    SLUICE_SECRET_KEY: randomBytes(32).toString('base64'),
    HOST: '127.0.0.1',
    PORT: String(port),
    SLUICE_BASE_URL: `http://127.0.0.1:${port}`,
    SLUICE_TASK_QUEUE: `sluice-${tag}`,
    SLUICE_BUILD_QUEUE: `sluice-build-${tag}`,
    SLUICE_WORKSPACE_DIR: workspace,
    ...opts.env,
  };
}

/** The same Sluice's environment with another PORT (and base URL), for one more API process. */
export async function withOwnPort(env: NodeJS.ProcessEnv): Promise<NodeJS.ProcessEnv> {
  const port = await freePort();
  return { ...env, PORT: String(port), SLUICE_BASE_URL: `http://127.0.0.1:${port}` };
}

/** Polls `GET <baseUrl>/healthz` until it answers 200; rejects after `timeoutMs` with the last answer. */
export async function waitForHealthy(baseUrl: string, timeoutMs = 60_000): Promise<void> {
  await eventually(`${baseUrl}/healthz to answer 200`, async () => {
    const res = await fetch(`${baseUrl}/healthz`, { signal: AbortSignal.timeout(5_000) });
    if (res.ok) return true;
    throw new Error(`${res.status} ${await res.text()}`);
  }, timeoutMs);
}

// ---- npm run build, once for all test files ----

/** What the build reads: when none of it changed since the last build here, dist/ is current. */
const BUILD_INPUTS = ['src', 'scripts/build.js', 'tsconfig.json', 'tsconfig.build.json', 'package.json', 'package-lock.json'];
const STAMP = path.join(DIST, '.sources-sha256');

/**
 * Runs `npm run build` unless dist/ was built from exactly the current sources (a digest of
 * them, left in dist/ by the last buildDist). Test files running at once take turns: the
 * first builds, the others find dist/ current. Bounded by `timeoutMs`.
 */
export async function buildDist(timeoutMs = 180_000): Promise<void> {
  const digest = sourcesDigest();
  const release = await lock(path.join(os.tmpdir(), `sluice-build-${createHash('sha256').update(REPO_ROOT).digest('hex').slice(0, 12)}.lock`), timeoutMs);
  try {
    if (existsSync(STAMP) && readFileSync(STAMP, 'utf8') === digest) return;
    await runBuild(timeoutMs);
    writeFileSync(STAMP, digest);
  } finally {
    release();
  }
}

function runBuild(timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('npm', ['run', '--silent', 'build'], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    for (const stream of [child.stdout, child.stderr]) stream.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-20_000)));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve();
      else reject(new Error(`npm run build failed (${signal ?? `exit ${code}`}${signal === 'SIGKILL' ? `, after ${timeoutMs} ms` : ''}):\n${output}`));
    });
  });
}

function sourcesDigest(): string {
  const hash = createHash('sha256');
  const add = (rel: string) => {
    const abs = path.join(REPO_ROOT, rel);
    if (!existsSync(abs)) return;
    if (statSync(abs).isDirectory()) {
      for (const entry of readdirSync(abs).sort()) add(path.join(rel, entry));
    } else {
      hash.update(`${rel}\0`).update(readFileSync(abs)).update('\0');
    }
  };
  for (const input of BUILD_INPUTS) add(input);
  return hash.digest('hex');
}

/** A lock across processes: a directory only one can create. Stale ones (older than `timeoutMs`) are broken. */
async function lock(dir: string, timeoutMs: number): Promise<() => void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      mkdirSync(dir);
      return () => rmSync(dir, { recursive: true, force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    try {
      if (Date.now() - statSync(dir).mtimeMs > timeoutMs) rmSync(dir, { recursive: true, force: true });
    } catch {
      // Released in between: try again.
    }
    if (Date.now() > deadline) throw new Error(`${dir} is still held after ${timeoutMs} ms (another build?)`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

function describeExit(exit: RoleExit): string {
  return exit.signal ?? `exit ${exit.code}`;
}

function tail(text: string): string {
  const lines = text.trimEnd().split('\n');
  return `--- its output (last ${Math.min(lines.length, 40)} lines) ---\n${lines.slice(-40).join('\n')}`;
}

/** Runs `body`; when it throws, the error carries the tail of what each role printed (the assertion alone rarely says why). */
export async function withRoleOutput(roles: readonly RoleProcess[], body: () => Promise<void>): Promise<void> {
  try {
    await body();
  } catch (err) {
    throw new Error(`${(err as Error).message}\n${roles.map((r) => `--- ${r.role}\n${r.output().slice(-4000)}`).join('\n')}`, { cause: err });
  }
}

/** None of `roles` has exited. */
export async function expectStillRunning(roles: readonly RoleProcess[]): Promise<void> {
  for (const role of roles) expect([role.role, await Promise.race([role.exited.then(() => 'exited'), Promise.resolve('running')])]).toEqual([role.role, 'running']);
}
