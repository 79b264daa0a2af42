/**
 * An OCI image's layers as one root directory, which bubblewrap then mounts as a build's `/`.
 *
 * Layers are hostile input: a tar may hold absolute paths, `..`, a symbolic link out and then an
 * entry written "through" it, hard links to anything, devices, setuid files, capabilities. So:
 *
 * - `extractLayer` writes one layer into an empty directory of its own. There every directory is
 *   one this extraction made, which is what makes "never through a link" cheap: a parent is safe
 *   when it is in the set of directories made here. Paths with `..` are skipped, devices and FIFOs
 *   too, setuid and setgid bits are dropped, nothing is chowned, no xattr is set.
 * - `applyLayer` merges that directory into the root built so far as overlayfs would show it:
 *   opaque directories and whiteouts delete from the lower layers only, then whatever is new is
 *   moved over with `rename` (a new directory, however big, is one call).
 *
 * Filesystem calls are synchronous: an image is thousands of small files, and a call on the
 * thread pool costs more than the call itself. The event loop still turns between the chunks of
 * the tar stream; no file is held in memory (its chunks are written as they come).
 */
import {
  chmodSync,
  closeSync,
  constants,
  fchmodSync,
  futimesSync,
  linkSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  renameSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { chmod, lstat, mkdir, open, rm } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { setImmediate as turn } from 'node:timers/promises';
import { Parser, type ReadEntry } from 'tar';
import { readUpTo } from '../files';

/** One layer written by extractLayer: what applyLayer needs to merge it, and what was left out. */
export interface ExtractedLayer {
  /** Entries written: regular files, directories, symbolic and hard links. */
  files: number;
  /** The sum of the regular files' sizes written. */
  bytes: number;
  /** Paths the layer deletes from the layers below it (`D/.wh.name` names `D/name`). */
  whiteouts: string[];
  /** Directories whose lower contents the layer hides (`D/.wh..wh..opq`); '' is the root. */
  opaqueDirs: string[];
  /** Hard links whose target is not a file of this layer: a lower layer's, linked by applyLayer. */
  pendingLinks: { path: string; target: string }[];
  /** Directories the layer has only because an entry was in them: merging one keeps the lower one's mode. */
  impliedDirs: string[];
  /** Entries left out: hostile paths, devices, FIFOs, paths through a link, unknown types. */
  skipped: number;
  /** Why, for the first few of them. */
  notes: string[];
}

const MAX_NOTES = 20;
/** A note shows this much of a path: a hostile one may be kilobytes long. */
const NOTE_PATH_CHARS = 160;
/** Errors an entry's own name or shape can cause (and a hostile layer may cause on purpose): the entry is skipped, the layer goes on. */
const ENTRY_ERRORS = new Set(['ENAMETOOLONG', 'EMLINK']);
/** Mode bits kept: permissions and sticky; setuid and setgid are dropped. */
const KEPT_MODE = 0o1777;
/** Directories merged between two turns of the event loop. */
const MOVES_PER_TURN = 512;

const { O_WRONLY, O_RDONLY, O_CREAT, O_EXCL, O_NOFOLLOW, O_DIRECTORY, O_NONBLOCK } = constants;
/** O_EXCL also refuses a symbolic link at the name: a file is always a new inode made here. */
const NEW_FILE = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW;

const WHITEOUT = '.wh.';
const OPAQUE = '.wh..wh..opq';
/** Entries that are device nodes or pipes: never made (an image cannot name a device). */
const DEVICE_TYPES = new Set(['CharacterDevice', 'BlockDevice', 'FIFO']);

/**
 * A tar path as a plain path relative to the root ('' for the root itself), or null when it has
 * `..` (before or after normalizing) or a NUL. Leading `/` and `./` go: `/etc/x` is `etc/x`.
 */
export function cleanPath(raw: string): string | null {
  if (raw.includes('\0') || raw.split('/').includes('..')) return null;
  const rel = path.posix.normalize(raw).replace(/^\/+|\/+$/g, '');
  if (rel === '.') return '';
  return rel.split('/').includes('..') ? null : rel;
}

function errorCode(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | null)?.code;
}

function shown(p: string): string {
  return p.length > NOTE_PATH_CHARS ? `${p.slice(0, NOTE_PATH_CHARS)}…` : p;
}

/** Sets a file's mtime, if the tar's is one the filesystem takes: mtimes are a courtesy (make, .pyc files), not worth failing a layer. */
function keepMtime(fd: number, mtime: Date): void {
  try {
    futimesSync(fd, mtime, mtime);
  } catch {
    // An mtime out of range stays the time of writing.
  }
}

function writeAll(fd: number, chunk: Buffer): void {
  for (let off = 0; off < chunk.length; ) off += writeSync(fd, chunk, off, chunk.length - off);
}

/** One layer being written into its own directory, entry by entry in the tar's order. */
class Extraction {
  readonly result: ExtractedLayer = { files: 0, bytes: 0, whiteouts: [], opaqueDirs: [], pendingLinks: [], impliedDirs: [], skipped: 0, notes: [] };
  error: unknown = null;
  /**
   * Directories known to be real ones made here ('' is the top). Whenever one is here, so are all
   * its parents, so a path's parent being here proves the whole path is free of links.
   */
  private readonly realDirs = new Set<string>(['']);
  /** Each directory's final mode, set once the layer is written: meanwhile they stay writable. */
  private readonly dirModes = new Map<string, number>();
  /** Directories made for an entry in them, with no entry of their own. */
  private readonly implied = new Set<string>();
  /** Hard links to wait for applyLayer, by path, in the tar's order. */
  private readonly pending = new Map<string, string>();
  /** The file being written, closed if the extraction fails midway. */
  private fd: number | null = null;

  constructor(
    private readonly dir: string,
    private readonly onError: (err: unknown) => void,
  ) {}

  entry(entry: ReadEntry): void {
    if (this.error) {
      entry.resume();
      return;
    }
    try {
      this.take(entry);
    } catch (err) {
      if (ENTRY_ERRORS.has(errorCode(err) ?? '')) this.note(`${shown(entry.path)}: ${errorCode(err)}`);
      else this.fail(err);
      entry.resume();
    }
  }

  /** An entry the parser left out: an unknown type, or metadata too big to read. */
  ignored(entry: ReadEntry): void {
    this.note(`${shown(entry.path)}: a ${entry.type} entry`);
  }

  fail(err: unknown): void {
    if (this.error) return;
    this.error = err ?? new Error('the layer could not be extracted');
    if (this.fd !== null) {
      try {
        closeSync(this.fd);
      } catch {
        // Already failing: the first error is the one to report.
      }
      this.fd = null;
    }
    this.onError(this.error);
  }

  /** Sets the directories' modes, deepest first (a parent that loses its x bit no longer lets the runner reach in). */
  finish(): ExtractedLayer {
    const depth = (p: string) => p.split('/').length;
    for (const rel of [...this.dirModes.keys()].sort((a, b) => depth(b) - depth(a))) {
      // Not following a link at the name, though none can be there: the directory is in realDirs.
      const fd = openSync(this.abs(rel), O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
      try {
        fchmodSync(fd, this.dirModes.get(rel)!);
      } finally {
        closeSync(fd);
      }
    }
    this.result.pendingLinks = [...this.pending].map(([p, target]) => ({ path: p, target }));
    this.result.impliedDirs = [...this.implied];
    return this.result;
  }

  private take(entry: ReadEntry): void {
    const rel = cleanPath(entry.path);
    if (rel === null) return this.skip(entry, `${shown(entry.path)}: a path with '..' or NUL`);
    const base = rel.slice(rel.lastIndexOf('/') + 1);
    if (base.startsWith(WHITEOUT)) return this.whiteout(entry, rel, base);
    if (rel === '') {
      // The layer's own top ('./'): the root's mode is the runner's to choose.
      if (entry.type === 'Directory') return void entry.resume();
      return this.skip(entry, `${shown(entry.path)}: an empty path`);
    }
    switch (entry.type) {
      case 'File':
      case 'OldFile':
      case 'ContiguousFile':
        return this.file(entry, rel);
      case 'Directory':
        return this.directory(entry, rel);
      case 'SymbolicLink':
        return this.symlink(entry, rel);
      case 'Link':
        return this.hardLink(entry, rel);
      default:
        // A root filesystem's own /dev nodes (mmdebstrap, debootstrap keep them) go without a word:
        // the sandbox mounts a /dev of its own there.
        if (rel.startsWith('dev/') && DEVICE_TYPES.has(entry.type)) {
          entry.resume();
          this.result.skipped += 1;
          return;
        }
        return this.skip(entry, `${shown(rel)}: a ${entry.type}`);
    }
  }

  private whiteout(entry: ReadEntry, rel: string, base: string): void {
    const dir = rel.slice(0, Math.max(0, rel.lastIndexOf('/')));
    const name = base.slice(WHITEOUT.length);
    if (base === OPAQUE) this.result.opaqueDirs.push(dir);
    // `.wh..wh.` names are aufs's own bookkeeping; an empty name would delete the directory itself.
    else if (name.startsWith(WHITEOUT) || name === '' || name === '.') return this.skip(entry, `${shown(rel)}: not a whiteout of a name`);
    else this.result.whiteouts.push(dir ? `${dir}/${name}` : name);
    entry.resume();
  }

  private file(entry: ReadEntry, rel: string): void {
    if (!this.parentsReady(entry, rel)) return;
    const abs = this.abs(rel);
    let fd: number;
    try {
      fd = openSync(abs, NEW_FILE, 0o600);
    } catch (err) {
      if (errorCode(err) !== 'EEXIST') throw err;
      this.clear(rel);
      fd = openSync(abs, NEW_FILE, 0o600);
    }
    this.fd = fd;
    this.pending.delete(rel);
    const mode = (entry.mode ?? 0o644) & KEPT_MODE;
    const mtime = entry.mtime;
    entry.on('end', () =>
      this.guard(() => {
        fchmodSync(fd, mode);
        if (mtime) keepMtime(fd, mtime);
        this.fd = null;
        closeSync(fd);
        this.result.files += 1;
      }),
    );
    entry.on('data', (chunk: Buffer) =>
      this.guard(() => {
        writeAll(fd, chunk);
        this.result.bytes += chunk.length;
      }),
    );
  }

  private directory(entry: ReadEntry, rel: string): void {
    entry.resume();
    if (!this.parentsReady(entry, rel)) return;
    if (!this.realDirs.has(rel)) {
      const abs = this.abs(rel);
      try {
        mkdirSync(abs, 0o755);
      } catch (err) {
        if (errorCode(err) !== 'EEXIST') throw err;
        this.clear(rel);
        mkdirSync(abs, 0o755);
      }
      this.realDirs.add(rel);
      this.result.files += 1;
    }
    // A directory over a directory merges, and takes the later mode.
    this.dirModes.set(rel, (entry.mode ?? 0o755) & KEPT_MODE);
    this.implied.delete(rel);
    this.pending.delete(rel);
  }

  private symlink(entry: ReadEntry, rel: string): void {
    entry.resume();
    if (!this.parentsReady(entry, rel)) return;
    // Made as it is, absolute or not: it is resolved inside the sandbox, where `/` is this root.
    const target = entry.linkpath ?? '';
    if (target === '' || target.includes('\0')) return this.note(`${shown(rel)}: a symbolic link to nothing`);
    const abs = this.abs(rel);
    try {
      symlinkSync(target, abs);
    } catch (err) {
      if (errorCode(err) !== 'EEXIST') throw err;
      this.clear(rel);
      symlinkSync(target, abs);
    }
    this.pending.delete(rel);
    this.result.files += 1;
  }

  private hardLink(entry: ReadEntry, rel: string): void {
    entry.resume();
    const raw = entry.linkpath ?? '';
    const target = cleanPath(raw);
    if (target === null || target === '' || target === rel) return this.note(`${shown(rel)}: a hard link to ${shown(raw)}`);
    if (target.startsWith(`${rel}/`)) return this.note(`${shown(rel)}: a hard link to ${shown(raw)}, inside what it would replace`);
    if (!this.parentsReady(entry, rel)) return;
    // Only a file reached through directories made here (no link on the way) is linked now.
    const slash = target.lastIndexOf('/');
    const here = this.realDirs.has(slash < 0 ? '' : target.slice(0, slash)) && lstatSync(this.abs(target), { throwIfNoEntry: false })?.isFile();
    this.clear(rel);
    if (!here) {
      // OCI lets a hard link name a lower layer's file: applyLayer links it, or leaves it out.
      this.pending.delete(rel);
      this.pending.set(rel, target);
      return;
    }
    linkSync(this.abs(target), this.abs(rel));
    this.pending.delete(rel);
    this.result.files += 1;
  }

  /**
   * Whether every parent of `rel` is a real directory made here, making the missing ones. A link
   * or a file on the way skips the entry: nothing is written through it.
   */
  private parentsReady(entry: ReadEntry, rel: string): boolean {
    const slash = rel.lastIndexOf('/');
    if (slash < 0 || this.realDirs.has(rel.slice(0, slash))) return true;
    for (let next = rel.indexOf('/'); next >= 0; next = rel.indexOf('/', next + 1)) {
      const dir = rel.slice(0, next);
      if (this.realDirs.has(dir)) continue;
      const abs = this.abs(dir);
      const there = lstatSync(abs, { throwIfNoEntry: false });
      if (!there) {
        mkdirSync(abs, 0o755);
        this.dirModes.set(dir, 0o755);
        this.implied.add(dir);
        // An earlier hard link of this name, waiting for applyLayer, gives way to the directory.
        this.pending.delete(dir);
        this.result.files += 1;
      } else if (!there.isDirectory()) {
        this.skip(entry, `${shown(rel)}: a path through ${shown(dir)}, ${there.isSymbolicLink() ? 'a symbolic link' : 'not a directory'}`);
        return false;
      }
      this.realDirs.add(dir);
    }
    return true;
  }

  /** Deletes what is at `rel` (never following a link) for a later entry of the same name, and forgets what was known under it. */
  private clear(rel: string): void {
    const abs = this.abs(rel);
    const there = lstatSync(abs, { throwIfNoEntry: false });
    if (!there) return;
    if (!there.isDirectory()) return unlinkSync(abs);
    rmSync(abs, { recursive: true, force: true });
    const under = `${rel}/`;
    for (const known of [this.realDirs, this.implied]) for (const d of known) if (d === rel || d.startsWith(under)) known.delete(d);
    for (const d of this.dirModes.keys()) if (d === rel || d.startsWith(under)) this.dirModes.delete(d);
    for (const p of this.pending.keys()) if (p.startsWith(under)) this.pending.delete(p);
  }

  private guard(step: () => void): void {
    if (this.error) return;
    try {
      step();
    } catch (err) {
      this.fail(err);
    }
  }

  private skip(entry: ReadEntry, why: string): void {
    entry.resume();
    this.note(why);
  }

  private note(why: string): void {
    this.result.skipped += 1;
    if (this.result.notes.length < MAX_NOTES) this.result.notes.push(why);
  }

  private abs(rel: string): string {
    return `${this.dir}/${rel}`;
  }
}

/**
 * Writes the uncompressed layer tar `tar` into `dir`, an empty directory of the runner's. Owners
 * are the runner's, modes lose setuid and setgid, mtimes of files are kept. Whiteouts and hard
 * links to lower layers are returned for applyLayer. Rejects on a malformed tar or a filesystem
 * error (what was written stays: the caller deletes `dir`); a hostile entry is only skipped.
 */
export function extractLayer(tar: NodeJS.ReadableStream | Readable, dir: string): Promise<ExtractedLayer> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const done = (err: unknown, layer?: ExtractedLayer) => {
      if (settled) return;
      settled = true;
      tar.removeListener('data', feed);
      tar.removeListener('end', end);
      if (layer) return resolve(layer);
      // As a pipeline would: the source is of no use any more.
      if ('destroy' in tar && typeof tar.destroy === 'function') tar.destroy();
      reject(err instanceof Error ? err : new Error(String(err)));
    };
    const extraction = new Extraction(path.resolve(dir), done);
    // strict: a header that does not parse fails the layer rather than being skipped. The caller
    // gunzipped already: no zstd or brotli guessing (a gzip magic inside is still unpacked, once).
    const parser = new Parser({ strict: true, zstd: false, brotli: false, onReadEntry: (entry) => extraction.entry(entry) });
    parser.on('ignoredEntry', (entry: ReadEntry) => extraction.ignored(entry));
    parser.on('error', (err: unknown) => {
      extraction.fail(err);
    });
    parser.on('end', () => {
      if (extraction.error) return;
      try {
        done(null, extraction.finish());
      } catch (err) {
        done(err);
      }
    });
    // The parser may throw on input it cannot follow: inside a stream's event that would be an uncaught exception.
    const feed = (chunk: Buffer | string) => {
      try {
        if (!parser.write(typeof chunk === 'string' ? Buffer.from(chunk) : chunk)) {
          tar.pause();
          parser.once('drain', () => tar.resume());
        }
      } catch (err) {
        extraction.fail(err);
      }
    };
    let ended = false;
    const end = () => {
      ended = true;
      try {
        parser.end();
      } catch (err) {
        extraction.fail(err);
      }
    };
    tar.on('data', feed);
    tar.on('end', end);
    tar.on('error', (err: unknown) => extraction.fail(err));
    tar.on('close', () => {
      if (!ended) extraction.fail(new Error('the layer stream closed before its end'));
    });
  });
}

/** A merge of one extracted layer into the root: the root's side never follows a link. */
class Merge {
  private moves = 0;
  /** Where what the layer deletes from the root goes: inside layerDir, which the caller deletes. */
  private graveyard: string | null = null;
  private graves = 0;

  constructor(
    private readonly root: string,
    private readonly layerDir: string,
    /** Directories of the layer with no entry of their own: merged over a lower one, the lower one's mode stays. */
    private readonly implied: ReadonlySet<string>,
  ) {}

  /** Whether `rel` and each of its parents is a real directory of the root. */
  isRealDir(rel: string): boolean {
    return rel === '' || (this.parentsReal(rel) && lstatSync(this.inRoot(rel), { throwIfNoEntry: false })?.isDirectory() === true);
  }

  /** Whether each parent of `rel` is a real directory of the root (no link, no file on the way). */
  parentsReal(rel: string): boolean {
    for (let next = rel.indexOf('/'); next >= 0; next = rel.indexOf('/', next + 1)) {
      if (lstatSync(this.inRoot(rel.slice(0, next)), { throwIfNoEntry: false })?.isDirectory() !== true) return false;
    }
    return true;
  }

  emptyDir(rel: string): void {
    for (const name of readdirSync(this.inRoot(rel))) this.remove(rel ? `${rel}/${name}` : name);
  }

  /** Takes whatever is at `rel` out of the root, a link as a link. */
  remove(rel: string): void {
    const at = this.inRoot(rel);
    const there = lstatSync(at, { throwIfNoEntry: false });
    if (!there) return;
    // A rename, not a deletion: a big tree costs nothing now and goes with layerDir.
    try {
      renameSync(at, `${this.grave()}/${++this.graves}`);
    } catch {
      rmSync(at, { recursive: true, force: true });
    }
  }

  /** Moves the layer's `rel` (a directory of it, a real directory of the root) into the root, entry by entry. */
  async merge(rel: string): Promise<void> {
    for (const entry of readdirSync(this.inLayer(rel), { withFileTypes: true })) {
      if (rel === '' && this.graveyard === `${this.layerDir}/${entry.name}`) continue;
      const child = rel ? `${rel}/${entry.name}` : entry.name;
      const there = lstatSync(this.inRoot(child), { throwIfNoEntry: false });
      if (there?.isDirectory() && entry.isDirectory()) {
        await this.mergeDir(child, there.mode);
        continue;
      }
      // A lower link or file gives way to the upper entry, as in overlayfs (even a link to a directory, to an upper directory).
      if (there) this.remove(child);
      this.move(child);
      if (++this.moves % MOVES_PER_TURN === 0) await turn();
    }
  }

  /** Links `rel` to the root's `target` if that is a regular file and neither path passes a link. */
  link(rel: string, target: string): void {
    if (target === rel || target.startsWith(`${rel}/`)) return;
    if (!this.parentsReal(rel) || !this.parentsReal(target)) return;
    if (!lstatSync(this.inRoot(target), { throwIfNoEntry: false })?.isFile()) return;
    this.remove(rel);
    try {
      linkSync(this.inRoot(target), this.inRoot(rel));
    } catch (err) {
      // A file linked more often than the filesystem allows: left out, as a layer's own would be.
      if (errorCode(err) !== 'EMLINK') throw err;
    }
  }

  private async mergeDir(rel: string, lowerMode: number): Promise<void> {
    const at = this.inRoot(rel);
    const upperMode = lstatSync(this.inLayer(rel)).mode & KEPT_MODE;
    // Root needs no write bit to fill a directory; any other runner does.
    if ((lowerMode & 0o700) !== 0o700) chmodSync(at, (lowerMode & KEPT_MODE) | 0o700);
    await this.merge(rel);
    chmodSync(at, this.implied.has(rel) ? lowerMode & KEPT_MODE : upperMode);
  }

  private move(rel: string): void {
    const from = this.inLayer(rel);
    const to = this.inRoot(rel);
    try {
      renameSync(from, to);
    } catch (err) {
      // Moving a directory rewrites its `..`: without root that takes its write bit.
      const there = errorCode(err) === 'EACCES' ? lstatSync(from) : null;
      if (!there?.isDirectory() || (there.mode & 0o200) !== 0) throw err;
      chmodSync(from, there.mode | 0o200);
      renameSync(from, to);
      chmodSync(to, there.mode & 0o7777);
    }
  }

  private grave(): string {
    if (this.graveyard) return this.graveyard;
    for (let n = 0; ; n += 1) {
      const candidate = `${this.layerDir}/.sluice-removed-${process.pid}-${n}`;
      try {
        mkdirSync(candidate, 0o700);
        this.graveyard = candidate;
        return candidate;
      } catch (err) {
        if (errorCode(err) !== 'EEXIST') throw err;
      }
    }
  }

  private inRoot(rel: string): string {
    return rel ? `${this.root}/${rel}` : this.root;
  }

  private inLayer(rel: string): string {
    return rel ? `${this.layerDir}/${rel}` : this.layerDir;
  }
}

/**
 * Merges `layerDir`, which extractLayer wrote `layer` into, over `root`, the layers below it
 * merged so far, on the same filesystem. In order: opaque directories lose their lower contents,
 * whiteouts delete, the layer's entries move in (replacing what is there; two directories merge,
 * and the upper's mode wins unless the layer only implied it), and hard links to lower files are
 * made. Nothing of the root is followed when it is a link. `layerDir` is left with whatever did
 * not move and what the layer deleted from the root: the caller deletes it.
 */
export async function applyLayer(root: string, layerDir: string, layer: ExtractedLayer): Promise<void> {
  const merge = new Merge(path.resolve(root), path.resolve(layerDir), new Set(layer.impliedDirs));
  // Cleaned again: a layer record may have come from anywhere.
  for (const raw of layer.opaqueDirs) {
    const rel = cleanPath(raw);
    if (rel !== null && merge.isRealDir(rel)) merge.emptyDir(rel);
  }
  for (const raw of layer.whiteouts) {
    const rel = cleanPath(raw);
    if (rel && merge.parentsReal(rel)) merge.remove(rel);
  }
  await merge.merge('');
  for (const { path: raw, target: rawTarget } of layer.pendingLinks) {
    const rel = cleanPath(raw);
    const target = cleanPath(rawTarget);
    if (rel && target) merge.link(rel, target);
  }
}

/**
 * Makes each of `points.dirs` a real directory and each of `points.files` a real regular file
 * under `root`, every parent a real directory: a link or anything else in the way is deleted
 * (a link as a link) and replaced. What is made is 0o755 or an empty 0o644 file; what already
 * is right stays as it is, contents and mode.
 */
export async function prepareMountPoints(root: string, points: { dirs: string[]; files: string[] }): Promise<void> {
  const top = path.resolve(root);
  for (const [list, kind] of [
    [points.dirs, 'dir'],
    [points.files, 'file'],
  ] as const) {
    for (const raw of list) {
      const rel = cleanPath(raw);
      if (!rel) throw new Error(`not a path inside the image: ${raw}`);
      const parts = rel.split('/');
      let at = top;
      for (const [i, part] of parts.entries()) {
        at = `${at}/${part}`;
        const want = i === parts.length - 1 ? kind : 'dir';
        const there = await lstat(at).catch((err: unknown) => {
          if (errorCode(err) === 'ENOENT') return null;
          throw err;
        });
        if (there && (want === 'dir' ? there.isDirectory() : there.isFile())) continue;
        if (there) await rm(at, { recursive: true, force: true });
        if (want === 'dir') {
          await mkdir(at);
          await chmod(at, 0o755);
        } else {
          const file = await open(at, NEW_FILE, 0o644);
          await file.chmod(0o644).finally(() => file.close());
        }
      }
    }
  }
}

/** Errors that say the file is not one to read: missing, a link, not under directories. */
const UNREADABLE = new Set(['ENOENT', 'ELOOP', 'ENOTDIR', 'ENXIO', 'EACCES']);

/**
 * The first `maxBytes` of the image's file `rel` (as UTF-8), or null unless it is a regular file
 * under real directories: a hostile image's `etc/passwd` may be a link to the host's /etc/shadow.
 */
export async function readRootFile(root: string, rel: string, maxBytes: number): Promise<string | null> {
  const clean = cleanPath(rel);
  if (!clean) return null;
  const top = path.resolve(root);
  const parts = clean.split('/');
  let at = top;
  for (const part of parts.slice(0, -1)) {
    at = `${at}/${part}`;
    const there = await lstat(at).catch(() => null);
    if (!there?.isDirectory()) return null;
  }
  // O_NOFOLLOW: a link at the name fails with ELOOP; O_NONBLOCK: a FIFO would not hang the open.
  const file = await open(`${top}/${clean}`, O_RDONLY | O_NOFOLLOW | O_NONBLOCK).catch((err: unknown) => {
    if (UNREADABLE.has(errorCode(err) ?? '')) return null;
    throw err;
  });
  if (!file) return null;
  try {
    const info = await file.stat();
    if (!info.isFile()) return null;
    return (await readUpTo(file, Math.max(0, Math.min(maxBytes, info.size)))).toString('utf8');
  } finally {
    await file.close();
  }
}
