/** Jest globalTeardown of the `e2e` project: drops the database, stops Temporal, removes the bundle. */
import { HANDLES_KEY, teardownHandles, type E2eHandles } from './globalSetup';

export default async function globalTeardown(): Promise<void> {
  const handles = (globalThis as Record<string, unknown>)[HANDLES_KEY] as E2eHandles | undefined;
  if (handles) await teardownHandles(handles);
}
