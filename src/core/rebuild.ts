import type { TriggerEvent } from './types';

/**
 * The trigger a rebuild replays: the session's own, at the commit it built (or the head it was
 * asked for, if it never got as far as a checkout), forced (an "already built" commit builds
 * again), at the tail of the queue, saying which session it rebuilds.
 */
export function rebuildTrigger(original: TriggerEvent, commitId: string | null, rebuildOf: number): TriggerEvent {
  return { ...original, head: commitId ?? original.head, force: true, queuePosition: 'tail', rebuildOf };
}
