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

/** A task of the sweep: what it does, in words for the warning, and the doing. */
export type SweepTask = [what: string, run: () => Promise<unknown>];

/** Sweeps now and every SWEEP_EVERY_MS; returns what stops it. */
export function startSweeps(config: Config, records: BuildRecords, more: SweepTask[] = []): () => void {
  const trees = treeDeps(config, records);
  const local = config.cacheLocal ?? { dir: DEFAULT_CACHE_LOCAL_DIR, maxBytes: DEFAULT_CACHE_LOCAL_MAX_BYTES };
  const tasks: SweepTask[] = [
    ...more,
    ['sweeping old checkouts', () => sweepTrees(trees)],
    ['sweeping old local cache copies', () => sweepLocalCache({ records, local })],
  ];
  const sweep = () => Promise.all(tasks.map(([what, run]) => run().catch((err: unknown) => console.warn(`sluice runner: ${what} failed: ${(err as Error).message}`))));
  void sweep();
  const sweeper = setInterval(sweep, SWEEP_EVERY_MS);
  sweeper.unref();
  return () => clearInterval(sweeper);
}
