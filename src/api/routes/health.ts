/** `GET /healthz`: 200 once PostgreSQL (and, in the api process, Temporal) answer; 503 naming what is missing. */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { postgresHealth, type HealthReport } from '../../app/health';
import type { ApiDeps } from '../deps';
import { documented } from '../openapi/shapes';

const healthDoc = documented({
  tag: 'operations',
  summary: 'Health check',
  public: true,
  response: {
    200: z.object({ ok: z.literal(true) }).describe('PostgreSQL (and, in the api process, Temporal) answer'),
    503: z.object({ ok: z.literal(false), missing: z.array(z.string()).describe('what did not answer: `postgresql`, `temporal`') }).describe('something is missing'),
  },
});

export function registerHealthRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const check = deps.health ?? (() => postgresHealth(deps.pool));
  app.get('/healthz', healthDoc, async (_request, reply) => {
    const report = await check().catch((): HealthReport => ({ ok: false, missing: ['health check'] }));
    if (report.ok) return reply.code(200).send({ ok: true });
    return reply.code(503).send({ ok: false, missing: report.missing });
  });
}
