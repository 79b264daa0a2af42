import type { TriggerEvent } from './types';

/**
 * The trigger a rebuild replays: the session's own, at the commit it built (or the head it was
 * asked for, if it never got as far as a checkout), forced (an "already built" commit builds
 * again), at the tail of the queue, saying which session it rebuilds; with the digests its
 * images resolved to, so it runs the same bytes (none: each image is resolved again).
 */
export function rebuildTrigger(original: TriggerEvent, commitId: string | null, rebuildOf: number, imageDigests: Record<string, string> = {}): TriggerEvent {
  const trigger: TriggerEvent = { ...original };
  delete trigger.imageDigests;
  return {
    ...trigger,
    head: commitId ?? original.head,
    force: true,
    queuePosition: 'tail',
    rebuildOf,
    ...(Object.keys(imageDigests).length > 0 ? { imageDigests } : {}),
  };
}
