// `npm run start:runner` (`node dist/runner/main.js`): a runner process, which checks
// repositories out and runs their test files. Start as many as you like, on as many machines;
// SLUICE_EXTRA_BUILD_QUEUES names build queues it serves besides SLUICE_BUILD_QUEUE.
//
// With SLUICE_RUNNER_TOKEN it holds no keys: it talks only to the API at SLUICE_BASE_URL
// (runner/token). Otherwise it uses PostgreSQL and Temporal directly; it runs no workflow code,
// so it only waits for Temporal; the api and workers register search attributes.
import { loadConfig } from '../config';
import { startRoleMetrics } from '../temporal/metrics';
import { exitOnSignals, prepareTemporal } from '../temporal/prepare';
import { runRunner } from './run';
import { runTokenRunner } from './token/run';

async function main(): Promise<void> {
  const config = loadConfig(process.env, 'runner');
  const extra = (process.env.SLUICE_EXTRA_BUILD_QUEUES ?? '').split(',').map((q) => q.trim()).filter(Boolean);
  const log = (line: string) => console.log(`sluice runner: ${line}`);
  // Before any Temporal worker (a keyed runner's SDK metrics join /metrics); a token runner runs none.
  const metrics = await startRoleMetrics(config, { temporalSdk: !config.runnerToken });
  if (metrics) log(`metrics at ${metrics.url}`);

  const signals = exitOnSignals();

  const queues = [config.buildQueue, ...extra].join(', ');
  if (config.runnerToken) {
    const runner = await runTokenRunner({ ...config, runnerToken: config.runnerToken }, { buildQueues: extra });
    signals.started(runner);
    log(`${runner.name} serving ${queues} through the API at ${config.baseUrl}, with a runner token and no keys`);
    return;
  }
  await prepareTemporal(config, { searchAttributes: false, log });
  const runner = await runRunner(config, { buildQueues: extra });
  signals.started(runner);
  log(`${runner.name} serving ${queues}`);
}

main().catch((err) => {
  console.error(`sluice runner: ${err instanceof Error ? err.message : err}`);
  process.exit(1);
});
