/**
 * `GET /api/v1/sessions?org=&repo=&branch=&status=&limit=&before=`: sessions across
 * repositories, newest first, each as the builds list shows it; `before` (the last `session`
 * of a page) gives the next, older page.
 * `GET /api/v1/sessions/:session`: the session as the `stop` payload shows it, plus its tests.
 * `POST /api/v1/sessions/:session/stop {stopped_by}`: stop it, queued or building.
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { ApiDeps } from '../../app';
import { HttpError, notFound, parseId, validate } from '../../http';
import { loadSessionView, sessionListView } from '../../views';
import { SESSION_STATUSES } from '../../../core/types';
import { findSessionWithRepo, listSessions } from '../../../db/sessions';
import { loadOrg } from './orgs';
import { loadRepo } from './repos';

const StopBody = z.strictObject({
  // The handle or e-mail address of who stopped it (spec §2 `stopped_by`).
  stopped_by: z.string().trim().min(1).max(200),
});

const FINAL = new Set(['passed', 'failed', 'error', 'skipped', 'stopped']);

export const SessionList = z.object({
  // An organization by id or name; a repository by id or `<org>/<name>`.
  org: z.string().trim().min(1).max(255).optional(),
  repo: z.string().trim().min(1).max(600).optional(),
  branch: z.string().min(1).max(1024).optional(),
  status: z.enum(SESSION_STATUSES).optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
  before: z.coerce.number().int().min(1).optional(),
});

const STOP_RETRY_MS = 10_000;

export function registerSessionRoutes(app: FastifyInstance, deps: ApiDeps): void {
  app.get('/sessions', async (request) => {
    const q = validate(SessionList, request.query, 'query');
    const orgId = q.org === undefined ? undefined : (await loadOrg(deps.pool, q.org)).id;
    const repoId = q.repo === undefined ? undefined : (await loadRepo(deps.pool, q.repo)).id;
    const rows = await listSessions(deps.pool, { orgId, repoId, branch: q.branch, status: q.status, before: q.before, limit: q.limit });
    return rows.map((r) => sessionListView(r, deps.config));
  });

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
    // A queued session has no workflow until its turn: its suite is asked then (temporal/stop.ts).
    // A plan's part is not in the queue: its parent started it, and it may not be running yet.
    const row = await findSessionWithRepo(deps.pool, id);
    if (!row) throw notFound('session');
    const target = { sessionId: id, suiteId: row.parent_id === null ? row.suite_id : null };
    const deadline = Date.now() + STOP_RETRY_MS;
    for (;;) {
      const view = await loadSessionView(deps.pool, deps.config, id);
      if (!view) throw notFound('session');
      if (FINAL.has(view.status)) throw new HttpError(409, 'conflict', `session ${id} already ended (${view.status})`, 'session');
      if (await deps.stop(target, stopped_by)) return reply.code(202).send(view);
      if (Date.now() > deadline) throw new HttpError(503, 'unavailable', `session ${id} could not be reached; try again`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  });
}
