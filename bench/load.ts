/** Load loops and their latencies, for the parts that put load on Sluice (events, history). */

export function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

export interface Load {
  /** Calls per second over the whole run. */
  rate: number;
  latencies: number[];
}

/** `total` calls from `clients` concurrent loops, each waiting for its answer before the next. */
export async function closedLoop(total: number, clients: number, call: (i: number) => Promise<unknown>): Promise<Load> {
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async () => {
      for (let i = next++; i < total; i = next++) {
        const t0 = performance.now();
        await call(i);
        latencies.push(performance.now() - t0);
      }
    }),
  );
  return { rate: total / ((performance.now() - started) / 1000), latencies };
}

/** Calls from `clients` concurrent loops while `going()` holds, at most `max` of them. */
export async function loopWhile(max: number, clients: number, going: () => boolean, call: (i: number) => Promise<unknown>): Promise<Load> {
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async () => {
      for (let i = next++; i < max && going(); i = next++) {
        const t0 = performance.now();
        await call(i);
        latencies.push(performance.now() - t0);
      }
    }),
  );
  return { rate: latencies.length / ((performance.now() - started) / 1000), latencies };
}

/** `total` calls started `perSecond` a second whatever the answers (open loop). */
export async function openLoop(total: number, perSecond: number, call: (i: number) => Promise<unknown>): Promise<Load> {
  const latencies: number[] = [];
  const started = performance.now();
  const calls: Promise<void>[] = [];
  for (let i = 0; i < total; i++) {
    const due = started + (i * 1000) / perSecond;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const t0 = performance.now();
    calls.push(call(i).then(() => void latencies.push(performance.now() - t0)));
  }
  await Promise.all(calls);
  return { rate: total / ((performance.now() - started) / 1000), latencies };
}
