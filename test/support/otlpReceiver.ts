/**
 * A real OTLP/HTTP trace receiver on loopback, as an OpenTelemetry collector would be: it takes
 * `POST /v1/traces` in OTLP's JSON encoding (what Sluice's exporter sends) and keeps every span,
 * flattened, with its service's name.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  attributes: Record<string, unknown>;
}

export interface OtlpReceiver {
  /** The endpoint to give OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:<port>`. */
  url: string;
  spans: ReceivedSpan[];
  /** Every export request's path, whatever it carried. */
  requests: string[];
  /** Resolves with all spans so far once `predicate` holds; rejects after `timeoutMs`, listing what came. */
  waitFor(what: string, predicate: (spans: ReceivedSpan[]) => boolean, timeoutMs?: number): Promise<ReceivedSpan[]>;
  close(): Promise<void>;
}

interface AnyValue {
  stringValue?: string;
  intValue?: number | string;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: AnyValue[] };
}
type KeyValues = { key: string; value: AnyValue }[] | undefined;

const valueOf = (v: AnyValue): unknown =>
  v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : undefined) ?? v.doubleValue ?? v.boolValue ?? v.arrayValue?.values?.map(valueOf);
const attributesOf = (kvs: KeyValues) => Object.fromEntries((kvs ?? []).map(({ key, value }) => [key, valueOf(value)]));
/** OTLP/JSON ids are hex; some encoders send base64. */
const hexId = (id: string | undefined) => (id === undefined || id === '' ? '' : /^[0-9a-f]+$/.test(id) ? id : Buffer.from(id, 'base64').toString('hex'));

export function startOtlpReceiver(opts: { port?: number } = {}): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const requests: string[] = [];
  const listeners = new Set<() => void>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      requests.push(req.url ?? '');
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          resourceSpans?: { resource?: { attributes?: KeyValues }; scopeSpans?: { spans?: Record<string, unknown>[] }[] }[];
        };
        for (const rs of body.resourceSpans ?? []) {
          const service = String(attributesOf(rs.resource?.attributes)['service.name'] ?? '');
          for (const ss of rs.scopeSpans ?? []) {
            for (const s of ss.spans ?? []) {
              spans.push({
                service,
                traceId: hexId(s.traceId as string),
                spanId: hexId(s.spanId as string),
                parentSpanId: hexId(s.parentSpanId as string | undefined),
                name: s.name as string,
                attributes: attributesOf(s.attributes as KeyValues),
              });
            }
          }
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      } catch {
        res.writeHead(400).end();
      }
      for (const l of listeners) l();
    });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      resolve({
        url: `http://127.0.0.1:${port}`,
        spans,
        requests,
        waitFor(what, predicate, timeoutMs = 60_000) {
          return new Promise((done, fail) => {
            const check = () => {
              if (!predicate(spans)) return;
              cleanup();
              done(spans);
            };
            const timer = setTimeout(() => {
              cleanup();
              fail(new Error(`no ${what} within ${timeoutMs} ms; spans received:\n${spans.map((s) => `  ${s.service} ${s.name} ${s.traceId}`).join('\n')}`));
            }, timeoutMs);
            const cleanup = () => {
              clearTimeout(timer);
              listeners.delete(check);
            };
            listeners.add(check);
            check();
          });
        },
        close: () =>
          new Promise<void>((done) => {
            server.closeAllConnections();
            server.close(() => done());
          }),
      });
    });
  });
}
