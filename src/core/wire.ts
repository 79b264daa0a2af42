/**
 * Values as JSON and back, for calls that cross a process boundary (a token runner's build
 * records, api/runnerApi): what JSON has no form for (Date, Map, Set) is tagged on the way out
 * and rebuilt on the way in. Plain objects with a key starting with `$` are not expected.
 */
type Tagged = { $date: string } | { $map: [unknown, unknown][] } | { $set: unknown[] } | { $undefined: true };

export function toWire(value: unknown): unknown {
  if (value instanceof Date) return { $date: value.toISOString() } satisfies Tagged;
  if (value instanceof Map) return { $map: [...value].map(([k, v]) => [toWire(k), toWire(v)]) } satisfies Tagged;
  if (value instanceof Set) return { $set: [...value].map(toWire) } satisfies Tagged;
  if (value === undefined) return { $undefined: true } satisfies Tagged;
  if (Array.isArray(value)) return value.map(toWire);
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined).map(([k, v]) => [k, toWire(v)]));
  return value;
}

export function fromWire(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(fromWire);
  if (value === null || typeof value !== 'object') return value;
  const o = value as Record<string, unknown>;
  if (typeof o.$date === 'string') return new Date(o.$date);
  if (Array.isArray(o.$map)) return new Map((o.$map as [unknown, unknown][]).map(([k, v]) => [fromWire(k), fromWire(v)]));
  if (Array.isArray(o.$set)) return new Set(o.$set.map(fromWire));
  if (o.$undefined === true) return undefined;
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, fromWire(v)]));
}
