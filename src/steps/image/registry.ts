/**
 * Talking to image registries, through go-containerregistry's `crane` (an existing OCI client:
 * Docker Hub's token dance, Basic auth, HTTP for loopback registries, retries on its side); this
 * module only runs it and words what went wrong. Every byte crane hands back is checked here
 * against the digest that named it (pull.ts), so crane is trusted to fetch, not to verify.
 *
 * crane reads registry logins from `$DOCKER_CONFIG/config.json`: each call gets a directory of
 * the build's own (credentials.ts), never the runner's `~/.docker`, and an environment with
 * nothing of the runner's but its PATH and proxy settings.
 */
import { spawn } from 'node:child_process';
import type { Readable } from 'node:stream';
import { DOCKER_HUB, formatImageRef, type ImageRef } from '../../core/imageRef';

/** How a build reaches registries. */
export interface RegistryClient {
  /** The crane executable. */
  crane: string;
  /** A directory with the build's `config.json` (its logins), 0700, the runner's. */
  dockerConfig: string;
  /** Docker Hub's images come through this registry first (SLUICE_REGISTRY_MIRROR). */
  mirror: { host: string; insecure: boolean } | null;
}

export type RegistryProblem = 'unauthorized' | 'not found' | 'rate limited' | 'unreachable' | 'certificate' | 'failed' | 'no client';

/** A registry's refusal or absence, worded for the build's `error`: the image, the registry, what it said. */
export class RegistryError extends Error {
  override readonly name = 'RegistryError';
  constructor(
    message: string,
    readonly problem: RegistryProblem,
  ) {
    super(message);
  }

  /** Whether another try might go otherwise (a registry that did not answer, or answered oddly). */
  get retryable(): boolean {
    return this.problem === 'unreachable' || this.problem === 'failed';
  }
}

const MAX_STDERR = 16 * 1024;
const MAX_QUOTE = 300;
/** One metadata call (a digest, a manifest, a config) may take this long. */
const CALL_TIMEOUT_MS = 120_000;

/** Where an image's registry is reached: Docker Hub's through the mirror when there is one. */
export function registriesOf(client: RegistryClient, ref: ImageRef): Source[] {
  const direct = { registry: ref.registry, insecure: false };
  if (ref.registry !== DOCKER_HUB || !client.mirror) return [direct];
  return [{ registry: client.mirror.host, insecure: client.mirror.insecure }, direct];
}

/** `registry/repository@digest` (or `:tag`) as crane takes it. */
export function craneRef(ref: ImageRef, registry: string, at?: string): string {
  const base = `${registry}/${ref.repository}`;
  if (at) return `${base}@${at}`;
  return ref.digest ? `${base}@${ref.digest}` : `${base}:${ref.tag ?? 'latest'}`;
}

function craneEnv(client: RegistryClient): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin', HOME: client.dockerConfig, DOCKER_CONFIG: client.dockerConfig };
  // A runner behind a proxy reaches registries through it, as docker would.
  for (const name of ['HTTPS_PROXY', 'HTTP_PROXY', 'NO_PROXY', 'https_proxy', 'http_proxy', 'no_proxy', 'SSL_CERT_FILE', 'SSL_CERT_DIR']) {
    if (process.env[name]) env[name] = process.env[name];
  }
  return env;
}

function args(sub: string[], insecure: boolean): string[] {
  return insecure ? [...sub, '--insecure'] : sub;
}

/** What crane's last `Error:` line says, as a RegistryError about `image` at `registry`. */
export function registryError(image: string, registry: string, stderr: string): RegistryError {
  const lines = stderr.split('\n').map((l) => l.trim()).filter(Boolean);
  const said = [...lines].reverse().find((l) => l.startsWith('Error:'))?.slice('Error:'.length).trim() ?? lines[lines.length - 1] ?? 'no answer';
  // crane names the URL it asked; the registry's own words follow the last `: ` of a status error.
  const quote = said.length > MAX_QUOTE ? `${said.slice(0, MAX_QUOTE)}…` : said;
  const where = `image ${image} (registry ${registry})`;
  if (/UNAUTHORIZED|DENIED|401 Unauthorized|403 Forbidden|authentication required|unauthorized/i.test(said)) {
    return new RegistryError(`${where}: unauthorized: the registry refused this build's pull (no login for ${registry}, a wrong one, or a build that gets none: ${quote})`, 'unauthorized');
  }
  if (/TOOMANYREQUESTS|429 Too Many Requests/i.test(said)) {
    return new RegistryError(`${where}: rate limited: the registry refuses more pulls for now (${quote})`, 'rate limited');
  }
  if (/MANIFEST_UNKNOWN|NAME_UNKNOWN|BLOB_UNKNOWN|404 Not Found|not found/i.test(said)) {
    return new RegistryError(`${where}: not found: the registry has no such image (${quote})`, 'not found');
  }
  if (/error verifying sha256 checksum|digest mismatch/i.test(said)) {
    return new RegistryError(`${where}: a blob it served does not match its digest: refusing it (${quote})`, 'failed');
  }
  if (/x509|certificate/i.test(said)) {
    return new RegistryError(`${where}: the registry's TLS certificate does not verify (${quote})`, 'certificate');
  }
  if (/dial tcp|connection refused|no such host|i\/o timeout|timeout|connection reset|network is unreachable|EOF|server misbehaving|no route to host/i.test(said)) {
    return new RegistryError(`${where}: unreachable: the registry did not answer (${quote})`, 'unreachable');
  }
  return new RegistryError(`${where}: the registry failed: ${quote}`, 'failed');
}

interface Run {
  stdout: Readable;
  /** Settles when crane exits: rejects with a RegistryError unless it exited 0. */
  done: Promise<void>;
}

/** Starts crane; `describe` words its failure. Killed on abort or after `timeoutMs` (0: none). */
function startCrane(client: RegistryClient, argv: string[], describe: (stderr: string) => RegistryError, signal: AbortSignal | undefined, timeoutMs: number): Run {
  const child = spawn(client.crane, argv, { env: craneEnv(client), stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    if (stderr.length < MAX_STDERR) stderr += chunk.toString('utf8');
  });
  const kill = () => child.kill('SIGKILL');
  signal?.addEventListener('abort', kill, { once: true });
  const timer = timeoutMs > 0 ? setTimeout(kill, timeoutMs) : null;
  const done = new Promise<void>((resolve, reject) => {
    child.once('error', (err: NodeJS.ErrnoException) => {
      reject(new RegistryError(err.code === 'ENOENT' ? `crane (${client.crane}) is not installed on this runner: it pulls images (docs/operating.md, "Images")` : `crane could not start: ${err.message}`, 'no client'));
    });
    child.once('close', (code, sig) => {
      if (timer) clearTimeout(timer);
      signal?.removeEventListener('abort', kill);
      if (code === 0) return resolve();
      if (signal?.aborted) return reject(new RegistryError('stopped', 'failed'));
      reject(sig === 'SIGKILL' && !stderr ? new RegistryError(`crane did not finish within ${Math.round(timeoutMs / 1000)} s`, 'unreachable') : describe(stderr));
    });
  });
  // An unread stdout must not hold crane up; callers that stream read it themselves.
  done.catch(() => undefined);
  return { stdout: child.stdout, done };
}

async function collect(run: Run, maxBytes: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  run.stdout.on('data', (chunk: Buffer) => {
    size += chunk.length;
    if (size <= maxBytes) chunks.push(chunk);
  });
  await run.done;
  if (size > maxBytes) throw new RegistryError(`the registry answered with more than ${maxBytes} bytes where a manifest or configuration was expected`, 'failed');
  return Buffer.concat(chunks);
}

/** Where an answer came from: the registry later requests of the same pull go to. */
export interface Source {
  registry: string;
  insecure: boolean;
}

/** Each registry of `ref` in turn (the mirror, then Docker Hub): the first answer and who gave it, else the last one's failure. */
async function firstAnswer<T>(client: RegistryClient, ref: ImageRef, ask: (registry: string, insecure: boolean) => Promise<T>): Promise<{ value: T; source: Source }> {
  let failure: unknown;
  for (const source of registriesOf(client, ref)) {
    try {
      return { value: await ask(source.registry, source.insecure), source };
    } catch (err) {
      failure = err;
      if (err instanceof RegistryError && err.problem === 'no client') throw err;
    }
  }
  throw failure;
}

/**
 * The digest `ref` names now (its tag's manifest or index), as the registry says (a HEAD
 * request); for a pinned reference, the registry's word that it still has it and lets this
 * build have it.
 */
export async function resolveDigest(client: RegistryClient, ref: ImageRef, signal?: AbortSignal): Promise<string> {
  const image = formatImageRef(ref);
  const { value } = await firstAnswer(client, ref, async (registry, insecure) => {
    const run = startCrane(client, args(['digest', craneRef(ref, registry)], insecure), (e) => registryError(image, registry, e), signal, CALL_TIMEOUT_MS);
    return (await collect(run, 1024)).toString('utf8').trim();
  });
  return value;
}

/** The raw bytes of the manifest (or index) at `digest`, and the registry that gave them: the caller checks them against it. */
export function fetchManifest(client: RegistryClient, ref: ImageRef, digest: string, signal?: AbortSignal): Promise<{ value: Buffer; source: Source }> {
  const image = formatImageRef(ref);
  return firstAnswer(client, ref, (registry, insecure) =>
    collect(startCrane(client, args(['manifest', craneRef(ref, registry, digest)], insecure), (e) => registryError(image, registry, e), signal, CALL_TIMEOUT_MS), 4 * 1024 * 1024),
  );
}

/** A manifest or small blob (the image's configuration) whole, from the registry that gave the first manifest. */
export function fetchFrom(client: RegistryClient, ref: ImageRef, source: Source, kind: 'manifest' | 'blob', digest: string, signal?: AbortSignal): Promise<Buffer> {
  const image = formatImageRef(ref);
  const run = startCrane(client, args([kind, craneRef(ref, source.registry, digest)], source.insecure), (e) => registryError(image, source.registry, e), signal, CALL_TIMEOUT_MS);
  return collect(run, 8 * 1024 * 1024);
}

/** A layer blob as a stream from `source`; `done` rejects unless crane got it all. */
export function streamBlob(client: RegistryClient, ref: ImageRef, source: Source, digest: string, signal?: AbortSignal): Run {
  const image = formatImageRef(ref);
  return startCrane(client, args(['blob', craneRef(ref, source.registry, digest)], source.insecure), (e) => registryError(image, source.registry, e), signal, 0);
}
