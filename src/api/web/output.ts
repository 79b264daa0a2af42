/**
 * The build page's live output (issue 22): `GET /builds/:id/output`, server-sent events for the
 * signed-in page (assets/output.js), as the page's `/builds/:id/live` is for its status. A page
 * that opens gets the processes running now, the last PAGE_TAIL_CHARS of each, then what they
 * print next until the build is over; a reconnecting EventSource (Last-Event-ID) gets every row
 * after its last one. The same events as `GET /api/v1/sessions/:id/output` (app/output.ts).
 */
import type { FastifyInstance } from 'fastify';
import { parseId } from '../../app/errors';
import { HttpError } from '../http';
import { outputEvents, sessionExists } from '../../app/output';
import { asServerSentEvents, startAfter } from '../output';
import type { WebScope } from './pages';

/** What a page that opens gets of each running process: about what it keeps (output.js). */
export const PAGE_TAIL_CHARS = 64 * 1024;

export function registerOutputPages(web: FastifyInstance, { deps }: WebScope): void {
  let closing = false;
  web.addHook('preClose', async () => {
    closing = true;
  });
  web.get<{ Params: { id: string } }>('/builds/:id/output', { sse: 'only' }, async (request, reply) => {
    const id = parseId(request.params.id, 'build');
    const lastEventId = request.headers['last-event-id'];
    const after = startAfter(undefined, lastEventId);
    if (!(await sessionExists(deps.pool, id))) throw new HttpError(404, 'not found', `no build #${id}`);
    const events = outputEvents(deps.pool, id, {
      after,
      follow: true,
      runningTail: lastEventId === undefined ? PAGE_TAIL_CHARS : undefined,
      isOpen: () => reply.sse.isConnected && !closing,
    });
    reply.sse.sendHeaders(); // now: the page may wait a while for the first event
    reply.raw.flushHeaders(); // writeHead alone sends nothing until the first write
    await reply.sse.send(asServerSentEvents(events));
    reply.sse.close();
  });
}
