/**
 * A role's metrics endpoint (SLUICE_METRICS_PORT): Sluice's registry, and for the roles that
 * run Temporal workers (worker, keyed runner, `npm start`) the SDK's own metrics, which its
 * runtime serves on a loopback port of its own and /metrics appends. Call it before any
 * worker is created: the runtime is installed once per process.
 */
import type { Config } from '../config';
import { serveMetrics, type MetricsServer } from '../metrics/serve';
import { freePort } from './devServer';
import { installRuntime } from './runtime';

export async function startRoleMetrics(config: Config, opts: { temporalSdk: boolean }): Promise<MetricsServer | undefined> {
  if (!config.metrics) return undefined;
  let sdkUrl: string | undefined;
  if (opts.temporalSdk) {
    const bindAddress = `127.0.0.1:${await freePort()}`;
    if (installRuntime({ prometheusBindAddress: bindAddress })) sdkUrl = `http://${bindAddress}/metrics`;
  }
  return serveMetrics({ host: config.metrics.host, port: config.metrics.port, extraUrl: () => sdkUrl });
}
