/**
 * Reading `sluice.yml` from a checkout. The tree is untrusted: the file is opened without
 * following a symbolic link (a link to the worker's secret key would otherwise be read and
 * shown back in an error), must be a regular file (a FIFO would block the read), and is
 * size-capped. Parsing is pure and lives in core/sluiceYml.ts.
 */
import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import type { RepoConfigResult } from '../types';

export const REPO_CONFIG_FILE = 'sluice.yml';
export const MAX_REPO_CONFIG_BYTES = 64 * 1024;

export async function readRepoConfigFile(workdir: string): Promise<RepoConfigResult> {
  let handle;
  try {
    handle = await open(join(workdir, REPO_CONFIG_FILE), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { text: null };
    if (code === 'ELOOP') return { text: null, error: `${REPO_CONFIG_FILE} is a symbolic link; Sluice reads only a regular file` };
    return { text: null, error: `could not read ${REPO_CONFIG_FILE}: ${code ?? (err as Error).message}` };
  }
  try {
    const info = await handle.stat();
    if (!info.isFile()) return { text: null, error: `${REPO_CONFIG_FILE} is not a regular file` };
    if (info.size > MAX_REPO_CONFIG_BYTES) {
      return { text: null, error: `${REPO_CONFIG_FILE} is larger than ${MAX_REPO_CONFIG_BYTES / 1024} KiB (${info.size} bytes)` };
    }
    // Read at most one byte past the cap, in case the file grew since stat.
    const buffer = Buffer.alloc(MAX_REPO_CONFIG_BYTES + 1);
    let length = 0;
    while (length < buffer.length) {
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, length);
      if (bytesRead === 0) break;
      length += bytesRead;
    }
    if (length > MAX_REPO_CONFIG_BYTES) return { text: null, error: `${REPO_CONFIG_FILE} is larger than ${MAX_REPO_CONFIG_BYTES / 1024} KiB` };
    try {
      const text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(buffer.subarray(0, length));
      return { text };
    } catch {
      return { text: null, error: `${REPO_CONFIG_FILE} is not UTF-8 text` };
    }
  } finally {
    await handle.close();
  }
}
