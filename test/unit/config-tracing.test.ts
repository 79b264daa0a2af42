/** Tracing is off unless an OTLP endpoint is set; the OTEL_* variables as OpenTelemetry's SDKs read them (config.ts). */
import { loadConfig } from '../../src/config';
import { sessionOfWorkflowId } from '../../src/tracing/attributes';

const base = { SLUICE_SECRET_KEY: Buffer.alloc(32, 9).toString('base64') };

describe('tracing settings', () => {
  it('are off with no endpoint, whatever else is set', () => {
    expect(loadConfig({ ...base, OTEL_SERVICE_NAME: 'ci' }, 'worker').tracing).toBeUndefined();
    expect(loadConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: '' }, 'worker').tracing).toBeUndefined();
  });

  it('send to <endpoint>/v1/traces, or to the traces endpoint as it is, as the role', () => {
    expect(loadConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel:4318/' }, 'worker').tracing).toEqual({
      tracesUrl: 'http://otel:4318/v1/traces',
      serviceName: 'sluice-worker',
    });
    const both = { ...base, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://traces.acme.test/otlp' };
    expect(loadConfig(both, 'runner').tracing).toEqual({ tracesUrl: 'https://traces.acme.test/otlp', serviceName: 'sluice-runner' });
    expect(loadConfig({ ...both, SLUICE_ADMIN_TOKEN: 'a'.repeat(16) }, 'all').tracing?.serviceName).toBe('sluice');
    expect(loadConfig({ ...both, OTEL_SERVICE_NAME: 'ci-builds' }, 'runner').tracing?.serviceName).toBe('ci-builds');
  });

  it('stay off when OTEL_SDK_DISABLED is true', () => {
    expect(loadConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel:4318', OTEL_SDK_DISABLED: 'true' }, 'worker').tracing).toBeUndefined();
  });

  it('refuse what Sluice cannot send, naming the variable and never echoing an endpoint', () => {
    const secretUrl = 'ftp://user:hunter2hunter2@otel:4318';
    expect(() => loadConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: secretUrl }, 'worker')).toThrow('OTEL_EXPORTER_OTLP_ENDPOINT must be an http or https URL');
    expect(() => loadConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: secretUrl }, 'worker')).not.toThrow(/hunter2/);
    expect(() => loadConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel:4317', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, 'worker')).toThrow(
      /OTEL_EXPORTER_OTLP_PROTOCOL: Sluice sends traces as OTLP\/HTTP JSON/,
    );
    expect(loadConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel:4318', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json' }, 'worker').tracing).toBeDefined();
  });
});

describe('the session a workflow id names', () => {
  it("is a session workflow's number, and nothing for the others", () => {
    expect(sessionOfWorkflowId('sluice-0a1b2c3d-session-42')).toBe(42);
    expect(sessionOfWorkflowId('session-7')).toBe(7);
    expect(sessionOfWorkflowId('sluice-0a1b2c3d-suite-42')).toBeUndefined();
    expect(sessionOfWorkflowId('sluice-0a1b2c3d-squashed-42')).toBeUndefined();
  });
});
