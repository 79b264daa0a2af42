/**
 * Finding the `crane` executable a runner pulls builds' images with (go-containerregistry's CLI,
 * steps/image/registry.ts): the configured path (SLUICE_CRANE), else `crane` on PATH, else the
 * copy `.ci/run` builds into Sluice's cache (`$SLUICE_CACHE_DIR/bin`, default ~/.cache/sluice/bin),
 * looked for as the Temporal CLI is (temporal/cli.ts). Null when there is none: a build with an
 * image then fails saying so; builds without one do not care.
 */
import os from 'node:os';
import path from 'node:path';
import { cacheDir, isExecutable, searchPath } from '../temporal/cli';

export function findCrane(configured: string | undefined, env: NodeJS.ProcessEnv = process.env, homeDir: string = os.homedir()): string | null {
  if (configured) return configured;
  const cached = path.join(cacheDir(env, homeDir), 'bin', 'crane');
  return searchPath('crane', { env, homeDir, isExecutable }) ?? (isExecutable(cached) ? cached : null);
}
