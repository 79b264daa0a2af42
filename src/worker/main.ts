// `npm run start:worker`: a worker process on its own, for production and scale-out.
import { loadConfig } from '../config';
import { runWorker } from './run';

async function main(): Promise<void> {
  const config = loadConfig();
  const worker = await runWorker(config);
  console.log(`sluice worker: workflows, records, deliveries, chat and e-mail on ${config.taskQueue}`);
  const stop = () => void worker.shutdown().then(() => process.exit(0));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
