/**
 * `GET /api/v1/sessions/:session`: the session as the `stop` payload shows it, plus its tests.
 * `POST /api/v1/sessions/:session/stop {stopped_by}`: stop it, queued or building.
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { ApiDeps } from '../../app';
import { HttpError, notFound, parseId, validate } from '../../http';
import { loadSessionView } from '../../views';

const StopBody = z.strictObject({
  // The handle or e-mail address of who stopped it (spec §2 `stopped_by`).
  stopped_by: z.string().trim().min(1).max(200),
});

const FINAL = new Set(['passed', 'failed', 'error', 'skipped', 'stopped']);
const STOP_RETRY_MS = 10_000;

export function registerSessionRoutes(app: FastifyInstance, deps: ApiDeps): void {
  app.get<{ Params: { session: string } }>('/sessions/:session', async (request) => {
    // Without test output: that can be large, and the report page has it.
    const view = await loadSessionView(deps.pool, deps.config, parseId(request.params.session, 'session'));
    if (!view) throw notFound('session');
    return view;
  });

  // 202: the stop is asked for; the session's `stop` event (status `stopped`, `stopped_by`)
  // says when it is done. A session that already ended is a 409.
  app.post<{ Params: { session: string } }>('/sessions/:session/stop', async (request, reply) => {
    const id = parseId(request.params.session, 'session');
    const { stopped_by } = validate(StopBody, request.body ?? {});
    if (!deps.stop) throw new HttpError(503, 'unavailable', 'stopping builds is not available here');
    // A session queued a moment ago may not have its workflow yet (the suite starts it as it
    // takes the trigger): try again briefly while the database still says it has not ended.
    const deadline = Date.now() + STOP_RETRY_MS;
    for (;;) {
      const view = await loadSessionView(deps.pool, deps.config, id);
      if (!view) throw notFound('session');
      if (FINAL.has(view.status)) throw new HttpError(409, 'conflict', `session ${id} already ended (${view.status})`, 'session');
      if (await deps.stop(id, stopped_by)) return reply.code(202).send(view);
      if (Date.now() > deadline) throw new HttpError(503, 'unavailable', `session ${id} could not be reached; try again`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  });
}
