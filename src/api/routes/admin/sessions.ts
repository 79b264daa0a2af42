/** `GET /api/v1/sessions/:session`: the session as the `stop` payload shows it, plus its tests. */
import type { FastifyInstance } from 'fastify';
import type { ApiDeps } from '../../app';
import { notFound, parseId } from '../../http';
import { loadSessionView } from '../../views';

export function registerSessionRoutes(app: FastifyInstance, deps: ApiDeps): void {
  app.get<{ Params: { session: string } }>('/sessions/:session', async (request) => {
    // Without test output: that can be large, and the report page has it.
    const view = await loadSessionView(deps.pool, deps.config, parseId(request.params.session, 'session'), false);
    if (!view) throw notFound('session');
    return view;
  });
}
