/**
 * What every runner tidies every SWEEP_EVERY_MS, keyed or with a token: the checkouts of builds
 * that ended, and local cache copies no entry names any more (evicted, or deleted with their
 * repository, elsewhere); plus whatever else the runner names. A task that fails says so and is
 * tried again at the next sweep.
 */
import { sweepLocalCache } from '../steps/cache';
import { sweepTrees, treeDeps } from '../steps/checkout/tree';
import type { BuildRecords } from '../steps/records';
import { DEFAULT_CACHE_LOCAL_DIR, DEFAULT_CACHE_LOCAL_MAX_BYTES, type Config } from '../config';

const SWEEP_EVERY_MS = 30_000;
/** How long stopping waits for a sweep under way. */
const STOP_WAIT_MS = 10_000;

/** A task of the sweep: what it does, in words for the warning, and the doing. */
export type SweepTask = [what: string, run: () => Promise<unknown>];

/** Sweeps now and every SWEEP_EVERY_MS; returns what stops it, which resolves once a sweep under way is done. */
export function startSweeps(config: Config, records: BuildRecords, more: SweepTask[] = []): () => Promise<void> {
  const trees = treeDeps(config, records);
  const local = config.cacheLocal ?? { dir: DEFAULT_CACHE_LOCAL_DIR, maxBytes: DEFAULT_CACHE_LOCAL_MAX_BYTES };
  const tasks: SweepTask[] = [
    ...more,
    ['sweeping old checkouts', () => sweepTrees(trees)],
    ['sweeping old local cache copies', () => sweepLocalCache({ records, local })],
  ];
  let current: Promise<unknown> = Promise.resolve();
  const sweep = () => {
    current = Promise.all(tasks.map(([what, run]) => run().catch((err: unknown) => console.warn(`sluice runner: ${what} failed: ${(err as Error).message}`))));
  };
  sweep();
  const sweeper = setInterval(sweep, SWEEP_EVERY_MS);
  sweeper.unref();
  return async () => {
    clearInterval(sweeper);
    // Bounded: a sweep waiting on PostgreSQL that is away holds up no shutdown for long.
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([current, new Promise<void>((r) => (timer = setTimeout(r, STOP_WAIT_MS)))]);
    clearTimeout(timer);
  };
}
