/**
 * A role's `/metrics` listener (SLUICE_METRICS_PORT, on SLUICE_METRICS_HOST): Prometheus' text
 * format, without a token, on an address of its own rather than the API's public port (the
 * API faces source-control hooks; metrics are for the private network Prometheus scrapes
 * from). One per process: `npm start` serves every role's metrics from one registry.
 *
 * Temporal's SDK exports its own metrics (task slots, schedule-to-start latency, poll
 * failures) from a Prometheus server of its own on loopback; `extra` names it, and its text
 * is served after Sluice's, so one scrape gets both.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { registry } from './registry';

export interface MetricsServer {
  /** e.g. `http://127.0.0.1:9464/metrics` */
  url: string;
  close(): Promise<void>;
}

export interface ServeMetricsOptions {
  host: string;
  /** 0: any free port (tests read it from `url`). */
  port: number;
  /** More exposition text, appended: the Temporal SDK's metrics endpoint. */
  extraUrl?: () => string | undefined;
}

const EXTRA_TIMEOUT_MS = 2_000;

export async function serveMetrics(options: ServeMetricsOptions): Promise<MetricsServer> {
  let extraFailed = false;
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    if (path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found: metrics are at /metrics\n');
      return;
    }
    void exposition(options.extraUrl?.()).then(
      (text) => {
        res.writeHead(200, { 'content-type': registry.contentType });
        res.end(req.method === 'HEAD' ? undefined : text);
      },
      (err: unknown) => {
        res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end(`metrics failed: ${(err as Error).message}\n`);
      },
    );
  });

  async function exposition(extraUrl: string | undefined): Promise<string> {
    const [own, extra] = await Promise.all([registry.metrics(), extraUrl ? fetchText(extraUrl) : undefined]);
    return extra === undefined ? own : `${own.trimEnd()}\n${extra}`;
  }

  async function fetchText(url: string): Promise<string | undefined> {
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(EXTRA_TIMEOUT_MS) });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      extraFailed = false;
      return await res.text();
    } catch (err) {
      // Sluice's own metrics still go out; the SDK's are missing from this scrape, said once.
      if (!extraFailed) console.warn(`sluice metrics: Temporal SDK metrics not read from ${url}: ${(err as Error).message}`);
      extraFailed = true;
      return undefined;
    }
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  return {
    url: `http://${host}:${port}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections(); // a scraper's kept-alive connection would hold close() open
      }),
  };
}
