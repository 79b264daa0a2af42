/**
 * `GET /api/v1/sessions?org=&repo=&branch=&status=&limit=&before=`: sessions across
 * repositories, newest first, each as the builds list shows it; `before` (the last `session`
 * of a page) gives the next, older page.
 * `GET /api/v1/sessions/:session`: the session as the `stop` payload shows it, plus its tests,
 * hooks (each with the end of its output), workers' setup and artifacts.
 * `GET /api/v1/sessions/:session/artifacts`: the files the build kept, `[{path, worker, size,
 * url}]`; `url` downloads one, with the report's token in it (api/artifacts.ts).
 * `GET /api/v1/sessions/:session/cases?status=&q=&test_file=&page=&per_page=`: its test cases,
 * failing first, from every run's reports and its junit_pattern files (issue 37).
 * `POST /api/v1/sessions/:session/stop {stopped_by}`: stop it, queued or building.
 * `POST /api/v1/sessions/:session/rebuild`: build its trigger again, at the commit it built,
 * forced: `201 {session, guid, url, status_uri}` of the new session.
 * What each decides is the application layer's (app/builds.ts); here is only HTTP.
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { ApiDeps } from '../../deps';
import { parseId, validate } from '../../../app/errors';
import { CaseQuery, listBuilds, rebuildAsked, RebuildBody, sessionArtifacts, sessionCases, SessionList, showSession, stopAsked, StopBody } from '../../../app/builds';
import { described, documented, errors, SessionParams } from '../../openapi/shapes';

const Rebuilt = z.object({ session: z.number().int(), guid: z.uuid(), url: z.string().describe('the new session’s report'), status_uri: z.string() });

export function registerSessionRoutes(app: FastifyInstance, deps: ApiDeps): void {
  app.get('/sessions', documented({ tag: 'sessions', summary: 'List sessions (builds), newest first', description: '`before` (the last `session` of a page) gives the next, older page.', querystring: SessionList, response: { 200: z.array(described('a session as the builds list shows it')), ...errors(400, 404) } }), async (request) =>
    listBuilds(deps, validate(SessionList, request.query, 'query'), request.principal!),
  );

  app.get<{ Params: { session: string } }>('/sessions/:session', documented({ tag: 'sessions', summary: 'Show a session', description: 'As the `stop` payload shows it, plus its tests, hooks, workers’ setup and artifacts.', params: SessionParams, response: { 200: described('the session'), ...errors(404) } }), async (request) =>
    showSession(deps, parseId(request.params.session, 'session')),
  );

  app.get<{ Params: { session: string } }>('/sessions/:session/artifacts', documented({ tag: 'sessions', summary: 'The files a build kept', params: SessionParams, response: { 200: z.array(z.looseObject({ path: z.string(), worker: z.number().int(), size: z.number().int(), url: z.string() })), ...errors(404) } }), async (request) =>
    sessionArtifacts(deps, parseId(request.params.session, 'session')),
  );

  app.get<{ Params: { session: string } }>('/sessions/:session/cases', documented({ tag: 'sessions', summary: 'A build’s test cases', description: 'From the JUnit reports every run leaves in `SLUICE_REPORT_DIR` and the files a suite’s `junit_pattern` names; failing (failed, error) first, then in the order they were read. `failure` is where the report or its stack trace puts the failure; `flaky`, a case that failed and passed when its file ran again.', params: SessionParams, querystring: CaseQuery, response: { 200: described('`{total, page, per_page, cases}`'), ...errors(400, 404) } }), async (request) =>
    sessionCases(deps, parseId(request.params.session, 'session'), request.query),
  );

  // 202: the stop is asked for; the session's `stop` event (status `stopped`, `stopped_by`)
  // says when it is done. A session that already ended is a 409.
  app.post<{ Params: { session: string } }>('/sessions/:session/stop', documented({ tag: 'sessions', summary: 'Stop a session, queued or building', description: '202: the stop is asked for; the session’s `stop` event says when it is done.', params: SessionParams, body: StopBody, response: { 202: described('the stop asked for'), ...errors(400, 404, 409, 503) } }), async (request, reply) => {
    const id = parseId(request.params.session, 'session');
    return reply.code(202).send(await stopAsked(deps, id, request.body, request.principal!));
  });

  app.post<{ Params: { session: string } }>('/sessions/:session/rebuild', documented({ tag: 'sessions', summary: 'Build a session’s trigger again', description: 'At the commit it built, forced, in the image digests it ran unless `resolve_images`.', params: SessionParams, body: RebuildBody, response: { 201: Rebuilt, ...errors(400, 404, 409, 503) } }), async (request, reply) => {
    const id = parseId(request.params.session, 'session');
    const { session, guid, url } = await rebuildAsked(deps, id, request.body, (err) => request.log.warn({ err, session: id }, '`received` not sent by the API; the session will send it'));
    return reply.code(201).send({ session, guid, url, status_uri: `${deps.config.baseUrl}/ci_events/${guid}/guid` });
  });
}
