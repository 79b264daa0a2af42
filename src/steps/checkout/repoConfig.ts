/**
 * Reading `sluice.yml` from a checkout, and parsing it, for the `readRepoConfig` activity.
 *
 * Parsing happens here, in activity code, not in the workflow: the workflow receives the
 * validated settings (or why there are none) as the activity's result, which its history
 * keeps, so a change to the parser or to the yaml and zod libraries can never change a
 * decision on replay. The parser itself is pure and lives in core/sluiceYml.ts.
 *
 * The tree is untrusted: the file is opened without following a symbolic link (a link to the
 * worker's secret key would otherwise be read and shown back in an error), must be a regular
 * file (a FIFO would block the read), and is size-capped; so are the settings it expands to.
 */
import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { parseSluiceYml } from '../../core/sluiceYml';
import type { RepoConfigResult } from '../../core/profiles';
import { readUpTo } from '../files';

export const REPO_CONFIG_FILE = 'sluice.yml';
export const MAX_REPO_CONFIG_BYTES = 64 * 1024;
/**
 * The parsed settings travel through Temporal (the activity's result, kept in the history),
 * whose payloads are limited to a few MiB; YAML aliases can make 64 KiB of text expand far
 * beyond that. This bound keeps the result well inside the limit.
 */
export const MAX_REPO_CONFIG_JSON_BYTES = 512 * 1024;

/** The repository's sluice.yml, parsed and validated: `{ config: null }` when it has none. */
export async function readRepoConfig(workdir: string): Promise<RepoConfigResult> {
  const read = await readRepoConfigText(workdir);
  if ('error' in read) return read;
  if (read.text === null) return { config: null };
  const parsed = parseSluiceYml(read.text);
  if (!parsed.ok) return { error: parsed.error };
  const size = Buffer.byteLength(JSON.stringify(parsed.config));
  if (size > MAX_REPO_CONFIG_JSON_BYTES) {
    return { error: `${REPO_CONFIG_FILE} expands to more than ${MAX_REPO_CONFIG_JSON_BYTES / 1024} KiB of settings (${size} bytes; YAML aliases?)` };
  }
  return { config: parsed.config };
}

/** The text of sluice.yml at the root of `workdir`; `{ text: null }` when there is none. */
export async function readRepoConfigText(workdir: string): Promise<{ text: string | null } | { error: string }> {
  let handle;
  try {
    handle = await open(join(workdir, REPO_CONFIG_FILE), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { text: null };
    if (code === 'ELOOP') return { error: `${REPO_CONFIG_FILE} is a symbolic link; Sluice reads only a regular file` };
    return { error: `could not read ${REPO_CONFIG_FILE}: ${code ?? (err as Error).message}` };
  }
  try {
    const info = await handle.stat();
    if (!info.isFile()) return { error: `${REPO_CONFIG_FILE} is not a regular file` };
    if (info.size > MAX_REPO_CONFIG_BYTES) {
      return { error: `${REPO_CONFIG_FILE} is larger than ${MAX_REPO_CONFIG_BYTES / 1024} KiB (${info.size} bytes)` };
    }
    // Read at most one byte past the cap, in case the file grew since stat.
    const bytes = await readUpTo(handle, MAX_REPO_CONFIG_BYTES + 1);
    if (bytes.length > MAX_REPO_CONFIG_BYTES) return { error: `${REPO_CONFIG_FILE} is larger than ${MAX_REPO_CONFIG_BYTES / 1024} KiB` };
    try {
      const text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes);
      return { text };
    } catch {
      return { error: `${REPO_CONFIG_FILE} is not UTF-8 text` };
    }
  } finally {
    await handle.close();
  }
}
