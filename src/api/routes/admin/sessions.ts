/**
 * `GET /api/v1/sessions?org=&repo=&branch=&status=&limit=&before=`: sessions across
 * repositories, newest first, each as the builds list shows it; `before` (the last `session`
 * of a page) gives the next, older page.
 * `GET /api/v1/sessions/:session`: the session as the `stop` payload shows it, plus its tests,
 * hooks (each with the end of its output), workers' setup and artifacts.
 * `GET /api/v1/sessions/:session/artifacts`: the files the build kept, `[{path, worker, size,
 * url}]`; `url` downloads one, with the report's token in it (api/artifacts.ts).
 * `POST /api/v1/sessions/:session/stop {stopped_by}`: stop it, queued or building.
 * `POST /api/v1/sessions/:session/rebuild`: build its trigger again, at the commit it built,
 * forced: `201 {session, guid, url, status_uri}` of the new session (api/rebuild.ts).
 */
import { visibleOrgs } from '../../../core/access';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { ApiDeps } from '../../deps';
import { HttpError, parseId } from '../../http';
import { notFound, validate } from '../../../app/errors';
import { stoppedBy } from '../../../core/access';
import { loadArtifactViews, loadSessionView, sessionListView } from '../../views';
import { SESSION_STATUSES } from '../../../core/types';
import { rebuildSession } from '../../rebuild';
import { requestStop } from '../../stopSession';
import { listSessions, reportTokenOf } from '../../../db/sessions';
import { loadOrg } from '../../../app/orgs';
import { loadRepo } from '../../../app/repos';
import { described, documented, errors, SessionParams } from '../../openapi/shapes';

const StopBody = z.strictObject({
  // The handle or e-mail address of who stopped it (spec §2 `stopped_by`): a person's own
  // token stops as that person, whatever this says; the admin token must name someone.
  stopped_by: z.string().trim().min(1).max(200).optional(),
}).meta({ examples: [{ stopped_by: 'dev@example.com' }] });

const RebuildBody = z.strictObject({
  // Resolve each image's tag to a digest again (the default runs the digests the session ran).
  resolve_images: z.boolean().optional(),
}).meta({ examples: [{}, { resolve_images: true }] });

const Rebuilt = z.object({ session: z.number().int(), guid: z.uuid(), url: z.string().describe('the new session’s report'), status_uri: z.string() });

export const SessionList = z.object({
  // An organization by id or name; a repository by id or `<org>/<name>`.
  org: z.string().trim().min(1).max(255).optional(),
  repo: z.string().trim().min(1).max(600).optional(),
  branch: z.string().min(1).max(1024).optional(),
  status: z.enum(SESSION_STATUSES).optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
  before: z.coerce.number().int().min(1).optional(),
});

export function registerSessionRoutes(app: FastifyInstance, deps: ApiDeps): void {
  app.get('/sessions', documented({ tag: 'sessions', summary: 'List sessions (builds), newest first', description: '`before` (the last `session` of a page) gives the next, older page.', querystring: SessionList, response: { 200: z.array(described('a session as the builds list shows it')), ...errors(400, 404) } }), async (request) => {
    const q = validate(SessionList, request.query, 'query');
    const orgId = q.org === undefined ? undefined : (await loadOrg(deps.pool, q.org)).id;
    const repoId = q.repo === undefined ? undefined : (await loadRepo(deps.pool, q.repo)).id;
    const rows = await listSessions(deps.pool, { orgId, orgIds: visibleOrgs(request.principal!), repoId, branch: q.branch, status: q.status, before: q.before, limit: q.limit });
    return rows.map((r) => sessionListView(r, deps.config));
  });

  app.get<{ Params: { session: string } }>('/sessions/:session', documented({ tag: 'sessions', summary: 'Show a session', description: 'As the `stop` payload shows it, plus its tests, hooks, workers’ setup and artifacts.', params: SessionParams, response: { 200: described('the session'), ...errors(404) } }), async (request) => {
    // Without test output: that can be large, and the report page has it.
    const view = await loadSessionView(deps.pool, deps.config, parseId(request.params.session, 'session'));
    if (!view) throw notFound('session');
    return view;
  });

  app.get<{ Params: { session: string } }>('/sessions/:session/artifacts', documented({ tag: 'sessions', summary: 'The files a build kept', params: SessionParams, response: { 200: z.array(z.looseObject({ path: z.string(), worker: z.number().int(), size: z.number().int(), url: z.string() })), ...errors(404) } }), async (request) => {
    const id = parseId(request.params.session, 'session');
    const token = await reportTokenOf(deps.pool, id);
    if (token === undefined) throw notFound('session');
    return loadArtifactViews(deps.pool, deps.config, id, token);
  });

  // 202: the stop is asked for; the session's `stop` event (status `stopped`, `stopped_by`)
  // says when it is done. A session that already ended is a 409.
  app.post<{ Params: { session: string } }>('/sessions/:session/stop', documented({ tag: 'sessions', summary: 'Stop a session, queued or building', description: '202: the stop is asked for; the session’s `stop` event says when it is done.', params: SessionParams, body: StopBody, response: { 202: described('the stop asked for'), ...errors(400, 404, 409, 503) } }), async (request, reply) => {
    const id = parseId(request.params.session, 'session');
    const { stopped_by } = validate(StopBody, request.body ?? {});
    const who = stoppedBy(request.principal!) ?? stopped_by;
    if (who === undefined) throw new HttpError(400, 'invalid request', 'say who stops it: the admin token is nobody', 'stopped_by');
    return reply.code(202).send(await requestStop(deps, id, who));
  });

  app.post<{ Params: { session: string } }>('/sessions/:session/rebuild', documented({ tag: 'sessions', summary: 'Build a session’s trigger again', description: 'At the commit it built, forced, in the image digests it ran unless `resolve_images`.', params: SessionParams, body: RebuildBody, response: { 201: Rebuilt, ...errors(400, 404, 409, 503) } }), async (request, reply) => {
    const id = parseId(request.params.session, 'session');
    const { resolve_images } = validate(RebuildBody, request.body ?? {});
    const { session, guid } = await rebuildSession(deps, id, (err) => request.log.warn({ err, session: id }, '`received` not sent by the API; the session will send it'), { resolveImages: resolve_images });
    const view = await loadSessionView(deps.pool, deps.config, session);
    return reply.code(201).send({ session, guid, url: view!.url, status_uri: `${deps.config.baseUrl}/ci_events/${guid}/guid` });
  });
}
