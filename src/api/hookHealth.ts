/**
 * When each repository's hooks last arrived, and how many were refused for a signature that
 * did not verify (issue 38: the repository page shows both). Counted in memory on the trigger
 * path and written every few seconds in one statement (db/connections.ts addHookHealth): a burst
 * of a thousand triggers is one write, not a thousand updates of one row. A write that fails
 * (PostgreSQL away) keeps the sums for the next; what a killed process had not written yet is
 * lost, which a health figure can afford.
 */
import type { Pool } from 'pg';
import { addHookHealth } from '../db/connections';

export interface HookHealth {
  /** A hook reached the repository and its signature (if it needs one) verified. */
  arrived(repoId: number): void;
  /** A hook's signature did not verify. */
  refused(repoId: number): void;
  /** Writes what is counted now (tests; and on close). */
  flush(): Promise<void>;
  close(): Promise<void>;
}

interface Sums {
  lastHookAt: Date | null;
  refused: number;
  lastRefusedAt: Date | null;
}

export function hookHealth(pool: Pool, opts: { everyMs?: number; onError?: (err: unknown) => void } = {}): HookHealth {
  let sums = new Map<number, Sums>();
  let writing: Promise<void> = Promise.resolve();
  const of = (repoId: number): Sums => {
    let s = sums.get(repoId);
    if (!s) sums.set(repoId, (s = { lastHookAt: null, refused: 0, lastRefusedAt: null }));
    return s;
  };
  const flush = (): Promise<void> => {
    writing = writing.then(async () => {
      if (sums.size === 0) return;
      const taken = sums;
      sums = new Map();
      try {
        await addHookHealth(pool, [...taken].map(([repoId, s]) => ({ repoId, ...s })));
      } catch (err) {
        // Put them back under what arrived meanwhile.
        for (const [repoId, s] of taken) {
          const now = of(repoId);
          now.refused += s.refused;
          if (s.lastHookAt && (!now.lastHookAt || s.lastHookAt > now.lastHookAt)) now.lastHookAt = s.lastHookAt;
          if (s.lastRefusedAt && (!now.lastRefusedAt || s.lastRefusedAt > now.lastRefusedAt)) now.lastRefusedAt = s.lastRefusedAt;
        }
        opts.onError?.(err);
      }
    });
    return writing;
  };
  const timer = setInterval(() => void flush(), opts.everyMs ?? 5_000);
  timer.unref();
  return {
    arrived: (repoId) => {
      of(repoId).lastHookAt = new Date();
    },
    refused: (repoId) => {
      const s = of(repoId);
      s.refused += 1;
      s.lastRefusedAt = new Date();
    },
    flush,
    close: async () => {
      clearInterval(timer);
      await flush();
    },
  };
}
