import type { TriggerEvent } from './types';

/**
 * The trigger a rebuild replays: the session's own, at the commit it built (or the head it was
 * asked for, if it never got as far as a checkout), forced (and with `full`, running every test
 * file where its profile would select the affected ones) (an "already built" commit builds
 * again), at the tail of the queue, saying which session it rebuilds; with the digests its
 * images resolved to, so it runs the same bytes (none: each image is resolved again).
 */
export function rebuildTrigger(original: TriggerEvent, commitId: string | null, rebuildOf: number, imageDigests: Record<string, string> = {}, full = false): TriggerEvent {
  const trigger: TriggerEvent = { ...original };
  delete trigger.imageDigests;
  return {
    ...trigger,
    head: commitId ?? original.head,
    force: true,
    queuePosition: 'tail',
    rebuildOf,
    ...(Object.keys(imageDigests).length > 0 ? { imageDigests } : {}),
    // Every test file, over the profile's selection of affected ones (issue 40).
    ...(full ? { full: true } : {}),
  };
}
