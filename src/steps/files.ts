/**
 * Reading a checkout's files the way every step does: globs that match files only, follow no
 * link and leave .git out (the test pattern, artifacts), and a file read up to a cap (sluice.yml,
 * JUnit reports, an image's /etc/passwd) so no build can make a step read without end.
 */
import type { FileHandle } from 'node:fs/promises';
import { glob } from 'tinyglobby';

/** The files under `root` that `pattern` matches: files only (a pattern naming `tests` does not mean `tests/**`), no link followed, nothing in .git. */
export function matchFiles(root: string, pattern: string): Promise<string[]> {
  return glob(pattern, { cwd: root, onlyFiles: true, followSymbolicLinks: false, expandDirectories: false, ignore: ['**/.git', '**/.git/**'] });
}

/** Up to `max` bytes of an open file, from its start (fewer where it ends sooner). */
export async function readUpTo(handle: FileHandle, max: number): Promise<Buffer> {
  const buffer = Buffer.alloc(max);
  let length = 0;
  while (length < buffer.length) {
    const { bytesRead } = await handle.read(buffer, length, buffer.length - length, length);
    if (bytesRead === 0) break;
    length += bytesRead;
  }
  return buffer.subarray(0, length);
}
