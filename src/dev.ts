/**
 * `npm start`: all of Sluice on one machine, in one process. Keeps its state in a data
 * directory ($SLUICE_DATA_DIR, default ./.data): the secret key, the admin token and the
 * Temporal dev server's database. Creates the PostgreSQL database if need be and migrates it,
 * starts Temporal (unless TEMPORAL_ADDRESS names one), then a worker, a runner and the API.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startApi } from './api/main';
import { checkServices } from './steps/services';
import { DEFAULT_IMAGE_DIR, loadConfig, type Config } from './config';
import { migrate } from './db/migrate';
import { createPool, ensureDatabase } from './db/pool';
import { superviseDevServer, type SupervisedDevServer } from './temporal/devSupervisor';
import { loadWorkflowIds } from './temporal/ids';
import { reportInstallation } from './temporal/installationCheck';
import { startRoleMetrics } from './temporal/metrics';
import { prepareTemporal } from './temporal/prepare';
import { findCrane } from './runner/crane';
import { runRunner } from './runner/run';
import { runWorker } from './worker/run';

const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/sluice';
/** Where the embedded Temporal dev server listens (SLUICE_TEMPORAL_PORT, SLUICE_TEMPORAL_UI_PORT). */
const TEMPORAL_PORT = Number(process.env.SLUICE_TEMPORAL_PORT ?? 7233);
const TEMPORAL_UI_PORT = Number(process.env.SLUICE_TEMPORAL_UI_PORT ?? 8233);
/** How long `npm start` waits for a Temporal server of yours (TEMPORAL_ADDRESS) before it gives up. */
const EXTERNAL_TEMPORAL_WAIT_MS = 15_000;

/** Things to stop on the way out, last started first. */
const running: { name: string; stop: () => Promise<void> }[] = [];

async function main(): Promise<void> {
  const dataDir = path.resolve(process.env.SLUICE_DATA_DIR ?? '.data');
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: process.env.DATABASE_URL ?? DEFAULT_DATABASE_URL };

  if (!env.SLUICE_SECRET_KEY) {
    env.SLUICE_SECRET_KEY = keptSecret(path.join(dataDir, 'secret.key'), () => randomBytes(32).toString('base64')).value;
  }
  let adminTokenWhere = 'SLUICE_ADMIN_TOKEN';
  if (!env.SLUICE_ADMIN_TOKEN) {
    const file = path.join(dataDir, 'admin.token');
    const token = keptSecret(file, () => randomBytes(24).toString('base64url'));
    env.SLUICE_ADMIN_TOKEN = token.value;
    adminTokenWhere = file;
    if (token.created) console.log(`Generated an admin token (shown once, kept in ${file}):\n  ${token.value}\n`);
  }

  await ensureDatabase(env.DATABASE_URL!);
  const pool = createPool(env.DATABASE_URL!, 1);
  try {
    await migrate(pool);
  } finally {
    await pool.end();
  }

  let temporal: SupervisedDevServer | undefined;
  if (!env.TEMPORAL_ADDRESS) {
    console.log('Starting the Temporal dev server...');
    // Kept up: started again on the same data whenever it exits but by our stop (issue 26).
    temporal = await superviseDevServer({
      dataDir,
      port: TEMPORAL_PORT,
      uiPort: TEMPORAL_UI_PORT,
      namespace: env.TEMPORAL_NAMESPACE ?? 'default',
      echoOutput: true,
      ownProcessGroup: true, // stopped last, by us, not by the terminal's Ctrl-C
    }, (line) => console.log(line));
    running.push({ name: 'Temporal', stop: temporal.stop });
    env.TEMPORAL_ADDRESS = temporal.address;
    // Build pages link each build to its workflow there.
    env.SLUICE_TEMPORAL_UI_URL ??= temporal.uiUrl;
  }
  // One machine: receivers often run on it too, so loopback is open to webhooks by default.
  env.SLUICE_WEBHOOK_ALLOW ??= '127.0.0.0/8,::1/128';
  // Caches and artifacts, and the runner's copies of cache entries, live with the rest of its state.
  env.SLUICE_CACHE_URL ??= path.join(dataDir, 'cache');
  env.SLUICE_CACHE_LOCAL_DIR ??= path.join(dataDir, 'cache-local');
  const services = await localServices(env);
  const config = loadConfig(env);
  // Our own dev server has the search attributes from its command line; a server of yours gets
  // them here, as the api and worker roles register them. Not reachable soon: say so and stop.
  if (!temporal) await prepareTemporal(config, { giveUpAfterMs: EXTERNAL_TEMPORAL_WAIT_MS });

  // One process, one registry, one /metrics for every role; before the worker installs Temporal's runtime.
  const metrics = await startRoleMetrics(config, { temporalSdk: true });
  if (metrics) running.push({ name: 'metrics listener', stop: () => metrics.close() });
  const worker = await runWorker(config);
  running.push({ name: 'worker', stop: () => worker.shutdown() });
  const checkPool = createPool(config.databaseUrl, 1);
  await reportInstallation(config, checkPool, await loadWorkflowIds(checkPool), (line) => console.log(line)).finally(() => checkPool.end());
  // One machine, perhaps a laptop without bubblewrap: run on, warning loudly (steps/isolation).
  const runner = await runRunner(config, { requireSandbox: false });
  running.push({ name: 'runner', stop: () => runner.shutdown() });
  const api = await startApi(config);
  running.push({ name: 'API', stop: () => api.close() });
  await api.ready;

  console.log(
    [
      '',
      'Sluice is running.',
      `  API           ${api.url}`,
      `  Temporal      ${config.temporalAddress} (namespace ${config.temporalNamespace}${temporal ? '' : ', external'})`,
      `  Temporal UI   ${temporal?.uiUrl ?? '(external server: see its own UI)'}`,
      `  Data          ${dataDir}`,
      `  Metrics       ${metrics?.url ?? 'off (SLUICE_METRICS_PORT)'}`,
      `  Admin token   ${adminTokenWhere === 'SLUICE_ADMIN_TOKEN' ? 'from $SLUICE_ADMIN_TOKEN' : adminTokenWhere}`,
      `  Webhooks may reach ${env.SLUICE_WEBHOOK_ALLOW || 'public addresses only'} (SLUICE_WEBHOOK_ALLOW)`,
      imagesLine(config),
      ...services,
      'Ctrl-C stops it.',
      '',
    ].join('\n'),
  );
}

/** Where builds' images come from, or why builds with `image:` would fail here. */
function imagesLine(config: Config): string {
  const crane = findCrane(config.images?.crane);
  if (!crane) return '  Images        no crane: builds with image: end in error (SLUICE_CRANE; docs/operating.md#images)';
  return `  Images        pulled with ${crane}, kept in ${config.images?.dir ?? DEFAULT_IMAGE_DIR}${config.images?.mirror ? `, Docker Hub through ${config.images.mirror.host}` : ''}`;
}

const SERVICE_VARS = { postgresql: 'SLUICE_SERVICE_POSTGRESQL_URL', mysql: 'SLUICE_SERVICE_MYSQL_URL', redis: 'SLUICE_SERVICE_REDIS_URL' } as const;

/**
 * The services builds can have (`services:` in sluice.yml): each SLUICE_SERVICE_*_URL that is
 * set, else the local server when it answers: PostgreSQL's of DATABASE_URL as the superuser
 * `postgres`, MariaDB/MySQL's root@127.0.0.1:3306, Redis at 127.0.0.1:6379. Sets those in `env`
 * and returns the lines that say so (never a password).
 */
async function localServices(env: NodeJS.ProcessEnv): Promise<string[]> {
  const pg = new URL(env.DATABASE_URL!);
  if (pg.username !== 'postgres') {
    pg.username = 'postgres';
    pg.password = ''; // DATABASE_URL's password is its own user's
  }
  pg.pathname = '/postgres';
  const local = { postgresql: pg.toString(), mysql: 'mysql://root@127.0.0.1:3306', redis: 'redis://127.0.0.1:6379' };
  const unset = (Object.keys(SERVICE_VARS) as (keyof typeof SERVICE_VARS)[]).filter((s) => !env[SERVICE_VARS[s]]);
  const checks = await checkServices(Object.fromEntries(unset.map((s) => [s, local[s]])));
  const lines = ['  Services for builds (sluice.yml `services:`):'];
  for (const service of Object.keys(SERVICE_VARS) as (keyof typeof SERVICE_VARS)[]) {
    const check = checks.find((c) => c.service === service);
    if (!check) {
      lines.push(`    ${service.padEnd(11)}from ${SERVICE_VARS[service]}`);
    } else if (check.ok) {
      env[SERVICE_VARS[service]] = local[service];
      lines.push(`    ${service.padEnd(11)}the local server, ${check.detail}`);
    } else {
      lines.push(`    ${service.padEnd(11)}none (${check.detail}; set ${SERVICE_VARS[service]})`);
    }
  }
  return lines;
}

/** Reads a secret kept in a file, creating it (owner-only) on first use. */
function keptSecret(file: string, make: () => string): { value: string; created: boolean } {
  if (existsSync(file)) return { value: readFileSync(file, 'utf8').trim(), created: false };
  const value = make();
  // 'wx': never overwrite a file another start created in between.
  writeFileSync(file, `${value}\n`, { mode: 0o600, flag: 'wx' });
  return { value, created: true };
}

/** Stops everything that started, API first and Temporal last. */
async function shutdown(): Promise<void> {
  while (running.length > 0) {
    const { name, stop } = running.pop()!;
    try {
      await stop();
    } catch (err) {
      console.error(`stopping the ${name} failed: ${(err as Error).message}`);
    }
  }
}

let stopping = false;
function onSignal(signal: NodeJS.Signals): void {
  if (stopping) {
    console.error(`${signal} again: exiting without waiting.`);
    process.exit(1);
  }
  stopping = true;
  console.log(`\n${signal}: stopping...`);
  void shutdown().then(() => process.exit(0));
}
process.on('SIGINT', onSignal);
process.on('SIGTERM', onSignal);

main().catch(async (err: unknown) => {
  console.error(`sluice: ${err instanceof Error ? err.message : String(err)}`);
  stopping = true;
  await shutdown();
  process.exit(1);
});
