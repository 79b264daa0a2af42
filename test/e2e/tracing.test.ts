/**
 * Traces from a running installation (docs/observability.md "Traces"): the API, a worker and a
 * runner, each its own process from dist/, export to a real OTLP/HTTP receiver on loopback. One
 * trigger, carrying a traceparent of its caller's, makes one trace: the trigger's HTTP span, the
 * suite's and the session's workflow spans, the runner's activity spans and the webhook
 * deliveries, each naming the session (the request's span names the trigger's guid: its session
 * is recorded after the answer). With no endpoint set nothing is exported at all.
 */
import { startCluster, type Cluster } from '../support/cluster';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlpReceiver';
import { sessionOfGuid, script } from '../support/world';

const FILES = { 'test/a_test.sh': script('echo a passes'), 'test/b_test.sh': script('echo b passes') };
const SUITE = { branch: 'master', test_pattern: 'test/*_test.sh' };

/** The caller's own trace, as a CI system or a proxy in front of Sluice would send it. */
const CALLER_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';

async function trigger(c: Cluster, webhookUrl: string, headers: Record<string, string> = {}): Promise<number> {
  const res = await fetch(webhookUrl, { method: 'POST', headers });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`trigger answered ${res.status}: ${text}`);
  return sessionOfGuid(c.db.pool, (JSON.parse(text) as { guid: string }).guid);
}

describe('with an OTLP endpoint', () => {
  let otlp: OtlpReceiver;
  let c: Cluster;

  beforeAll(async () => {
    otlp = await startOtlpReceiver();
    // Batches go out every 200 ms rather than every 5 s: the test waits for them, not for time.
    c = await startCluster({ runners: 1, env: { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_BSP_SCHEDULE_DELAY: '200' } });
  }, 300_000);

  afterAll(async () => {
    await c?.stop();
    await otlp?.close();
  });

  it('one trace runs from the trigger through the workflows to the activities and deliveries, each span naming the session', async () => {
    const repo = await c.makeRepo(FILES, SUITE);
    const session = await trigger(c, repo.webhook_url, { traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01` });
    expect((await c.eventsOf(session)).map((e) => e.event)).toEqual(expect.arrayContaining(['received', 'start', 'stop']));

    const inTrace = (spans: ReceivedSpan[]) => spans.filter((s) => s.traceId === CALLER_TRACE);
    const has = (service: string, name: string) => (spans: ReceivedSpan[]) => inTrace(spans).some((s) => s.service === service && s.name === name);
    // The session's workflow span ends with the session, after its last delivery: then all of it is there.
    const spans = inTrace(
      await otlp.waitFor('session workflow span in the caller’s trace', (all) =>
        [
          has('sluice-api', 'POST /1/:provider/:key'),
          has('sluice-worker', 'RunWorkflow:sessionWorkflow'),
          has('sluice-worker', 'deliver stop'),
          has('sluice-api', 'deliver received'),
          has('sluice-runner', 'RunActivity:runLane'),
        ].every((p) => p(all)),
      ),
    );
    const named = (service: string, name: string) => spans.filter((s) => s.service === service && s.name === name);

    // The request's span: a child of the caller's, named for the route (never the path, which holds the key).
    const [request] = named('sluice-api', 'POST /1/:provider/:key');
    expect(request).toMatchObject({ parentSpanId: CALLER_SPAN, attributes: { 'http.route': '/1/:provider/:key', 'http.response.status_code': 200 } });

    // The workflows, the runner's activities and the worker's deliveries, in the same trace.
    expect(named('sluice-worker', 'RunWorkflow:sessionWorkflow')).toHaveLength(1);
    expect(named('sluice-worker', 'StartChildWorkflow:sessionWorkflow')).toHaveLength(1);
    expect(spans.some((s) => s.service === 'sluice-worker' && s.name === 'RunActivity:deliverWebhook')).toBe(true);
    expect(named('sluice-runner', 'RunActivity:checkout').length).toBeGreaterThanOrEqual(1);
    // `received` goes out from the API once it has recorded the session (api/herald.ts), in the request's trace.
    expect(named('sluice-api', 'deliver received')).toHaveLength(1);
    expect(named('sluice-worker', 'deliver received')).toHaveLength(0);
    // The runner's signal to the session (every lane set up) goes in the trace too.
    expect(named('sluice-worker', 'HandleSignal:workersReady')[0]).toMatchObject({ attributes: { 'sluice.session.id': session } });
    expect(named('sluice-worker', 'deliver stop')[0]).toMatchObject({ attributes: { 'sluice.delivery.outcome': 'delivered', 'http.response.status_code': 200 } });

    // Every span of the session's own work names it; spans of the suite's name it where it is one session's.
    const sessionWork = spans.filter(
      (s) =>
        s.name === 'RunWorkflow:sessionWorkflow' ||
        s.name === 'StartChildWorkflow:sessionWorkflow' ||
        s.name.startsWith('deliver ') ||
        // The session workflow's own spans (the sink names their workflow), and its activities'.
        String(s.attributes.workflowId ?? s.attributes.temporalWorkflowId ?? '').includes('-session-'),
    );
    expect(sessionWork.length).toBeGreaterThanOrEqual(6);
    // The request is answered before its session is recorded: its span names the trigger's guid.
    expect(request!.attributes['sluice.trigger.guid']).toEqual(expect.stringMatching(/^[0-9a-f-]{36}$/));
    for (const s of sessionWork) {
      expect({ span: s.name, attributes: s.attributes }).toMatchObject({ attributes: { 'sluice.session.id': session, 'cicd.pipeline.run.id': String(session) } });
    }

    // The session's spans link up to the request: none hangs from a span that is not in the trace
    // (the suite's own run lasts as long as the suite, so its span is never exported).
    const ids = new Set(spans.map((s) => s.spanId).concat(CALLER_SPAN));
    expect([request!, ...sessionWork].filter((s) => !ids.has(s.parentSpanId)).map((s) => s.name)).toEqual([]);

    // No secret in any span: not the repository's key, not the admin token, not the receiver's URL.
    const key = new URL(repo.webhook_url).pathname.split('/').pop()!;
    const everything = JSON.stringify(otlp.spans);
    expect(everything).not.toContain(key);
    expect(everything).not.toContain(c.env.SLUICE_ADMIN_TOKEN!);
    expect(everything).not.toContain(c.receiver.url);
  }, 180_000);

  it("a later trigger's session joins that trigger's trace, not the one that started its suite", async () => {
    // The suite of this branch runs already, in the first trigger's trace; this session waits in its queue.
    const repo = await c.makeRepo(FILES, SUITE);
    const first = await trigger(c, repo.webhook_url);
    await c.eventsOf(first);
    const laterTrace = '0af7651916cd43dd8448eb211c80319c';
    const later = await trigger(c, repo.webhook_url, { traceparent: `00-${laterTrace}-b7ad6b7169203331-01` });
    await c.eventsOf(later);
    const spans = await otlp.waitFor(`session ${later}'s workflow span`, (all) =>
      all.some((s) => s.name === 'RunWorkflow:sessionWorkflow' && s.attributes['sluice.session.id'] === later),
    );
    const run = spans.find((s) => s.name === 'RunWorkflow:sessionWorkflow' && s.attributes['sluice.session.id'] === later)!;
    expect(run.traceId).toBe(laterTrace);
    const start = spans.find((s) => s.spanId === run.parentSpanId);
    expect(start).toMatchObject({ name: 'StartChildWorkflow:sessionWorkflow', traceId: laterTrace, attributes: { 'sluice.session.id': later } });
    const request = spans.find((s) => s.spanId === start!.parentSpanId);
    expect(request).toMatchObject({ service: 'sluice-api', name: 'POST /1/:provider/:key', parentSpanId: 'b7ad6b7169203331' });
  }, 180_000);
});

describe('with no endpoint', () => {
  let otlp: OtlpReceiver;
  let c: Cluster | undefined;

  beforeAll(async () => {
    // Where an exporter would send by default (OTLP/HTTP's port): nothing must arrive there either.
    otlp = await startOtlpReceiver({ port: 4318 });
    c = await startCluster({ runners: 1, env: { OTEL_SERVICE_NAME: 'sluice-untraced', OTEL_BSP_SCHEDULE_DELAY: '200' } });
  }, 300_000);

  afterAll(async () => {
    await c?.stop();
    await otlp?.close();
  });

  it('a build runs and nothing is exported', async () => {
    const cluster = c!;
    const repo = await cluster.makeRepo(FILES, SUITE);
    const session = await trigger(cluster, repo.webhook_url, { traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01` });
    expect((await cluster.eventsOf(session)).find((e) => e.event === 'stop')).toMatchObject({ status: 'passed' });
    // The roles stop, flushing whatever they would have batched: still nothing.
    c = undefined;
    await cluster.stop();
    expect(otlp.requests).toEqual([]);
  }, 180_000);
});
