/**
 * A server span for each HTTP request, named for its route's pattern (`POST /1/:provider/:key`,
 * never the path: a trigger's path holds its repository's key), a child of the caller's trace
 * when the request carries a W3C `traceparent`. The route's handler runs in the span's context,
 * so what it does (the trigger's signal to Temporal, its `received` deliveries) joins the trace.
 * Installed only when tracing is on (buildApp): off, no hook runs.
 */
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Context, type Span } from '@opentelemetry/api';
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteHandlerMethod } from 'fastify';
import { sluiceTracer } from '../tracing/spans';

const traced = new WeakMap<FastifyRequest, { span: Span; context: Context }>();

/** Before any route is declared: routes declared earlier run untraced. */
export function traceRequests(app: FastifyInstance): void {
  app.addHook('onRequest', (request, _reply, done) => {
    const parent = propagation.extract(ROOT_CONTEXT, request.headers);
    const route = request.routeOptions.url;
    const span = sluiceTracer().startSpan(
      route === undefined ? request.method : `${request.method} ${route}`,
      { kind: SpanKind.SERVER, attributes: { 'http.request.method': request.method, ...(route === undefined ? {} : { 'http.route': route }) } },
      parent,
    );
    traced.set(request, { span, context: trace.setSpan(parent, span) });
    done();
  });

  app.addHook('onRoute', (route) => {
    const handler = route.handler as RouteHandlerMethod;
    route.handler = function (this: FastifyInstance, request: FastifyRequest, reply: FastifyReply) {
      const t = traced.get(request);
      return t === undefined ? handler.call(this, request, reply) : context.with(t.context, () => handler.call(this, request, reply));
    } as RouteHandlerMethod;
  });

  // The error's kind only: messages may quote what the caller sent.
  app.addHook('onError', (request, _reply, error, done) => {
    traced.get(request)?.span.setAttribute('error.type', error.name);
    done();
  });

  app.addHook('onResponse', (request, reply, done) => {
    end(request, reply.statusCode);
    done();
  });
  app.addHook('onRequestAbort', (request, done) => {
    end(request, undefined);
    done();
  });
}

function end(request: FastifyRequest, status: number | undefined): void {
  const t = traced.get(request);
  if (t === undefined) return;
  traced.delete(request);
  if (status !== undefined) t.span.setAttribute('http.response.status_code', status);
  // A server span is in error for the server's failures only; a 4xx is the caller's.
  if (status === undefined || status >= 500) t.span.setStatus({ code: SpanStatusCode.ERROR });
  t.span.end();
}
