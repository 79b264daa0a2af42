/**
 * A build's image (issue 35), as the runner's steps use it:
 * - `resolveImage`: once when the build starts, its tag to a digest (or a rebuild's digest
 *   checked), asking the registry with the build's logins (none for an untrusted pull request:
 *   a private image then fails here, before any worker could find it in a store);
 * - `leaseWorkerImage`: on each worker, that digest from the runner's store (store.ts), pulled
 *   first when the store lacks it (pull.ts), with what the sandbox binds (its root filesystem,
 *   a passwd and a group naming the build user) and the environment its configuration sets.
 */
import { rename, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { formatImageRef, parseImageRef, pinImageRef, type ImageRef } from '../../core/imageRef';
import type { ResolvedImage } from '../../core/session';
import type { SandboxImage } from '../isolation/sandbox';
import type { RegistryLogin } from '../records';
import { dockerConfigJson, writeDockerConfig } from './credentials';
import { pullImage } from './pull';
import { layerCache } from './layers';
import { RegistryError, resolveDigest, type RegistryClient } from './registry';
import { leaseImage, type ImageStoreSettings, type Lease } from './store';
import { readRootFile } from './unpack';

export { RegistryError } from './registry';

export interface ImageDeps {
  store: ImageStoreSettings;
  /** The crane executable (found once by the runner); null: none here. */
  crane: string | null;
  mirror: { host: string; insecure: boolean } | null;
}

/** What a build logs in to registries with: nothing at all for a build that may not have secrets. */
export interface RegistryCredentials {
  logins: RegistryLogin[];
  /** The DOCKER_AUTH_CONFIG secret's value, if the repository has one. */
  dockerAuthConfig?: string;
}

/** The default PATH of an image whose configuration sets none (Docker's). */
export const IMAGE_DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
const MAX_PASSWD = 1024 * 1024;

/** The reference as a build names it, or a RegistryError saying what is wrong with it. */
export function imageRef(text: string): ImageRef {
  const parsed = parseImageRef(text);
  if (!parsed.ok) throw new RegistryError(`image ${JSON.stringify(text)} ${parsed.error}`, 'not found');
  return parsed.ref;
}

/** Runs `fn` with a crane client whose DOCKER_CONFIG holds `credentials` (for as long as it runs). */
async function withClient<T>(deps: ImageDeps, credentials: RegistryCredentials, notes: string[], fn: (client: RegistryClient) => Promise<T>): Promise<T> {
  if (!deps.crane) {
    throw new RegistryError('crane is not installed on this runner: it pulls images (install it, or set SLUICE_CRANE: docs/operating.md, "Images")', 'no client');
  }
  const config = dockerConfigJson(credentials.logins, credentials.dockerAuthConfig);
  if (config.problem) notes.push(`${config.problem}; pulled without it`);
  const dir = await writeDockerConfig(config.json);
  try {
    return await fn({ crane: deps.crane, dockerConfig: dir.dir, mirror: deps.mirror });
  } finally {
    await dir.dispose();
  }
}

/**
 * The digest the build runs: `pinned` (a rebuild's, or the reference's own `@sha256:`) checked
 * with the registry, else what its tag names now. The registry is asked either way, with this
 * build's logins: an image it may not pull fails it here.
 */
export async function resolveImage(
  deps: ImageDeps,
  image: string,
  pinned: string | null,
  credentials: RegistryCredentials,
  signal?: AbortSignal,
): Promise<{ reference: string; digest: string; notes: string[] }> {
  const ref = imageRef(image);
  const notes: string[] = [];
  const at = pinned ?? ref.digest;
  const digest = await withClient(deps, credentials, notes, (client) => resolveDigest(client, at ? pinImageRef(ref, at) : ref, signal));
  if (at && digest !== at) throw new RegistryError(`image ${formatImageRef(ref)}: the registry answered ${digest} for ${at}`, 'failed');
  return { reference: formatImageRef(ref), digest, notes };
}

/** A worker's lease on its build's image, and what running in it takes. */
export interface WorkerImage {
  lease: Lease;
  /** What the sandbox binds. */
  sandbox: SandboxImage;
  /** The image's variables (its configuration's Env), HOME left out: the build's home is its own. */
  env: Record<string, string>;
  /** Its PATH (Docker's default when it sets none). */
  path: string;
  /** Its WorkingDir ('' when none). */
  workingDir: string;
  /** For the build page: whether the store had it, or what the pull took. */
  detail: string;
  notes: string[];
}

/** The image's Env entries as variables, HOME left out. */
export function imageEnvironment(env: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const entry of env) {
    const eq = entry.indexOf('=');
    const name = entry.slice(0, eq);
    if (eq > 0 && name !== 'HOME' && !name.includes('\0')) out[name] = entry.slice(eq + 1);
  }
  return out;
}

/**
 * The image's passwd and group with the build user (`uid`, `gid`) in them as `sluice`, home
 * /sluice/home, in place of any entry of the same number: tools that look the user up (ssh,
 * git, npm) find one. Written once per user beside the entry.
 */
async function userFiles(dir: string, rootfs: string, uid: number, gid: number): Promise<{ passwd: string; group: string }> {
  const passwd = path.join(dir, `passwd-${uid}-${gid}`);
  const group = path.join(dir, `group-${uid}-${gid}`);
  const own = async (file: string, rel: string, line: string, isSame: (fields: string[]) => boolean, fallback: string) => {
    const text = (await readRootFile(rootfs, rel, MAX_PASSWD)) ?? fallback;
    const kept = text.split('\n').filter((l) => l.trim() !== '' && !isSame(l.split(':')));
    const tmp = `${file}.${process.pid}.tmp`;
    await writeFile(tmp, [...kept, line, ''].join('\n'), { mode: 0o644 });
    await rename(tmp, file);
  };
  await own(passwd, 'etc/passwd', `sluice:x:${uid}:${gid}:Sluice build:/sluice/home:/bin/sh`, (f) => f[0] === 'sluice' || f[2] === String(uid), 'root:x:0:0:root:/root:/bin/sh');
  await own(group, 'etc/group', `sluice:x:${gid}:`, (f) => f[0] === 'sluice' || f[2] === String(gid), 'root:x:0:');
  return { passwd, group };
}

/**
 * The first directory on the way to `target` that `user` may not pass (bubblewrap binds the
 * image as that user), or null. A store under a directory only the runner may enter would fail
 * every build with a bare "Permission denied" from bwrap; this names the directory instead.
 */
async function closedOnTheWay(target: string, user: { uid: number; gid: number }): Promise<string | null> {
  if (user.uid === 0) return null;
  const parts = path.resolve(target).split('/').filter(Boolean);
  for (let i = 0; i < parts.length; i++) {
    const dir = `/${parts.slice(0, i + 1).join('/')}`;
    const info = await stat(dir);
    const passable = info.uid === user.uid ? info.mode & 0o100 : info.gid === user.gid ? info.mode & 0o010 : info.mode & 0o001;
    if (!passable) return dir;
  }
  return null;
}

const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(bytes < 10 * 1024 * 1024 ? 1 : 0)} MiB`;

/**
 * The worker's lease on `digest` of `reference`: from the runner's store, or pulled with
 * `credentials()` (read only when a pull needs them). Release it when the worker is done.
 */
export async function leaseWorkerImage(
  deps: ImageDeps,
  image: ResolvedImage,
  credentials: () => Promise<RegistryCredentials>,
  user: { uid: number; gid: number },
  signal?: AbortSignal,
): Promise<WorkerImage> {
  const ref = imageRef(image.reference);
  const notes: string[] = [];
  const started = performance.now();
  let pulled: { layers: number; reused: number; downloaded: number; unpacked: number } | null = null;
  const lease = await leaseImage(
    deps.store,
    image.digest,
    async (work) => {
      const got = await withClient(deps, await credentials(), notes, (client) => pullImage(client, pinImageRef(ref, image.digest), image.digest, work, signal, layerCache(deps.store)));
      notes.push(...got.notes.map((n) => `left out of the image: ${n}`));
      pulled = { layers: got.layers, reused: got.reusedLayers, downloaded: got.downloadedBytes, unpacked: got.unpackedBytes };
      return { manifestDigest: got.manifestDigest, reference: image.reference, config: got.config, bytes: got.unpackedBytes, layers: got.layers, files: got.files };
    },
    signal,
  );
  try {
    const { meta, rootfs, dir } = lease.image;
    const closed = await closedOnTheWay(rootfs, user);
    if (closed) {
      throw new RegistryError(`the image store ${deps.store.dir} is out of the build user's reach: ${closed} does not let it pass (SLUICE_IMAGE_DIR wants a place whose directories others may enter, as /tmp or /var/lib)`, 'no client');
    }
    const files = await userFiles(dir, rootfs, user.uid, user.gid);
    const env = imageEnvironment(meta.config.env);
    const took = `${((performance.now() - started) / 1000).toFixed(1)} s`;
    const got = pulled as { layers: number; reused: number; downloaded: number; unpacked: number } | null;
    const reused = got?.reused ? ` (${got.reused} already on this runner)` : '';
    const detail = got
      ? `pulled: ${got.layers} layer${got.layers === 1 ? '' : 's'}${reused}, ${mib(got.downloaded)} fetched, ${mib(got.unpacked)} unpacked, in ${took}`
      : `from this runner's store (${mib(meta.bytes)})`;
    if (meta.config.user) notes.push(`image: its configuration names the user ${JSON.stringify(meta.config.user)}; builds run as the build user`);
    return { lease, sandbox: { rootfs, ...files }, env, path: env.PATH ?? IMAGE_DEFAULT_PATH, workingDir: meta.config.workingDir, detail, notes };
  } catch (err) {
    await lease.release();
    throw err;
  }
}
