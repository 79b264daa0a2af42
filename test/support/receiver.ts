/**
 * A real webhook receiver for tests: an HTTP (or HTTPS, self-signed) server on loopback that
 * records every request and answers however the test says. It can be closed and brought back
 * on the same port, to play a receiver that is down for a while.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** The body parsed as JSON, or undefined when it is not JSON. */
  json: unknown;
  /** Date.now() when the request was complete. */
  at: number;
}

export interface Reply {
  status: number;
  headers?: Record<string, string>;
  body?: string;
}

export type Responder = (req: ReceivedRequest) => Reply | Promise<Reply>;

export interface Receiver {
  /** Where to send webhooks: `http(s)://127.0.0.1:<port>/hook`. */
  url: string;
  port: number;
  /** Every complete request, oldest first (kept across close/listen). */
  requests: ReceivedRequest[];
  /** Replaces the answer for the requests that follow (default: 200 "ok"). */
  respondWith(fn: Responder): void;
  /** Resolves with all requests so far once `predicate(requests)` holds; rejects after timeoutMs. */
  waitFor(predicate: (requests: ReceivedRequest[]) => boolean, timeoutMs?: number): Promise<ReceivedRequest[]>;
  /** Stops listening and cuts open connections, including ones whose answer is still pending. */
  close(): Promise<void>;
  /** Listens again on the same port after close(). */
  listen(): Promise<void>;
}

export interface HttpsReceiver extends Receiver {
  /** The self-signed certificate (PEM), for a client that chooses to trust it. */
  cert: string;
}

const OK: Reply = { status: 200, body: 'ok' };

export function startReceiver(opts: { port?: number } = {}): Promise<Receiver> {
  return start('http', http.createServer(), opts.port ?? 0);
}

/** An HTTPS receiver whose certificate no well-known CA signed (needs the openssl CLI). */
export async function startHttpsReceiver(opts: { port?: number } = {}): Promise<HttpsReceiver> {
  const { key, cert } = selfSignedCertificate();
  const receiver = await start('https', https.createServer({ key, cert }), opts.port ?? 0);
  return { ...receiver, cert };
}

export function hasOpenssl(): boolean {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/**
 * Node can sign data but not build an X.509 certificate, so this asks openssl for a throwaway
 * one: EC P-256, valid for a day, for localhost and 127.0.0.1.
 */
export function selfSignedCertificate(): { key: string; cert: string } {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-cert-'));
  try {
    execFileSync(
      'openssl',
      [
        'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
        '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-days', '1',
        '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1',
      ],
      { stdio: 'pipe' },
    );
    return { key: readFileSync(join(dir, 'key.pem'), 'utf8'), cert: readFileSync(join(dir, 'cert.pem'), 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function start(scheme: 'http' | 'https', server: http.Server | https.Server, wantedPort: number): Promise<Receiver> {
  const requests: ReceivedRequest[] = [];
  let responder: Responder = () => OK;
  const waiters = new Set<() => void>();

  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const received: ReceivedRequest = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body,
        json: parseJson(body),
        at: Date.now(),
      };
      requests.push(received);
      for (const wake of waiters) wake();
      Promise.resolve()
        .then(() => responder(received))
        .then(
          (reply) => {
            if (res.destroyed) return;
            res.writeHead(reply.status, reply.headers);
            res.end(reply.body ?? '');
          },
          (err: unknown) => {
            if (!res.destroyed) res.writeHead(500).end(String(err));
          },
        );
    });
  });

  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve((server.address() as AddressInfo).port);
      });
    });

  const port = await listen(wantedPort);
  return {
    url: `${scheme}://127.0.0.1:${port}/hook`,
    port,
    requests,
    respondWith(fn) {
      responder = fn;
    },
    waitFor(predicate, timeoutMs = 5_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (!predicate(requests)) return;
          done();
          resolve(requests);
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`receiver: condition not met within ${timeoutMs} ms; got ${requests.length} request(s)`));
        }, timeoutMs);
        const done = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      });
    },
    close() {
      return new Promise((resolve) => {
        if (!server.listening) return resolve();
        server.close(() => resolve());
        // close() alone waits for keep-alive and hanging connections to end by themselves.
        server.closeAllConnections();
      });
    },
    async listen() {
      if (!server.listening) await listen(port);
    },
  };
}

function parseJson(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    return undefined;
  }
}
