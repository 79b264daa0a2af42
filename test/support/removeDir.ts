/**
 * Removes a directory a Sluice of the tests wrote in (a workspace, a data directory): caches
 * restored by overlay mounts (src/steps/cache/overlay.ts) in trees no sweep removed yet are
 * detached first, or the removal would fail with EBUSY and leave the mounts behind.
 */
import { rm } from 'node:fs/promises';
import { unmountUnder } from '../../src/steps/cache/overlay';

export async function removeDir(dir: string): Promise<void> {
  await unmountUnder([dir]);
  await rm(dir, { recursive: true, force: true });
}
