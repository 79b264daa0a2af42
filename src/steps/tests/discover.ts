/**
 * Finding a suite's tests: the files of the checked-out tree that match its `test_pattern`.
 * The tree is untrusted (anyone who can push chooses its contents), so the pattern is kept
 * inside the repository and symlinks are never a way out of it.
 */
import { lstat, realpath } from 'node:fs/promises';
import { isAbsolute, join, relative, sep } from 'node:path';
import { matchFiles } from '../files';

/** Thrown for a pattern we refuse to glob with; the message says why. */
export class InvalidPatternError extends Error {
  override readonly name = 'InvalidPatternError';
}

// `..` as a whole path segment, including inside brace alternatives like `{a,..}/x`.
// (`{1..9}` ranges are fine: there the dots sit between two other characters.)
const PARENT_SEGMENT = /(^|[/\\{,])\.\.($|[/\\},])/;

/** Why `pattern` is not acceptable as a test pattern, or null when it is. */
export function checkTestPattern(pattern: string): string | null {
  if (pattern.trim() === '') return 'the test pattern is empty';
  if (isAbsolute(pattern) || pattern.startsWith('\\') || /^[a-zA-Z]:/.test(pattern) || pattern.startsWith('~')) {
    return `the test pattern must be relative to the repository root: ${JSON.stringify(pattern)}`;
  }
  if (PARENT_SEGMENT.test(pattern)) return `the test pattern must not contain '..': ${JSON.stringify(pattern)}`;
  if (pattern.includes('\0')) return 'the test pattern contains a NUL byte';
  return null;
}

function isInside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel !== '' && !rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel);
}

function isGitPath(rel: string): boolean {
  return rel.split('/').includes('.git');
}

/**
 * Repository-relative paths (forward slashes) of the regular files matching the glob
 * `pattern`, sorted by code unit so the order is the same on every machine. Never looks inside
 * `.git`. Symlinks are skipped altogether, files and directories alike: following them could
 * leave the tree (or crawl the whole disk through a link to `/`), and a test that is a link
 * is rare enough not to be worth that risk.
 */
export async function discoverTests(workdir: string, pattern: string): Promise<string[]> {
  const problem = checkTestPattern(pattern);
  if (problem) throw new InvalidPatternError(problem);

  const root = await realpath(workdir);
  const matches = await matchFiles(root, pattern);

  // Defence in depth, should the glob library ever report a link: the real path must be a
  // regular file inside the tree and outside .git.
  const accepted: string[] = [];
  for (const rel of matches) {
    if (isGitPath(rel)) continue;
    const info = await lstat(join(root, rel)).catch(() => null);
    if (!info?.isFile()) continue; // a link, a directory, or gone meanwhile
    const resolved = await realpath(join(root, rel)).catch(() => null);
    if (!resolved || !isInside(root, resolved)) continue; // reached through a linked directory
    if (isGitPath(relative(root, resolved).split(sep).join('/'))) continue;
    accepted.push(rel);
  }
  return accepted.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}
