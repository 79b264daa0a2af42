/**
 * A cache entry as a file of the store: a gzipped tar (npm's `tar`) of an entry directory,
 * laid out as `tree/<path>` and `home/<path>`.
 *
 * Packing follows no link and keeps only regular files, directories and symbolic links: no
 * hard link (each file is stored whole), no device, FIFO or socket.
 *
 * Unpacking trusts nothing: before a byte is written, `checkEntry` reads every header and
 * refuses the whole archive for one absolute path, `..`, a path through a link, a link whose
 * target (followed through the archive's other links) leaves its top-level root, a hard link to
 * anything but a file stored before it in the same root, or any other kind of file.
 */
import { createWriteStream } from 'node:fs';
import { mkdir, symlink } from 'node:fs/promises';
import path from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { create, extract, list, type ReadEntry } from 'tar';

/** The top-level directories of an entry. */
export const ROOTS = ['tree', 'home'] as const;

/** Fast gzip: entries are mostly packages, packed once and unpacked on every cold runner. */
const GZIP_LEVEL = 1;
/** Links followed, one through another, before a chain counts as hostile. */
const MAX_LINK_HOPS = 40;

/** A linkCache that remembers nothing, so tar never writes a hard link: every file is stored whole. */
class NoLinks extends Map<`${number}:${number}`, string> {
  override get(): undefined {
    return undefined;
  }
}

export class EntryTooBig extends Error {
  override readonly name = 'EntryTooBig';
}

/**
 * Packs `dir`'s `tree/` and `home/` (those of `roots` that exist there) into `out`. Throws
 * EntryTooBig as soon as the archive passes `maxBytes`. Returns the archive's size.
 */
export async function packEntry(dir: string, roots: readonly string[], out: string, maxBytes: number, signal?: AbortSignal): Promise<number> {
  let bytes = 0;
  const count = new Transform({
    transform(chunk: Buffer, _enc, done) {
      bytes += chunk.length;
      if (bytes > maxBytes) done(new EntryTooBig(`the entry is over its limit of ${maxBytes} bytes`));
      else done(null, chunk);
    },
  });
  const tar = create(
    {
      cwd: dir,
      gzip: { level: GZIP_LEVEL },
      portable: true,
      follow: false,
      linkCache: new NoLinks(),
      filter: (_p, stat) => !('isFile' in stat) || stat.isFile() || stat.isDirectory() || stat.isSymbolicLink(),
    },
    [...roots],
  );
  await pipeline(tar, count, createWriteStream(out, { mode: 0o600 }), { signal });
  return bytes;
}

/** A checked archive: its size unpacked, and its symbolic links (path and target), which unpackEntry makes last. */
export type Verdict = { ok: true; unpackedBytes: number; links: [string, string][] } | { ok: false; why: string };

interface Seen {
  type: string;
  linkpath: string;
  index: number;
}

/** An archive path's segments, or why it is not a plain relative path under a root. */
function segmentsOf(raw: string): string[] | string {
  if (raw.startsWith('/')) return 'an absolute path';
  const segments = raw.replace(/\/$/, '').split('/');
  if (segments.includes('..')) return "a path with '..'";
  if (segments.some((s) => s === '' || s === '.')) return 'a path that is not plain';
  if (!(ROOTS as readonly string[]).includes(segments[0]!)) return 'a path outside tree/ and home/';
  return segments;
}

/** Whether the symbolic link at `at` resolves inside its top-level root, following the archive's own links. */
function linkStaysInside(entries: Map<string, Seen>, at: string[], target: string): boolean {
  const stack = at.slice(0, -1);
  let queue = target.split('/');
  if (target.startsWith('/')) return false;
  let hops = 0;
  while (queue.length > 0) {
    const part = queue.shift()!;
    if (part === '' || part === '.') continue;
    if (part === '..') {
      if (stack.length <= 1) return false; // above tree/ or home/
      stack.pop();
      continue;
    }
    stack.push(part);
    const seen = entries.get(stack.join('/'));
    if (seen?.type === 'SymbolicLink') {
      if ((hops += 1) > MAX_LINK_HOPS || seen.linkpath.startsWith('/')) return false;
      stack.pop();
      queue = [...seen.linkpath.split('/'), ...queue];
    }
  }
  return true;
}

const FILE_TYPES = new Set(['File', 'OldFile', 'ContiguousFile']);

/** Reads every header of `file` and says whether unpacking it is safe, and how many bytes it unpacks to. */
export async function checkEntry(file: string, maxUnpackedBytes: number): Promise<Verdict> {
  const entries = new Map<string, Seen>();
  let problem: string | null = null;
  let unpackedBytes = 0;
  const refuse = (why: string) => {
    problem ??= why;
  };
  try {
    await list({
      file,
      strict: true,
      onReadEntry: (entry: ReadEntry) => {
        const raw = entry.path;
        const segments = segmentsOf(raw);
        if (typeof segments === 'string') return refuse(`${segments}: ${raw}`);
        const name = segments.join('/');
        if (entries.has(name)) return refuse(`${name} twice`);
        if (!FILE_TYPES.has(entry.type) && !['Directory', 'SymbolicLink', 'Link'].includes(entry.type)) return refuse(`${name}: a ${entry.type}, not a file, directory or link`);
        for (let i = 1; i < segments.length; i += 1) {
          const parent = entries.get(segments.slice(0, i).join('/'));
          if (parent && parent.type !== 'Directory') return refuse(`${name}: a path through ${segments.slice(0, i).join('/')}, which is not a directory`);
        }
        if (FILE_TYPES.has(entry.type)) unpackedBytes += entry.size ?? 0;
        if (unpackedBytes > maxUnpackedBytes) return refuse(`it unpacks to more than ${maxUnpackedBytes} bytes`);
        entries.set(name, { type: FILE_TYPES.has(entry.type) ? 'File' : entry.type, linkpath: entry.linkpath ?? '', index: entries.size });
      },
    });
  } catch (err) {
    return { ok: false, why: `not a readable archive (${(err as Error).message})` };
  }
  if (problem) return { ok: false, why: problem };
  const links: [string, string][] = [];
  for (const [name, seen] of entries) {
    const at = name.split('/');
    if (seen.type === 'SymbolicLink' && !linkStaysInside(entries, at, seen.linkpath)) {
      return { ok: false, why: `${name}: a symbolic link to ${seen.linkpath}, outside ${at[0]}/` };
    }
    if (seen.type === 'SymbolicLink') links.push([name, seen.linkpath]);
    if (seen.type === 'Link') {
      const target = segmentsOf(seen.linkpath);
      const stored = typeof target === 'string' ? undefined : entries.get(target.join('/'));
      if (typeof target === 'string' || target[0] !== at[0] || stored?.type !== 'File' || stored.index > seen.index) {
        return { ok: false, why: `${name}: a hard link to ${seen.linkpath}, not a file stored before it in ${at[0]}/` };
      }
    }
  }
  return { ok: true, unpackedBytes, links };
}

/**
 * Unpacks an archive `checkEntry` passed into the empty directory `dir`, owned by whoever runs
 * this. Its symbolic links come last, made here: so nothing is ever written through one, and
 * tar's own guard (which refuses a link whose target passes through another link, as an npm
 * workspace's `.bin` links do) keeps guarding files, directories and hard links.
 */
export async function unpackEntry(file: string, dir: string, links: readonly [string, string][]): Promise<void> {
  await extract({ file, cwd: dir, strict: true, preserveOwner: false, unlink: false, filter: (_p, entry) => !('type' in entry) || entry.type !== 'SymbolicLink' });
  for (const [name, target] of links) {
    const at = path.join(dir, name);
    await mkdir(path.dirname(at), { recursive: true, mode: 0o755 });
    await symlink(target, at);
  }
}
