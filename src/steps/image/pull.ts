/**
 * Pulling an image into a directory of the runner's: its manifest (an index's entry for this
 * runner's platform), its configuration and its layers, every one checked against the digest
 * that names it before anything of it is used, the layers fetched at once and each unpacked as
 * it arrives into a directory of its own (unpack.ts), then merged in order into one root
 * filesystem with their whiteouts applied. A layer the runner unpacked already for another image
 * is not fetched again: its copy comes from the runner's layers (layers.ts). crane fetches (registry.ts); the checking and the
 * unpacking are Sluice's, because the bytes are hostile until their digest says otherwise and
 * the tar entries even after (unpack.ts says how).
 */
import { createHash } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { Transform, type Readable } from 'node:stream';
import zlib from 'node:zlib';
import { DIGEST, formatImageRef, type ImageRef } from '../../core/imageRef';
import { fetchFrom, fetchManifest, RegistryError, streamBlob, type RegistryClient, type Source } from './registry';
import { applyLayer, extractLayer, prepareMountPoints, type ExtractedLayer } from './unpack';
import type { LayerCache } from './layers';

/** What a build needs of an image's configuration: its environment, where it starts, who it says it runs as (ignored: builds run as the build user). */
export interface ImageConfig {
  env: string[];
  workingDir: string;
  user: string;
}

export interface Pulled {
  /** The manifest that was unpacked (an index's entry, or the digest itself). */
  manifestDigest: string;
  config: ImageConfig;
  layers: number;
  /** Layers the runner had unpacked already (layers.ts): not fetched again. */
  reusedLayers: number;
  /** Bytes fetched (the layers as stored), and unpacked (their files). */
  downloadedBytes: number;
  unpackedBytes: number;
  files: number;
  /** What was left out of the layers (device nodes, paths that escape), for the build's notes. */
  notes: string[];
}

/** The platform a runner pulls for: an index's entry with this OS and architecture (Node's names as OCI's). */
export function runnerPlatform(): { os: string; architecture: string; variant?: string } {
  const arch: Record<string, string> = { x64: 'amd64', arm64: 'arm64', arm: 'arm', ia32: '386', ppc64: 'ppc64le', s390x: 's390x', riscv64: 'riscv64' };
  return { os: 'linux', architecture: arch[process.arch] ?? process.arch, ...(process.arch === 'arm64' ? { variant: 'v8' } : {}) };
}

/** Where a root filesystem gets the mounts of the sandbox (steps/isolation/sandbox.ts): made real, whatever the image put there. */
export const MOUNT_POINTS = {
  dirs: ['proc', 'dev', 'tmp', 'var/tmp', 'run', 'sluice/tree', 'sluice/home'],
  files: ['etc/passwd', 'etc/group', 'etc/resolv.conf', 'etc/hosts'],
};

const INDEX_TYPES = new Set(['application/vnd.oci.image.index.v1+json', 'application/vnd.docker.distribution.manifest.list.v2+json']);
const GZIP_TYPES = new Set([
  'application/vnd.oci.image.layer.v1.tar+gzip',
  'application/vnd.docker.image.rootfs.diff.tar.gzip',
  'application/vnd.oci.image.layer.nondistributable.v1.tar+gzip',
  'application/vnd.docker.image.rootfs.foreign.diff.tar.gzip',
]);
const TAR_TYPES = new Set(['application/vnd.oci.image.layer.v1.tar', 'application/vnd.oci.image.layer.nondistributable.v1.tar']);
const ZSTD_TYPES = new Set(['application/vnd.oci.image.layer.v1.tar+zstd', 'application/vnd.oci.image.layer.nondistributable.v1.tar+zstd']);
/** Layers fetched and unpacked at once. */
const PARALLEL_LAYERS = 4;
const MAX_LAYERS = 256;

interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
  platform?: { os?: string; architecture?: string; variant?: string };
}

const sha256 = (bytes: Buffer) => `sha256:${createHash('sha256').update(bytes).digest('hex')}`;

function verified(image: string, what: string, bytes: Buffer, digest: string): Buffer {
  if (sha256(bytes) !== digest) throw new RegistryError(`image ${image}: its ${what} does not match its digest ${digest}: refusing it`, 'failed');
  return bytes;
}

function parseJson(image: string, what: string, bytes: Buffer): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(bytes.toString('utf8'));
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch {
    // worded below
  }
  throw new RegistryError(`image ${image}: its ${what} is not a JSON object`, 'failed');
}

function descriptor(value: unknown): Descriptor | null {
  const d = value as Partial<Descriptor> | null;
  if (!d || typeof d.mediaType !== 'string' || typeof d.digest !== 'string' || !DIGEST.test(d.digest) || typeof d.size !== 'number' || d.size < 0) return null;
  return d as Descriptor;
}

/** The index's entry for `platform`, or why there is none. */
export function pickPlatform(image: string, index: Record<string, unknown>, platform: ReturnType<typeof runnerPlatform>): Descriptor {
  const entries = (Array.isArray(index.manifests) ? index.manifests : []).map(descriptor).filter((d): d is Descriptor => d !== null);
  const fits = entries.filter((d) => d.platform?.os === platform.os && d.platform?.architecture === platform.architecture);
  const chosen = fits.find((d) => !platform.variant || !d.platform?.variant || d.platform.variant === platform.variant) ?? fits[0];
  if (!chosen) {
    const offered = entries.map((d) => `${d.platform?.os ?? '?'}/${d.platform?.architecture ?? '?'}`).join(', ') || 'none';
    throw new RegistryError(`image ${image} has no ${platform.os}/${platform.architecture} variant (it offers ${offered})`, 'not found');
  }
  return chosen;
}

function imageConfig(config: Record<string, unknown>): ImageConfig {
  const c = (config.config ?? {}) as { Env?: unknown; WorkingDir?: unknown; User?: unknown };
  return {
    env: Array.isArray(c.Env) ? c.Env.filter((e): e is string => typeof e === 'string' && e.includes('=')) : [],
    workingDir: typeof c.WorkingDir === 'string' ? c.WorkingDir : '',
    user: typeof c.User === 'string' ? c.User : '',
  };
}

/** The stream that makes a layer a tar, by its media type. */
function decompressor(image: string, layer: Descriptor): Transform | null {
  if (GZIP_TYPES.has(layer.mediaType)) return zlib.createGunzip();
  if (TAR_TYPES.has(layer.mediaType)) return null;
  if (ZSTD_TYPES.has(layer.mediaType)) {
    const zstd = (zlib as unknown as { createZstdDecompress?: () => Transform }).createZstdDecompress;
    if (zstd) return zstd();
    throw new RegistryError(`image ${image}: layer ${layer.digest} is zstd-compressed, which this runner's Node.js cannot unpack (Node.js 22.15 or newer can)`, 'failed');
  }
  throw new RegistryError(`image ${image}: layer ${layer.digest} has media type ${layer.mediaType}, which is not an image layer`, 'failed');
}

/** Counts and hashes what passes. */
class Digesting extends Transform {
  readonly hash = createHash('sha256');
  bytes = 0;
  override _transform(chunk: Buffer, _enc: BufferEncoding, done: (err?: Error | null, data?: Buffer) => void): void {
    this.hash.update(chunk);
    this.bytes += chunk.length;
    done(null, chunk);
  }
}

/** One layer: fetched, hashed, decompressed and unpacked into `dir` at once; checked when it ends. */
async function pullLayer(client: RegistryClient, ref: ImageRef, source: Source, layer: Descriptor, dir: string, signal?: AbortSignal): Promise<ExtractedLayer> {
  const image = formatImageRef(ref);
  const decompress = decompressor(image, layer);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  // Ours to kill crane with when the unpack fails (it would wait on a full pipe forever).
  const kill = new AbortController();
  const stop = () => kill.abort();
  signal?.addEventListener('abort', stop, { once: true });
  const run = streamBlob(client, ref, source, layer.digest, kill.signal);
  const digesting = new Digesting();
  const stages: (Readable | Transform)[] = [run.stdout, digesting, ...(decompress ? [decompress] : [])];
  const tar = stages.reduce((from, to) => from.pipe(to as Transform)) as Readable;
  // A broken stream anywhere ends the unpack.
  for (const stage of stages) stage.on('error', (err) => tar.destroy(err));
  let extracted: ExtractedLayer;
  try {
    extracted = await extractLayer(tar, dir);
    await run.done;
  } catch (err) {
    // crane's own failure (a registry that refused mid-way) says more than a truncated stream does.
    const craneSaid = await Promise.race([run.done.then(() => null, (e: unknown) => e), new Promise<null>((r) => setTimeout(() => r(null), 1_000))]);
    kill.abort();
    await run.done.catch(() => undefined);
    if (craneSaid instanceof RegistryError) throw craneSaid;
    if (err instanceof RegistryError) throw err;
    throw new RegistryError(`image ${image}: layer ${layer.digest} could not be unpacked: ${(err as Error).message}`, 'failed');
  } finally {
    signal?.removeEventListener('abort', stop);
  }
  const got = `sha256:${digesting.hash.digest('hex')}`;
  if (got !== layer.digest || digesting.bytes !== layer.size) {
    throw new RegistryError(`image ${image}: layer ${layer.digest} does not match its digest (got ${got}, ${digesting.bytes} bytes of ${layer.size}): refusing it`, 'failed');
  }
  return extracted;
}

/** Runs `fn` over `items`, at most `limit` at once; the first failure stops the rest from starting. */
async function eachLimited<T, R>(items: readonly T[], limit: number, fn: (item: T, i: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  let failed = false;
  const worker = async () => {
    while (!failed && next < items.length) {
      const i = next++;
      try {
        out[i] = await fn(items[i]!, i);
      } catch (err) {
        failed = true;
        throw err;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/**
 * Pulls the image `ref` names at `digest` (a manifest, or an index with an entry for this
 * runner's platform) into `work`: `work/rootfs` its root filesystem, ready for the sandbox.
 */
export async function pullImage(client: RegistryClient, ref: ImageRef, digest: string, work: string, signal?: AbortSignal, layerCache?: LayerCache): Promise<Pulled> {
  const image = formatImageRef(ref);
  const first = await fetchManifest(client, ref, digest, signal);
  const { source } = first;
  let manifestDigest = digest;
  let manifest = parseJson(image, 'manifest', verified(image, 'manifest', first.value, digest));
  if (INDEX_TYPES.has(String(manifest.mediaType)) || (Array.isArray(manifest.manifests) && !Array.isArray(manifest.layers))) {
    const entry = pickPlatform(image, manifest, runnerPlatform());
    manifestDigest = entry.digest;
    manifest = parseJson(image, 'manifest', verified(image, 'manifest', await fetchFrom(client, ref, source, 'manifest', entry.digest, signal), entry.digest));
  }
  const configRef = descriptor(manifest.config);
  const layers = (Array.isArray(manifest.layers) ? manifest.layers : []).map(descriptor);
  if (!configRef || layers.some((l) => l === null)) throw new RegistryError(`image ${image}: its manifest is not an image manifest (no config or a broken layer list)`, 'failed');
  if (layers.length > MAX_LAYERS) throw new RegistryError(`image ${image} has ${layers.length} layers; at most ${MAX_LAYERS} are pulled`, 'failed');
  const config = imageConfig(parseJson(image, 'configuration', verified(image, 'configuration', await fetchFrom(client, ref, source, 'blob', configRef.digest, signal), configRef.digest)));

  const layerDir = (i: number) => path.join(work, 'layers', String(i));
  // A layer the runner has (another image's) is a copy of hard links; any other is fetched, and kept.
  const reusedAt = new Set<number>();
  const extracted = await eachLimited(layers as Descriptor[], PARALLEL_LAYERS, async (layer, i) => {
    const copied = await layerCache?.copy(layer.digest, layerDir(i)).catch(async () => {
      await rm(layerDir(i), { recursive: true, force: true });
      return null;
    });
    if (copied) {
      reusedAt.add(i);
      return copied;
    }
    const got = await pullLayer(client, ref, source, layer, layerDir(i), signal);
    await layerCache?.keep(layer.digest, layerDir(i), got);
    return got;
  });
  const fetched = (layers as Descriptor[]).filter((_, i) => !reusedAt.has(i));
  const rootfs = path.join(work, 'rootfs');
  await mkdir(rootfs, { mode: 0o755 });
  for (const [i, layer] of extracted.entries()) {
    if (signal?.aborted) throw new RegistryError('stopped', 'failed');
    await applyLayer(rootfs, layerDir(i), layer);
  }
  await rm(path.join(work, 'layers'), { recursive: true, force: true });
  await prepareMountPoints(rootfs, MOUNT_POINTS);
  return {
    manifestDigest,
    config,
    layers: layers.length,
    reusedLayers: reusedAt.size,
    downloadedBytes: fetched.reduce((n, l) => n + l.size, 0),
    unpackedBytes: extracted.reduce((n, l) => n + l.bytes, 0),
    files: extracted.reduce((n, l) => n + l.files, 0),
    notes: extracted.flatMap((l) => l.notes).slice(0, 20),
  };
}
