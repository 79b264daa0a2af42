/**
 * A runner's unpacked layers, by digest (issue 49): two images that share a base layer (most
 * images of one distribution do) fetch and unpack it once. `<store>/layers/<hex>/` holds `tree/`,
 * what extractLayer wrote of a blob that matched its digest, and `layer.json`, its ExtractedLayer
 * record (written last; its modification time is the layer's last use).
 *
 * An image's root filesystem is still its own (unpack.ts applyLayer merges a copy of each layer):
 * the copy is made of hard links to the cached files, so a layer's files are written once on
 * disk, whatever number of images hold them. This holds because nothing ever writes a file of a
 * root filesystem in place: extraction makes every file new (O_EXCL), applyLayer only renames,
 * removes and links, prepareMountPoints replaces what is not right instead of changing it, and
 * builds see the root read-only. A hostile layer can therefore not reach another image's files
 * through a layer they share: it can only name, move or link them in its own image's tree.
 *
 * The cache is the runner's (0700); entries are placed by rename (another pull that made the same
 * layer meanwhile keeps its own, and the first one placed stays), and evicted with the store
 * (evictLayers: the least recently used past the store's limit).
 */
import { constants, copyFileSync, linkSync, lstatSync, mkdirSync, readdirSync, readlinkSync, symlinkSync, chmodSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rename, stat, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { discard } from '../trash';
import type { ExtractedLayer } from './unpack';

export interface LayerCacheSettings {
  /** The image store's directory: layers go in its `layers/`. */
  dir: string;
  maxBytes: number;
}

const RECORD = 'layer.json';
/** A staging directory this old was left by a runner that died mid-pull. */
const STALE_STAGING_MS = 6 * 3600_000;
const DIGEST = /^sha256:[0-9a-f]{64}$/;

const layersDir = (s: LayerCacheSettings) => path.join(s.dir, 'layers');
const trashDir = (s: LayerCacheSettings) => path.join(s.dir, 'trash');
const entryOf = (s: LayerCacheSettings, digest: string) => path.join(layersDir(s), digest.slice('sha256:'.length));

/** Entries copied between two turns of the event loop. */
const LINKS_PER_TURN = 512;
const turn = () => new Promise<void>((r) => setImmediate(r));

/**
 * `from` (a tree extractLayer wrote) again at `to`, which must not exist: directories made with
 * the same modes, everything else hard-linked (a symbolic link as itself), copied where a file
 * has as many links as the filesystem allows.
 */
export async function linkTree(from: string, to: string): Promise<void> {
  let n = 0;
  const walk = async (src: string, dst: string): Promise<void> => {
    const mode = lstatSync(src).mode & 0o7777;
    // Filled first, then given its own mode (a layer's directory may forbid writing in it).
    mkdirSync(dst, 0o700);
    for (const entry of readdirSync(src, { withFileTypes: true })) {
      const a = `${src}/${entry.name}`;
      const b = `${dst}/${entry.name}`;
      if (entry.isDirectory()) await walk(a, b);
      else {
        try {
          linkSync(a, b);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'EMLINK') throw err;
          if (entry.isSymbolicLink()) symlinkSync(readlinkSync(a), b);
          else copyFileSync(a, b, constants.COPYFILE_EXCL);
        }
      }
      if (++n % LINKS_PER_TURN === 0) await turn();
    }
    chmodSync(dst, mode);
  };
  await walk(from, to);
}

/** The layers of every image this runner pulled, by digest. */
export function layerCache(s: LayerCacheSettings) {
  return {
    /**
     * A copy of the cached layer `digest` at `into` (which must not exist), made of hard links,
     * for applyLayer to consume; its record. Null when the cache lacks it, or lost it meanwhile.
     */
    async copy(digest: string, into: string): Promise<ExtractedLayer | null> {
      if (!DIGEST.test(digest)) return null;
      const entry = entryOf(s, digest);
      const record = await readFile(path.join(entry, RECORD), 'utf8').then((t) => JSON.parse(t) as ExtractedLayer, () => null);
      if (!record) return null;
      const now = new Date();
      await utimes(path.join(entry, RECORD), now, now).catch(() => undefined);
      await linkTree(path.join(entry, 'tree'), into);
      return record;
    },

    /** Keeps `dir` (the tree extractLayer wrote of a blob that matched `digest`) for later pulls; `dir` stays as it is. */
    async keep(digest: string, dir: string, layer: ExtractedLayer): Promise<void> {
      if (!DIGEST.test(digest)) return;
      await mkdir(layersDir(s), { recursive: true, mode: 0o700 });
      const staging = await mkdtemp(path.join(layersDir(s), '.staging-'));
      try {
        await linkTree(dir, path.join(staging, 'tree'));
        await writeFile(path.join(staging, RECORD), JSON.stringify(layer), { mode: 0o600 });
        await rename(staging, entryOf(s, digest));
      } catch {
        // Another pull placed the same layer first (or the disk said no): this copy goes.
        await discard([staging], trashDir(s));
      }
    },
  };
}

export type LayerCache = ReturnType<typeof layerCache>;

/** Removes the least recently used layers while they hold more than the store's limit, and staging a dead runner left. */
export async function evictLayers(s: LayerCacheSettings): Promise<number> {
  const names = await readdir(layersDir(s)).catch(() => [] as string[]);
  const entries = await Promise.all(
    names.map(async (name) => {
      const dir = path.join(layersDir(s), name);
      const staging = name.startsWith('.staging-');
      const record = staging ? null : await readFile(path.join(dir, RECORD), 'utf8').then((t) => JSON.parse(t) as ExtractedLayer, () => null);
      // A layer's last use is its record's time; a staging directory's, its own.
      const used = await stat(staging ? dir : path.join(dir, RECORD)).catch(() => null);
      return { dir, staging, bytes: record?.bytes ?? 0, usedAt: used?.mtimeMs ?? 0, whole: record !== null };
    }),
  );
  const victims = entries.filter((e) => e.staging && Date.now() - e.usedAt > STALE_STAGING_MS).map((e) => e.dir);
  let total = 0;
  for (const e of entries.filter((x) => x.whole).sort((a, b) => b.usedAt - a.usedAt)) {
    if (total + e.bytes <= s.maxBytes) total += e.bytes;
    else victims.push(e.dir);
  }
  await discard(victims, trashDir(s));
  return victims.length;
}
