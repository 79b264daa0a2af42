// `npm run start:worker` (`node dist/worker/main.js`): a worker process on its own, for
// production and scale-out. It migrates the database, waits for Temporal and registers Sluice's
// search attributes there (workflow code sets them) before it polls, then says whether
// PostgreSQL and Temporal agree on what is running (temporal/installationCheck.ts).
import { loadConfig } from '../config';
import { migrate } from '../db/migrate';
import { createPool, untilDatabaseAnswers } from '../db/pool';
import { loadWorkflowIds } from '../temporal/ids';
import { reportInstallation } from '../temporal/installationCheck';
import { startRoleMetrics } from '../temporal/metrics';
import { exitOnSignals, prepareTemporal } from '../temporal/prepare';
import { runWorker } from './run';

async function main(): Promise<void> {
  const config = loadConfig(process.env, 'worker');
  const log = (line: string) => console.log(`sluice worker: ${line}`);
  // Before any Temporal worker: the SDK's runtime, installed once, serves its metrics for /metrics.
  const metrics = await startRoleMetrics(config, { temporalSdk: true });
  if (metrics) log(`metrics at ${metrics.url}`);

  const signals = exitOnSignals();

  // Its records need the schema (migrations take a lock: roles may start together); started
  // while PostgreSQL is away, it waits for it.
  const pool = createPool(config.databaseUrl, 1);
  try {
    await untilDatabaseAnswers(
      () => migrate(pool).then(() => undefined),
      new AbortController().signal,
      (err) => log(`waiting for PostgreSQL (${(err as Error).message})`),
    );
    await prepareTemporal(config, { log });
    signals.started(await runWorker(config));
    log(`serving ${config.taskQueue}: workflows, records, deliveries, chat and e-mail`);
    await reportInstallation(config, pool, await loadWorkflowIds(pool), log);
  } finally {
    await pool.end();
  }
}

main().catch((err) => {
  console.error(`sluice worker: ${err instanceof Error ? err.message : err}`);
  process.exit(1);
});
