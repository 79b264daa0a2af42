/**
 * HTTP requests in /metrics: each answer observed by method, route pattern and status code.
 * The route is Fastify's pattern (`/1/:provider/:key`), never the URL as sent, so a key, a
 * branch or a guid never becomes a label; a request no route matched counts as `unmatched`.
 */
import type { FastifyInstance } from 'fastify';
import { httpRequestDuration } from '../metrics/registry';

export function observeHttp(app: FastifyInstance): void {
  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched';
    httpRequestDuration.observe(
      { http_request_method: request.method, http_route: route, http_response_status_code: String(reply.statusCode) },
      reply.elapsedTime / 1000,
    );
  });
}
