/**
 * A cache entry's key, and the paths it is made of. The key hashes the runner's platform and
 * arch, the sorted save paths, and each key file's path and content, so an entry is restored
 * only where it fits: same kind of machine, same paths, same lock file. The family is the key
 * without the key files: the entries a fallback may restore (another lock file, same shape).
 *
 * Key files are read inside the checkout only: no absolute path, no `..`, and no symbolic link
 * followed on the way (a link is hashed as a link, by its text), so a checkout cannot make the
 * key depend on a file outside it.
 */
import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { lstat, open, readlink } from 'node:fs/promises';
import path from 'node:path';

/** Where a save path lives: the checkout (`tree`) or the build's home (`home`, written `~/…`). */
export type CacheRoot = 'tree' | 'home';

export interface CachePath {
  root: CacheRoot;
  /** Relative to its root, `/`-separated, normalized: no `.`, `..` or empty segment. */
  rel: string;
  /** How the settings wrote it, for notes. */
  written: string;
}

/** Bumped when what a key means changes, so old entries stop matching. */
const KEY_VERSION = 'sluice-cache-1';

/** `written` as a path of its root; throws, saying why, for one that could leave it. */
export function parseCachePath(written: string, allowHome: boolean): CachePath {
  const home = allowHome && written.startsWith('~/');
  const rest = home ? written.slice(2) : written;
  const segments = rest.split('/').filter((s) => s !== '' && s !== '.');
  // eslint-disable-next-line no-control-regex
  if (rest.startsWith('/') || rest.startsWith('~') || /[\x00-\x1f\x7f]/.test(rest)) throw new Error(`cache path ${JSON.stringify(written)} must be relative`);
  if (segments.length === 0) throw new Error(`cache path ${JSON.stringify(written)} must name something inside its directory`);
  if (segments.includes('..')) throw new Error(`cache path ${JSON.stringify(written)} must not contain '..'`);
  if (!home && segments[0] === '.git') throw new Error(`cache path ${JSON.stringify(written)} must not be inside .git`);
  return { root: home ? 'home' : 'tree', rel: segments.join('/'), written };
}

const nameOf = (p: CachePath) => `${p.root}/${p.rel}`;

/** The save paths, parsed, in their order, once each, checked not to overlap (one inside another would be restored twice). */
export function parseSavePaths(written: readonly string[]): CachePath[] {
  const paths = written.map((w) => parseCachePath(w, true)).filter((p, i, all) => all.findIndex((q) => nameOf(q) === nameOf(p)) === i);
  const names = paths.map(nameOf).sort();
  for (let i = 1; i < names.length; i += 1) {
    if (names[i]!.startsWith(`${names[i - 1]}/`)) throw new Error(`cache save paths overlap: ${names[i - 1]} holds ${names[i]}`);
  }
  return paths;
}

export interface KeyInput {
  platform: string;
  arch: string;
  savePaths: readonly CachePath[];
  /** Each key file's normalized path, with what it holds: a content hash, `missing`, or what is there instead. */
  keyFiles: readonly { rel: string; content: string }[];
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** Entries a fallback may restore: same platform, arch and save paths. */
export function cacheFamily(input: Omit<KeyInput, 'keyFiles'>): string {
  return sha256([KEY_VERSION, `${input.platform} ${input.arch}`, ...input.savePaths.map(nameOf).sort()].join('\n'));
}

export function cacheKey(input: KeyInput): string {
  const files = [...input.keyFiles].sort((a, b) => (a.rel < b.rel ? -1 : a.rel > b.rel ? 1 : 0));
  return sha256([cacheFamily(input), ...files.map((f) => `${JSON.stringify(f.rel)} ${f.content}`)].join('\n'));
}

/**
 * What a key file holds, read from `tree` without following any link: `sha256:<hex>` of a
 * regular file, `missing`, `symlink:<where>-><its text>` (the first link on the way), or
 * `other` (a directory, a FIFO, ...).
 */
export async function keyFileContent(tree: string, rel: string): Promise<string> {
  const segments = rel.split('/');
  let at = tree;
  for (const [i, segment] of segments.entries()) {
    at = path.join(at, segment);
    const info = await lstat(at).catch(() => null);
    if (!info) return 'missing';
    if (info.isSymbolicLink()) return `symlink:${segments.slice(0, i + 1).join('/')}->${await readlink(at).catch(() => '')}`;
    if (i < segments.length - 1 && !info.isDirectory()) return 'missing';
  }
  // O_NOFOLLOW and O_NONBLOCK: a link or a FIFO swapped in meanwhile is not followed or waited on.
  const file = await open(at, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK).catch(() => null);
  if (!file) return 'missing';
  try {
    if (!(await file.stat()).isFile()) return 'other';
    const hash = createHash('sha256');
    for await (const chunk of file.createReadStream({ autoClose: false })) hash.update(chunk as Buffer);
    return `sha256:${hash.digest('hex')}`;
  } finally {
    await file.close();
  }
}

/** The key and family of a checkout's cache settings on this runner. */
export async function checkoutKey(
  settings: { key_paths: readonly string[]; save_paths: readonly string[] },
  tree: string,
  platform: string = process.platform,
  arch: string = process.arch,
): Promise<{ key: string; family: string; savePaths: CachePath[] }> {
  const savePaths = parseSavePaths(settings.save_paths);
  const rels = [...new Set(settings.key_paths.map((k) => parseCachePath(k, false).rel))];
  const keyFiles = await Promise.all(rels.map(async (rel) => ({ rel, content: await keyFileContent(tree, rel) })));
  const input = { platform, arch, savePaths, keyFiles };
  return { key: cacheKey(input), family: cacheFamily(input), savePaths };
}
