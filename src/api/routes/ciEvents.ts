/**
 * `GET /ci_events/<guid>/guid`, the trigger response's `status_uri`: what became of a trigger
 * and its sessions. The spec leaves method and shape open; the guid is unguessable, so like the
 * trigger URL itself it needs no other credential.
 */
import type { FastifyInstance } from 'fastify';
import type { ApiDeps } from '../deps';
import { z } from 'zod';
import { databaseAway } from '../http';
import { notFound } from '../../app/errors';
import { described, documented, errors } from '../openapi/shapes';
import { loadCiEventView } from '../../app/builds';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const ciEventDoc = documented({
  tag: 'triggers',
  summary: 'What became of a trigger',
  description:
    'The trigger answer’s `status_uri`. The guid is unguessable, so like the trigger URL it needs no other credential. ' +
    'A trigger is recorded a moment after its answer (later while the database is away): until then the API that accepted it answers `recorded: false` and no sessions yet.',
  public: true,
  params: z.object({ guid: z.uuid().describe('the trigger answer’s `guid`') }),
  response: { 200: described('the trigger (its repository, branch, decision) and its sessions with their status and report `url`'), ...errors(404) },
});

export function registerCiEventRoutes(app: FastifyInstance, deps: ApiDeps): void {
  app.get<{ Params: { guid: string } }>('/ci_events/:guid/guid', ciEventDoc, async (request) => {
    const { guid } = request.params;
    // A malformed guid cannot name an event; checking here also keeps it out of a uuid cast error.
    if (!UUID.test(guid)) throw notFound('ci event');
    const id = guid.toLowerCase();
    // Accepted here a moment ago (or while PostgreSQL is away): its records are on their way.
    const pending = deps.pending?.find(id);
    const view = await loadCiEventView(deps.pool, deps.config, id).catch((err: unknown) => {
      if (pending && databaseAway(err)) return undefined;
      throw err;
    });
    if (view) return view;
    if (!pending) throw notFound('ci event');
    return {
      guid: id,
      received_at: new Date(pending.acceptedAt).toISOString(),
      provider: pending.provider,
      decision: pending.decision,
      reason: pending.reason,
      branch: pending.branch,
      recorded: false,
      sessions: [],
    };
  });
}
