/**
 * Jest globalSetup of the `e2e` project: what every e2e test file shares, made once per run.
 * - one Temporal dev server (in-memory, headless)          → SLUICE_TEST_TEMPORAL_ADDRESS
 * - the workflow code bundled once (webpack is slow)        → SLUICE_TEST_WORKFLOW_BUNDLE
 *   (Worker.create({ workflowBundle: { codePath } }))
 * - one migrated PostgreSQL database                        → SLUICE_TEST_DATABASE_URL
 * Test workers are forked after this runs, so they inherit these variables.
 * globalTeardown.ts undoes all of it through the handles left on globalThis.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { startDevServer, type DevServer } from '../../src/temporal/devServer';
import { createTestDatabase, type TestDatabase } from './db';

export interface E2eHandles {
  server?: DevServer;
  database?: TestDatabase;
  tempDir?: string;
}

export const HANDLES_KEY = '__sluiceE2e';

export default async function globalSetup(): Promise<void> {
  const started = Date.now();
  const handles: E2eHandles = {};
  (globalThis as Record<string, unknown>)[HANDLES_KEY] = handles;

  const tempDir = await mkdtemp(path.join(os.tmpdir(), 'sluice-e2e-'));
  handles.tempDir = tempDir;
  // The three are independent; start them together and clean up whatever did start on failure.
  const results = await Promise.allSettled([
    startDevServer({ headless: true }).then((server) => (handles.server = server)),
    createTestDatabase('sluice_e2e').then((database) => (handles.database = database)),
    bundle(path.join(tempDir, 'workflow-bundle.js')),
  ]);
  const failures = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failures.length > 0) {
    await teardownHandles(handles).catch(() => undefined); // the setup error is the one to show
    throw new AggregateError(
      failures.map((f) => f.reason),
      `e2e setup failed: ${failures.map((f) => (f.reason as Error).message).join('\n')}`,
    );
  }

  process.env.SLUICE_TEST_TEMPORAL_ADDRESS = handles.server!.address;
  process.env.SLUICE_TEST_DATABASE_URL = handles.database!.url;
  process.env.SLUICE_TEST_WORKFLOW_BUNDLE = path.join(tempDir, 'workflow-bundle.js');
  process.stderr.write(`\ne2e setup ready in ${Date.now() - started} ms (Temporal ${handles.server!.address})\n`);
}

async function bundle(file: string): Promise<void> {
  const { code } = await bundleWorkflowCode({
    workflowsPath: require.resolve('../../src/workflows'),
    logger: new DefaultLogger('WARN'),
  });
  await writeFile(file, code);
}

/** Stops and removes everything in `handles`; shared with globalTeardown. */
export async function teardownHandles(handles: E2eHandles): Promise<void> {
  const results = await Promise.allSettled([
    handles.database?.drop(),
    handles.server?.stop(),
    handles.tempDir ? rm(handles.tempDir, { recursive: true, force: true }) : undefined,
  ]);
  const failures = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failures.length > 0) {
    throw new AggregateError(failures.map((f) => f.reason), 'e2e teardown failed');
  }
}
