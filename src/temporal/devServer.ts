/**
 * Runs `temporal server start-dev` as a child process: for `npm start` (persistent, with UI)
 * and for the e2e tests (in-memory, headless). Resolves once the server answers gRPC and the
 * namespace exists, so callers can start workers right away.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Connection } from '@temporalio/client';
import { findTemporalCli } from './cli';
import { stopLeftoverDevServers } from './leftover';
import { SLUICE_SEARCH_ATTRIBUTE_FLAGS } from '../workflows/searchAttributes';

const HOST = '127.0.0.1';

export interface DevServerOptions {
  /** Directory for a persistent store (`<dataDir>/temporal.db`); in-memory when not given. */
  dataDir?: string;
  /** gRPC port; a free one when not given. A given port that is busy is an error. */
  port?: number;
  /** Web UI port; a free one when not given (ignored when headless). */
  uiPort?: number;
  headless?: boolean;
  /** Namespace to create at launch and wait for ("default" always exists). */
  namespace?: string;
  /** The `temporal` binary; found with findTemporalCli when not given. */
  cli?: string;
  /** How long to wait for the server to answer (default 60 s). */
  startTimeoutMs?: number;
  /** Copy the server's log (stderr) to ours; its output is kept for error messages either way. */
  echoOutput?: boolean;
  /**
   * Run the server in a process group of its own, so a terminal's Ctrl-C reaches only us and we
   * can stop it last, after the workers that talk to it (npm start). Off by default: then
   * Ctrl-C on a test run stops it together with everything else.
   */
  ownProcessGroup?: boolean;
  /**
   * Register Sluice's search attributes at launch (`--search-attribute`); default true. False
   * gives a bare server, like one Sluice did not start, where the roles register them.
   */
  searchAttributes?: boolean;
}

export interface DevServer {
  /** host:port of the gRPC frontend, for TEMPORAL_ADDRESS. */
  address: string;
  uiUrl?: string;
  /** The server process (tests kill it to see what the roles do). */
  pid: number;
  /** Resolves when the process has ended, stopped or not, saying how. */
  exited: Promise<string>;
  stop(): Promise<void>;
}

export async function startDevServer(opts: DevServerOptions = {}): Promise<DevServer> {
  // The dev server picks free ports for its internal services itself, and another process may
  // take one between its pick and its bind (seen in parallel test runs: it panics and exits at
  // once). Such an early exit is tried again, with fresh ports where we chose them.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(opts);
    } catch (err) {
      if (!(err instanceof ExitedEarly) || attempt >= START_ATTEMPTS) throw err;
      process.stderr.write(`Temporal dev server exited while starting; trying again (${attempt}/${START_ATTEMPTS - 1})\n`);
    }
  }
}

const START_ATTEMPTS = 3;

/** The server process ended before it answered (as opposed to never answering). */
class ExitedEarly extends Error {}

async function startOnce(opts: DevServerOptions): Promise<DevServer> {
  const namespace = opts.namespace ?? 'default';
  const cli = opts.cli ?? (await findTemporalCli());
  let stopped: number[] = [];
  if (opts.dataDir) {
    const dbFile = path.join(opts.dataDir, 'temporal.db');
    stopped = await stopLeftoverDevServers(dbFile);
    if (stopped.length > 0) process.stderr.write(`Stopped the Temporal dev server of ${dbFile} that an earlier start left running (pid ${stopped.join(', ')}).\n`);
  }
  // A server just stopped may hold its ports a moment longer than its process shows.
  const portWaitMs = stopped.length > 0 ? LEFTOVER_PORT_WAIT_MS : 0;
  const port = opts.port ?? (await freePort());
  if (opts.port !== undefined) await assertPortFree(opts.port, 'Temporal gRPC', portWaitMs);
  const uiPort = opts.headless ? undefined : (opts.uiPort ?? (await freePort()));
  if (opts.uiPort !== undefined && !opts.headless) await assertPortFree(opts.uiPort, 'Temporal UI', portWaitMs);

  const args = ['server', 'start-dev', '--ip', HOST, '--port', String(port), '--log-level', 'warn'];
  args.push(...(uiPort === undefined ? ['--headless'] : ['--ui-port', String(uiPort)]));
  if (opts.dataDir) {
    mkdirSync(opts.dataDir, { recursive: true });
    // The argument leftover.ts recognises a server of this data directory by.
    args.push('--db-filename', path.join(opts.dataDir, 'temporal.db'));
  }
  if (namespace !== 'default') args.push('--namespace', namespace);
  if (opts.searchAttributes ?? true) for (const flag of SLUICE_SEARCH_ATTRIBUTE_FLAGS) args.push('--search-attribute', flag);

  const child = spawn(cli, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: opts.ownProcessGroup ?? false });
  // If we exit without stop() (an uncaught error, process.exit), don't leave the server behind.
  const killOnExit = () => child.kill('SIGTERM');
  process.once('exit', killOnExit);
  child.once('exit', () => process.removeListener('exit', killOnExit));
  const output = new OutputTail();
  let stopping = false; // its shutdown chatter (dial errors to itself) is not worth showing
  for (const stream of [child.stdout, child.stderr]) {
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      output.add(chunk);
      // stdout only has its start banner (which says "localhost"); warnings come on stderr.
      if (opts.echoOutput && !stopping && stream === child.stderr) process.stderr.write(chunk);
    });
  }
  const exited = new Promise<string>((resolve) => {
    child.once('error', (err) => resolve(`could not run ${cli}: ${err.message}`));
    child.once('exit', (code, signal) => resolve(`exited early (${signal ?? `code ${code}`})`));
  });

  const address = `${HOST}:${port}`;
  const started = Date.now();
  try {
    await waitUntilServing(address, namespace, opts.startTimeoutMs ?? 60_000, exited);
  } catch (err) {
    await kill(child);
    const Failure = err instanceof ExitedEarly ? ExitedEarly : Error;
    throw new Failure(
      `Temporal dev server (${cli} ${args.join(' ')}) did not come up: ${(err as Error).message}\n` +
        `--- its output (tail) ---\n${output.text() || '(none)'}`,
      { cause: err },
    );
  }
  // Makes slow starts visible in CI logs without noise in the common case.
  if (Date.now() - started > 15_000) process.stderr.write(`Temporal dev server took ${Date.now() - started} ms to start\n`);

  return {
    address,
    uiUrl: uiPort === undefined ? undefined : `http://${HOST}:${uiPort}`,
    pid: child.pid!,
    exited: exited.then((why) => why.replace(/^exited early/, 'exited')),
    stop: () => {
      stopping = true;
      return kill(child);
    },
  };
}

/** Polls until a client connects and the namespace is described; rejects on timeout or exit. */
async function waitUntilServing(address: string, namespace: string, timeoutMs: number, exited: Promise<string>) {
  const deadline = Date.now() + timeoutMs;
  let processGone: string | undefined;
  void exited.then((why) => (processGone = why));
  let lastError = 'no answer yet';
  while (Date.now() < deadline) {
    if (processGone) throw processGone.startsWith('exited early') ? new ExitedEarly(processGone) : new Error(processGone);
    let connection: Connection | undefined;
    try {
      connection = await Connection.connect({ address, connectTimeout: 2_000 });
      await connection.workflowService.describeNamespace({ namespace });
      return;
    } catch (err) {
      lastError = (err as Error).message;
    } finally {
      await connection?.close();
    }
    await Promise.race([sleep(250), exited]);
  }
  throw new Error(`no answer on ${address} within ${timeoutMs} ms (last error: ${lastError})`);
}

/** SIGTERM, then SIGKILL if it has not exited after 10 s; resolves once it has exited. */
async function kill(child: ChildProcess): Promise<void> {
  // No pid: it never started (spawn error), so there is nothing to wait for.
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await gone;
  clearTimeout(timer);
}

/** A port the OS considers free right now (bind to 0, read it, release it). */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, HOST, resolve);
  });
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

const LEFTOVER_PORT_WAIT_MS = 10_000;

/** Throws unless `port` can be listened on, trying again for up to `waitMs` while it is in use. */
async function assertPortFree(port: number, what: string, waitMs = 0): Promise<void> {
  const deadline = Date.now() + waitMs;
  const server = net.createServer();
  try {
    for (;;) {
      try {
        await new Promise<void>((resolve, reject) => {
          server.once('error', reject);
          server.listen(port, HOST, resolve);
        });
        break;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE' || Date.now() >= deadline) throw err;
        await sleep(100);
      }
    }
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new Error(
      code === 'EADDRINUSE'
        ? `${what} port ${HOST}:${port} is already in use (another Temporal dev server or \`npm start\`?). ` +
            'Stop it, or set TEMPORAL_ADDRESS to use a server that is already running.'
        : `cannot listen on ${HOST}:${port} for ${what}: ${(err as Error).message}`,
      { cause: err },
    );
  }
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

/** Keeps the last few KB of a process's output for error messages. */
class OutputTail {
  private buf = '';
  add(chunk: string) {
    this.buf = (this.buf + chunk).slice(-4_000);
  }
  text() {
    return this.buf.trim();
  }
}

