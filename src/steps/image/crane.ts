/**
 * Finding the `crane` executable a runner pulls images with (go-containerregistry's CLI): the
 * configured path (SLUICE_CRANE), else `crane` on PATH, else the copy `.ci/run` and `npm start`
 * build into Sluice's cache (`$SLUICE_CACHE_DIR/bin`, default ~/.cache/sluice/bin). Null when
 * there is none: a build with an image then fails saying so; builds without one do not care.
 */
import { accessSync, constants, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** The module `go install` builds it from. */
export const CRANE_MODULE = 'github.com/google/go-containerregistry/cmd/crane@v0.22.1';

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

export function findCrane(configured: string | undefined, env: NodeJS.ProcessEnv = process.env, homeDir: string = os.homedir()): string | null {
  if (configured) return configured;
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (dir && isExecutable(path.join(dir, 'crane'))) return path.join(dir, 'crane');
  }
  const cached = path.join(env.SLUICE_CACHE_DIR || path.join(homeDir, '.cache', 'sluice'), 'bin', 'crane');
  return isExecutable(cached) ? cached : null;
}
