/**
 * Real container registries on loopback for the `image:` tests, and a real test image to push to them.
 *
 * - startOpenRegistry: `crane registry serve` (go-containerregistry), no auth.
 * - startPrivateRegistry: the reference registry (distribution) with htpasswd Basic auth: anonymous
 *   requests get a real 401 UNAUTHORIZED.
 * - startMirror: distribution as a pull-through cache of another registry (Docker Hub's mirror pattern).
 * - startRateLimited: the one stand-in (Docker Hub's pull rate limit cannot run here): 429 TOOMANYREQUESTS.
 * - pushImage: layers (tar files) → an image in a registry, with `crane append` and `crane mutate`.
 * - testImageLayers: a Debian bookworm root filesystem and Node.js 22 with npm, as two layer tars
 *   cached by scripts/test-image.sh.
 *
 * The binaries are built by `.ci/run` into ~/.cache/sluice/bin (or $SLUICE_CRANE, $SLUICE_TEST_REGISTRY);
 * htpasswd comes from Debian's apache2-utils. Missing: the test fails saying how to get them, never skips.
 * Every server is a child process on a free loopback port, ready once `GET /v2/` answers, and killed by
 * stop() (and at the test process's exit, if a test forgot).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../../src/temporal/devServer';

export interface RegistryRequest {
  method: string;
  /** The request's path and query, as the server logged it: `/v2/small/manifests/1`. */
  path: string;
  /** The response's status, where the server logs it (distribution always; crane only for errors). */
  status?: number;
}

export interface TestRegistry {
  /** `127.0.0.1:PORT`: an image reference's registry part (`${host}/name:tag`). */
  host: string;
  /** The requests it has served so far, from its log (a request shows once its response is done). */
  requests(): RegistryRequest[];
  /** Everything it printed, for a failing test's message. */
  output(): string;
  /** Where it keeps what was pushed (its storage, config and logs); none for a stand-in. */
  dir?: string;
  stop(): Promise<void>;
}

export interface TestMirror extends TestRegistry {
  /** The registry it mirrors: `http://127.0.0.1:PORT`. */
  upstream: string;
  /** Whether the mirror's own storage holds this blob or manifest (`sha256:...`): it was pulled through it. */
  cached(digest: string): boolean;
}

export interface Credentials {
  username: string;
  password: string;
}

export interface PushOptions {
  /** Layer tarballs (uncompressed or gzip), bottom first. */
  layers: string[];
  /** Added to the config's Env after PATH (Docker's default PATH, unless PATH is given here). */
  env?: Record<string, string>;
  workdir?: string;
  user?: string;
  /** For a private registry. */
  auth?: Credentials;
  /** OCI media types instead of Docker's (crane's default, and most of Docker Hub's older images). */
  oci?: boolean;
}

export interface PushedImage {
  /** `${host}/${name}` with its tag (`:latest` when the name had none). */
  ref: string;
  /** The manifest's digest, `sha256:...`. */
  digest: string;
  /** `${host}/${repository}@${digest}`. */
  pinned: string;
}

/** The PATH Docker gives an image without one, which Debian's and Node's official images also set. */
export const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

const HOST = '127.0.0.1';
const READY_TIMEOUT_MS = 20_000;
/** Long enough to push the test image's ~300 MB of layers (gzip on the way) on a slow machine. */
const CRANE_TIMEOUT_MS = 300_000;

function cacheDir(): string {
  return process.env.SLUICE_CACHE_DIR || path.join(os.homedir(), '.cache', 'sluice');
}

/** crane: $SLUICE_CRANE, else the build `.ci/run` makes in ~/.cache/sluice/bin. */
export function cranePath(): string {
  const file = process.env.SLUICE_CRANE || path.join(cacheDir(), 'bin', 'crane');
  if (!existsSync(file)) {
    throw new Error(`crane is not at ${file}: run .ci/run once (it builds it with go install), or set SLUICE_CRANE to its path`);
  }
  return file;
}

/** The reference registry (distribution): $SLUICE_TEST_REGISTRY, else the build `.ci/run` makes in ~/.cache/sluice/bin. */
export function registryPath(): string {
  const file = process.env.SLUICE_TEST_REGISTRY || path.join(cacheDir(), 'bin', 'registry');
  if (!existsSync(file)) {
    throw new Error(`the distribution registry is not at ${file}: run .ci/run once (it builds it with go install, a few minutes), or set SLUICE_TEST_REGISTRY to its path`);
  }
  return file;
}

// ---- Servers ----

/** An open registry (no auth): `crane registry serve`, its blobs in a temporary directory. */
export async function startOpenRegistry(): Promise<TestRegistry> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'sluice-registry-'));
  const blobs = path.join(dir, 'blobs');
  mkdirSync(blobs); // crane writes into it, making nothing
  const port = await freePort();
  // crane logs `2026/11/27 18:37:18 GET /v2/x/manifests/1`, plus `404 NAME_UNKNOWN ...` on errors.
  const line = /^\S+ \S+ ([A-Z]+) (\/\S*)(?: (\d{3}) )?/;
  return startServer('crane registry', cranePath(), ['registry', 'serve', '--address', `${HOST}:${port}`, '--disk', blobs], port, dir, line);
}

/** A registry that wants these credentials (htpasswd, HTTP Basic): anonymous requests get 401 UNAUTHORIZED. */
export async function startPrivateRegistry(credentials: Credentials): Promise<TestRegistry> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'sluice-registry-'));
  const htpasswd = path.join(dir, 'htpasswd');
  writeFileSync(htpasswd, await htpasswdLine(credentials));
  const port = await freePort();
  const config = distributionConfig(dir, port, { auth: { htpasswd: { realm: 'sluice-test', path: htpasswd } } });
  return startServer('distribution registry (private)', registryPath(), ['serve', config], port, dir, ACCESS_LOG_LINE);
}

/**
 * A pull-through cache of `upstream` (`http://127.0.0.1:PORT`), as Docker Hub mirrors run: a pull of
 * `${mirror.host}/name:tag` fetches `name:tag` from the upstream and keeps what it fetched.
 * `upstreamAuth`: the credentials it pulls from the upstream with.
 */
export async function startMirror(opts: { upstream: string; upstreamAuth?: Credentials }): Promise<TestMirror> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'sluice-mirror-'));
  const port = await freePort();
  const proxy = { remoteurl: opts.upstream, ...(opts.upstreamAuth ?? {}) };
  const config = distributionConfig(dir, port, { proxy });
  const server = await startServer('distribution registry (mirror)', registryPath(), ['serve', config], port, dir, ACCESS_LOG_LINE);
  const storage = path.join(dir, 'storage', 'docker', 'registry', 'v2', 'blobs');
  return {
    ...server,
    upstream: opts.upstream,
    cached(digest) {
      const [algorithm, hex] = digest.split(':');
      if (!algorithm || !hex) throw new Error(`not a digest: ${digest}`);
      return existsSync(path.join(storage, algorithm, hex.slice(0, 2), hex, 'data'));
    },
  };
}

/**
 * Docker Hub's pull rate limit cannot run here (no Docker Hub, and its limit counts per IP over six
 * hours), so this is the one stand-in among these registries: a tiny HTTP server that answers every
 * /v2/ request as Docker Hub does once the limit is reached, 429 with its JSON error body and headers.
 * `pingOk`: `GET /v2/` itself answers 200, and only what follows (manifests, blobs) 429, as on Docker
 * Hub, whose /v2/ is not limited; crane then fails at the manifest rather than at its first request.
 * Either way crane retries 429s with a back-off: it gives up after about 8 s.
 */
export async function startRateLimited(opts: { pingOk?: boolean } = {}): Promise<TestRegistry> {
  const seen: RegistryRequest[] = [];
  const server = http.createServer((req, res) => {
    const url = req.url ?? '/';
    if (!url.startsWith('/v2/') && url !== '/v2') {
      seen.push({ method: req.method ?? 'GET', path: url, status: 404 });
      res.writeHead(404).end();
      return;
    }
    if (opts.pingOk && (url === '/v2/' || url === '/v2')) {
      seen.push({ method: req.method ?? 'GET', path: url, status: 200 });
      res.writeHead(200, { 'Content-Type': 'application/json', 'Docker-Distribution-Api-Version': 'registry/2.0' }).end('{}');
      return;
    }
    seen.push({ method: req.method ?? 'GET', path: url, status: 429 });
    const body = JSON.stringify({
      errors: [
        {
          code: 'TOOMANYREQUESTS',
          message: 'You have reached your pull rate limit. You may increase the limit by authenticating and upgrading: https://www.docker.com/increase-rate-limit',
        },
      ],
    });
    res.writeHead(429, {
      'Content-Type': 'application/json',
      'Docker-Distribution-Api-Version': 'registry/2.0',
      'RateLimit-Limit': '100;w=21600',
      'RateLimit-Remaining': '0;w=21600',
    });
    res.end(req.method === 'HEAD' ? undefined : body);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, HOST, resolve);
  });
  const { port } = server.address() as net.AddressInfo;
  return {
    host: `${HOST}:${port}`,
    requests: () => [...seen],
    output: () => seen.map((r) => `${r.method} ${r.path} ${r.status}`).join('\n'),
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** distribution logs each request in Apache's combined format: `... "GET /v2/ HTTP/1.1" 401 87 "" "crane/..."`. */
const ACCESS_LOG_LINE = /"([A-Z]+) (\/\S*) HTTP\/[\d.]+" (\d{3}) /;

/** Writes the distribution registry's configuration file (JSON is YAML); returns its path. */
function distributionConfig(dir: string, port: number, extra: Record<string, unknown>): string {
  const config = {
    version: 0.1,
    // Warnings and errors, and the access log (on at every level), which requests() reads.
    log: { level: 'warn', formatter: 'text', accesslog: { disabled: false } },
    storage: { filesystem: { rootdirectory: path.join(dir, 'storage') }, delete: { enabled: true } },
    http: { addr: `${HOST}:${port}`, secret: 'sluice-test-registry' },
    ...extra,
  };
  const file = path.join(dir, 'config.yml');
  writeFileSync(file, JSON.stringify(config, null, 2));
  return file;
}

/** A bcrypt htpasswd line (what distribution accepts), made by Apache's htpasswd (Debian's apache2-utils). */
async function htpasswdLine({ username, password }: Credentials): Promise<string> {
  try {
    const { stdout } = await run('htpasswd', ['-Bbn', username, password], { timeoutMs: 10_000 });
    return stdout.trim() + '\n';
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new Error('htpasswd is not installed: run .ci/run once (it installs apache2-utils), or apt-get install apache2-utils', { cause: err });
    }
    throw err;
  }
}

async function startServer(what: string, binary: string, args: string[], port: number, dir: string, logLine: RegExp): Promise<TestRegistry> {
  const host = `${HOST}:${port}`;
  const child: ChildProcess = spawn(binary, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    // distribution exports OpenTelemetry traces by default: not from tests, and never to a test's own collector.
    env: { ...process.env, OTEL_TRACES_EXPORTER: 'none', OTEL_METRICS_EXPORTER: 'none', OTEL_LOGS_EXPORTER: 'none', OTEL_SDK_DISABLED: 'true' },
  });
  // If the test process exits without stop() (an uncaught error, process.exit), don't leave the server behind.
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  child.once('exit', () => process.removeListener('exit', killOnExit));

  let out = '';
  const requests: RegistryRequest[] = [];
  let partial = '';
  for (const stream of [child.stdout!, child.stderr!]) {
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      out += chunk;
      // Both streams' lines, split at newlines: a line may arrive in two chunks.
      const lines = (partial + chunk).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        const m = logLine.exec(line);
        if (m) requests.push({ method: m[1]!, path: m[2]!, ...(m[3] ? { status: Number(m[3]) } : {}) });
      }
    });
  }
  const exited = new Promise<string>((resolve) => {
    child.once('error', (err) => resolve(`could not run ${binary}: ${err.message}`));
    child.once('exit', (code, signal) => resolve(`exited (${signal ?? `code ${code}`})`));
  });
  const stop = async () => {
    await kill(child);
    rmSync(dir, { recursive: true, force: true });
  };

  try {
    await waitUntilAnswering(host, exited);
  } catch (err) {
    await stop();
    throw new Error(`${what} (${binary} ${args.join(' ')}) did not come up on ${host}: ${(err as Error).message}\n--- its output ---\n${out || '(none)'}`, { cause: err });
  }
  return { host, requests: () => [...requests], output: () => out, dir, stop };
}

/** Polls `GET /v2/` until it answers 200 or 401 (a registry wanting auth is up too); rejects on exit or after READY_TIMEOUT_MS. */
async function waitUntilAnswering(host: string, exited: Promise<string>): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let gone: string | undefined;
  void exited.then((why) => (gone = why));
  let last = 'no answer yet';
  while (Date.now() < deadline) {
    if (gone) throw new Error(gone);
    try {
      const res = await fetch(`http://${host}/v2/`, { signal: AbortSignal.timeout(2_000) });
      await res.body?.cancel();
      if (res.status === 200 || res.status === 401) return;
      last = `GET /v2/ answered ${res.status}`;
    } catch (err) {
      last = (err as Error).message;
    }
    await Promise.race([new Promise((r) => setTimeout(r, 100)), exited]);
  }
  throw new Error(`no answer within ${READY_TIMEOUT_MS} ms (last: ${last})`);
}

/** SIGTERM, then SIGKILL if it has not exited after 5 s; resolves once it has exited. */
async function kill(child: ChildProcess): Promise<void> {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await gone;
  clearTimeout(timer);
}

// ---- crane ----

export interface CraneResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs crane with a DOCKER_CONFIG of its own: empty (anonymous) unless `auth` is given, then holding
 * those credentials for `host`. Never this machine's ~/.docker. Resolves with the exit code, whatever it is.
 */
export async function runCrane(args: string[], opts: { auth?: Credentials & { host: string }; timeoutMs?: number } = {}): Promise<CraneResult> {
  const dockerConfig = mkdtempSync(path.join(os.tmpdir(), 'sluice-docker-config-'));
  try {
    const auths = opts.auth ? { [opts.auth.host]: { auth: Buffer.from(`${opts.auth.username}:${opts.auth.password}`).toString('base64') } } : {};
    writeFileSync(path.join(dockerConfig, 'config.json'), JSON.stringify({ auths }), { mode: 0o600 });
    try {
      const { stdout, stderr } = await run(cranePath(), args, { env: { ...process.env, DOCKER_CONFIG: dockerConfig }, timeoutMs: opts.timeoutMs ?? CRANE_TIMEOUT_MS });
      return { code: 0, stdout, stderr };
    } catch (err) {
      const e = err as Error & { code?: number | string; stdout?: string; stderr?: string; killed?: boolean };
      if (e.killed) throw new Error(`crane ${args.join(' ')} did not finish within ${opts.timeoutMs ?? CRANE_TIMEOUT_MS} ms: ${e.stderr ?? ''}`, { cause: err });
      if (typeof e.code !== 'number') throw err; // not run at all (ENOENT and the like)
      return { code: e.code, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
    }
  } finally {
    rmSync(dockerConfig, { recursive: true, force: true });
  }
}

/** crane that must succeed: its stdout, or an error with what it printed. */
export async function crane(args: string[], opts: { auth?: Credentials & { host: string }; timeoutMs?: number } = {}): Promise<string> {
  const r = await runCrane(args, opts);
  if (r.code !== 0) throw new Error(`crane ${args.join(' ')} exited ${r.code}: ${r.stderr.trim()}`);
  return r.stdout;
}

/**
 * Pushes an image made of `layers` to `${host}/${name}` (`name` may carry a `:tag`), for linux/amd64,
 * with PATH (Docker's default unless `env` sets it), `env`, `workdir` and `user` in its config.
 */
export async function pushImage(host: string, name: string, opts: PushOptions): Promise<PushedImage> {
  if (opts.layers.length === 0) throw new Error('pushImage: no layers');
  const lastSegment = name.slice(name.lastIndexOf('/') + 1);
  const ref = `${host}/${name}${lastSegment.includes(':') ? '' : ':latest'}`;
  const repository = ref.slice(0, ref.lastIndexOf(':'));
  const auth = opts.auth ? { ...opts.auth, host } : undefined;

  const append = ['append', '-t', ref];
  for (const layer of opts.layers) append.push('-f', layer);
  if (opts.oci) append.push('--oci-empty-base');
  await crane(append, { auth });

  const mutate = ['mutate', ref, '-t', ref, '--set-platform', 'linux/amd64'];
  const env = { PATH: DEFAULT_PATH, ...opts.env };
  for (const [k, v] of Object.entries(env)) mutate.push('--env', `${k}=${v}`);
  if (opts.workdir !== undefined) mutate.push('--workdir', opts.workdir);
  if (opts.user !== undefined) mutate.push('--user', opts.user);
  await crane(mutate, { auth });

  const digest = (await crane(['digest', ref], { auth })).trim();
  if (!/^sha256:[0-9a-f]{64}$/.test(digest)) throw new Error(`crane digest ${ref} printed ${JSON.stringify(digest)}`);
  return { ref, digest, pinned: `${repository}@${digest}` };
}

// ---- The test image ----

export interface TestImageLayers {
  /** A Debian bookworm root filesystem (mmdebstrap minbase, ca-certificates). */
  debian: string;
  /** /usr/local/bin/node (22.12.0), npm 10 with npm and npx, /usr/local/etc/npmrc naming this machine's CA bundle. */
  node: string;
}

const SCRIPT = path.join(__dirname, '..', '..', 'scripts', 'test-image.sh');

/**
 * The test image's two layer tars, cached in ~/.cache/sluice/images. Missing (`.ci/run` makes them):
 * made now with scripts/test-image.sh, a couple of minutes once (needs root or sudo for mmdebstrap).
 */
export async function testImageLayers(): Promise<TestImageLayers> {
  const dir = path.join(cacheDir(), 'images');
  const layers = { debian: path.join(dir, 'debian-bookworm.tar'), node: path.join(dir, 'node22.tar') };
  if (existsSync(layers.debian) && existsSync(layers.node)) return layers;
  mkdirSync(dir, { recursive: true });
  try {
    await run('bash', [SCRIPT], { timeoutMs: 15 * 60_000 });
  } catch (err) {
    const e = err as Error & { stderr?: string };
    throw new Error(`the test image's layers are not in ${dir} and scripts/test-image.sh could not make them (run .ci/run, or bash scripts/test-image.sh as root): ${e.message}\n${e.stderr ?? ''}`, { cause: err });
  }
  for (const file of Object.values(layers)) if (!existsSync(file)) throw new Error(`scripts/test-image.sh ran but ${file} is missing`);
  return layers;
}

// ---- Helpers ----

function run(file: string, args: string[], opts: { env?: NodeJS.ProcessEnv; timeoutMs: number }): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { env: opts.env ?? process.env, timeout: opts.timeoutMs, killSignal: 'SIGKILL', maxBuffer: 64 * 1024 * 1024, encoding: 'utf8' }, (err, stdout, stderr) => {
      if (err) reject(Object.assign(err, { stdout, stderr }));
      else resolve({ stdout, stderr });
    });
  });
}
