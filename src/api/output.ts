/**
 * What only HTTP adds to a session's live output (app/output.ts has the events): where a
 * reconnecting client resumes (its Last-Event-ID), and the events as server-sent events, for
 * `GET /api/v1/sessions/:id/output` (routes/admin/output.ts) and the build page (web/output.ts).
 */
import type { DoneEvent, OutputEvent } from '../app/output';
import { HttpError } from './http';

/** Where to start: `after`, else a reconnecting client's Last-Event-ID, else the start. */
export function startAfter(after: number | undefined, lastEventId: string | string[] | undefined): number {
  if (after !== undefined) return after;
  if (lastEventId === undefined) return 0;
  const value = Array.isArray(lastEventId) ? lastEventId[0] : lastEventId;
  if (value === undefined || !/^\d{1,15}$/.test(value.trim())) throw new HttpError(400, 'invalid request', 'expected the seq of an event', 'Last-Event-ID');
  return Number(value.trim());
}

/** The events as server-sent events: `output` with its seq as id, then `done`. */
export async function* asServerSentEvents(events: AsyncGenerator<OutputEvent | DoneEvent>) {
  for await (const e of events) yield e.event === 'output' ? { id: String(e.seq), event: e.event, data: e } : { event: e.event, data: e };
}

