/**
 * `GET /api/v1/runners`: the runners up now (seen in the last two minutes), each with its
 * version, how it isolates builds (`sandboxed`, `build_user`, and `gaps`: what builds on it can
 * reach that they should not, empty when none), when it started and was last seen, and how many
 * lanes of builds it is running (`busy_lanes`; 0 is idle). Runners write their rows themselves
 * (runner/run.ts, db/runners.ts); which are up is the application's (app/runners.ts).
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { runnersUp } from '../../../app/runners';
import type { ApiDeps } from '../../deps';
import { documented } from '../../openapi/shapes';

const Runner = z.object({
  name: z.string(),
  version: z.string(),
  sandboxed: z.boolean(),
  build_user: z.string().nullable(),
  gaps: z.array(z.string()).describe('what builds on it can reach that they should not; empty when none'),
  started_at: z.iso.datetime(),
  last_seen_at: z.iso.datetime(),
  busy_lanes: z.number().int().describe('lanes running builds; 0 is idle'),
});

export function registerRunnerRoutes(app: FastifyInstance, { pool }: ApiDeps): void {
  app.get('/runners', documented({ tag: 'runners', summary: 'The runners up now', response: { 200: z.object({ runners: z.array(Runner) }) } }), async () => ({ runners: await runnersUp(pool) }));
}
