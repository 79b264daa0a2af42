// `npm run start:worker`: a worker process on its own, for production and scale-out.
import { loadConfig } from '../config';
import { runWorker } from './run';

async function main(): Promise<void> {
  const config = loadConfig();
  const extra = (process.env.SLUICE_EXTRA_BUILD_QUEUES ?? '').split(',').map((q) => q.trim()).filter(Boolean);
  const worker = await runWorker(config, { buildQueues: extra });
  console.log(`sluice worker: serving ${config.taskQueue}, ${[config.buildQueue, ...extra].join(', ')} and ${worker.workerQueue}`);
  const stop = () => void worker.shutdown().then(() => process.exit(0));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
