/**
 * `GET /api/v1/sessions/:session/output?follow=&after=`: what the session's test files, batches
 * and hooks printed while they ran (live output, issue 22), masked, in order (app/output.ts):
 * server-sent events when the request accepts `text/event-stream` (each event's `id` is its
 * `seq`), NDJSON otherwise, one event a line.
 * - `follow=true`: go on with new output as it comes, until the session is over (a `done` event).
 * - `after=<seq>`: only what came after that event; a reconnecting EventSource's `Last-Event-ID`
 *   says the same.
 * A scope of its own under /api/v1 with the admin token, for its server-sent events plugin.
 */
import fastifySse from '@fastify/sse';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { ApiDeps } from '../../deps';
import { notFound, parseId, validate } from '../../../app/errors';
import { outputEvents, sessionExists } from '../../../app/output';
import { asServerSentEvents, startAfter } from '../../output';
import { documented, errors, SessionParams } from '../../openapi/shapes';

const flag = z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1');

export const OutputQuery = z.strictObject({
  follow: flag.default(false),
  after: z.coerce.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional(),
});

const outputDoc = documented({
  tag: 'sessions',
  summary: 'A session’s live output',
  description:
    'What its test files, batches and hooks printed, masked, in order: server-sent events for `Accept: text/event-stream` (each `id` is its `seq`; `Last-Event-ID` resumes), NDJSON otherwise. ' +
    '`follow=true` goes on until the session is over (a `done` event).',
  params: SessionParams,
  querystring: OutputQuery,
  produces: ['application/x-ndjson', 'text/event-stream'],
  response: { 200: z.string().describe('one event a line (NDJSON) or a server-sent event each'), ...errors(400, 404) },
});

export async function registerOutputRoutes(scope: FastifyInstance, deps: ApiDeps): Promise<void> {
  await scope.register(fastifySse, { heartbeatInterval: 15_000 });
  let closing = false;
  scope.addHook('preClose', async () => {
    closing = true;
  });

  scope.get<{ Params: { session: string } }>('/sessions/:session/output', { sse: 'dual', ...outputDoc }, async (request, reply) => {
    const id = parseId(request.params.session, 'session');
    const q = validate(OutputQuery, request.query, 'query');
    const after = startAfter(q.after, request.headers['last-event-id']);
    if (!(await sessionExists(deps.pool, id))) throw notFound('session');
    let gone = false;
    reply.raw.once('close', () => {
      gone = true;
    });
    const events = outputEvents(deps.pool, id, { after, follow: q.follow, isOpen: () => !gone && !closing });
    if (reply.sse) {
      reply.sse.sendHeaders(); // now: a follower may wait a while for the first event
      reply.raw.flushHeaders(); // writeHead alone sends nothing until the first write
      await reply.sse.send(asServerSentEvents(events));
      reply.sse.close();
      return reply;
    }
    // NDJSON, written here: headers at once (Fastify would send them with the first line), a line an event.
    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, { 'content-type': 'application/x-ndjson; charset=utf-8', 'cache-control': 'no-cache' });
    res.flushHeaders();
    try {
      for await (const e of events) {
        if (!res.write(`${JSON.stringify(e)}\n`)) await new Promise((resolve) => (res.once('drain', resolve), res.once('close', resolve)));
      }
      res.end();
    } catch (err) {
      request.log.error({ err, session: id }, 'the output stream failed');
      res.destroy();
    }
  });
}
