import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ProviderAdapter, ProviderInput, ProviderResult, ProviderTrigger } from '../../../src/providers/types';

/** Shared by the provider tests: fixtures and one-line assertions on a ProviderResult. */

const FIXTURES = join(__dirname, '../../fixtures/providers');

/** A fresh copy of `test/fixtures/providers/<provider>/<name>.json`, free to mutate. */
export function fixture(provider: string, name: string): Record<string, unknown> {
  return JSON.parse(readFileSync(join(FIXTURES, provider, `${name}.json`), 'utf8')) as Record<string, unknown>;
}

export function run(
  adapter: ProviderAdapter,
  headers: Record<string, string | undefined>,
  body: unknown,
  query: ProviderInput['query'] = {},
): ProviderResult {
  return adapter.parse({ headers, body, query });
}

export function triggersOf(result: ProviderResult): ProviderTrigger[] {
  if (!result.ok) throw new Error(`expected triggers, got ${result.status} ${result.field}: ${result.message}`);
  if ('ignore' in result) throw new Error(`expected triggers, got ignore: ${result.ignore}`);
  return result.triggers;
}

/** The one trigger of a result. */
export function triggerOf(result: ProviderResult): ProviderTrigger {
  const triggers = triggersOf(result);
  expect(triggers).toHaveLength(1);
  return triggers[0]!;
}

export function ignoredBy(result: ProviderResult): string {
  if (!result.ok || !('ignore' in result)) throw new Error(`expected ignore, got ${JSON.stringify(result)}`);
  return result.ignore;
}

export function problemOf(result: ProviderResult, status: 400 | 422): { field: string; message: string } {
  if (result.ok) throw new Error(`expected ${status}, got ${JSON.stringify(result)}`);
  expect(result.status).toBe(status);
  expect(result.message).not.toBe('');
  return { field: result.field, message: result.message };
}

/** Sets (undefined: deletes) the value at a dotted path (`a.b.0.c`) of a fixture. */
export function setPath(obj: Record<string, unknown>, path: string, value: unknown): Record<string, unknown> {
  const keys = path.split('.');
  let cur: Record<string, unknown> = obj;
  for (const key of keys.slice(0, -1)) cur = cur[key] as Record<string, unknown>;
  const last = keys.at(-1)!;
  if (value === undefined) delete cur[last];
  else cur[last] = value;
  return obj;
}

export const ZERO = '0000000000000000000000000000000000000000';
