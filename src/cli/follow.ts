/**
 * Follows a session's live output (`GET /api/v1/sessions/:id/output?follow=true`, NDJSON, one
 * event a line) until its `done` event. A stream that breaks off (the API restarting, a proxy's
 * idle timeout) is opened again after the last event seen, a few times before giving up.
 */
import type { ApiClient } from './client';
import { errorOf } from './client';
import { ApiError, CliError } from './errors';
import { OutputEvent } from './schemas';

/** Reconnections in a row without an event in between, before the follow gives up. */
const MAX_RECONNECTS = 5;
const RECONNECT_BASE_MS = 500;

export async function* followOutput(client: ApiClient, session: number): AsyncGenerator<OutputEvent> {
  let after = 0;
  let failures = 0;
  for (;;) {
    let lastProblem = 'the stream ended before the build did';
    try {
      const res = await client.send('GET', `/api/v1/sessions/${session}/output?follow=true&after=${after}`, { headers: { accept: 'application/x-ndjson' } });
      if (!res.ok) throw errorOf(res.status, await res.text());
      for await (const line of lines(res)) {
        const event = parseEvent(line);
        failures = 0;
        yield event;
        if (event.event === 'done') return;
        after = event.seq;
      }
    } catch (err) {
      // A refusal (no such session, a token refused) or an answer not understood does not get
      // better by asking again; a 5xx (the API restarting behind a proxy) may.
      if (err instanceof CliError && !(err instanceof ApiError && err.status >= 500)) throw err;
      lastProblem = (err as Error).message;
    }
    if (++failures > MAX_RECONNECTS) throw new CliError(`lost the output of session ${session}: ${lastProblem}`);
    // A pause before asking again, longer each time: the API may be restarting.
    await new Promise((resolve) => setTimeout(resolve, RECONNECT_BASE_MS * failures));
  }
}

function parseEvent(line: string): OutputEvent {
  let json: unknown;
  try {
    json = JSON.parse(line);
  } catch {
    throw new CliError('the output stream sent a line that is not JSON');
  }
  const parsed = OutputEvent.safeParse(json);
  if (!parsed.success) throw new CliError(`the output stream sent an event this client does not understand (${parsed.error.issues[0]?.message})`);
  return parsed.data;
}

/** The body's lines as they arrive; a last line without its newline is cut off, not an event. */
async function* lines(res: Response): AsyncGenerator<string> {
  if (!res.body) return;
  const decoder = new TextDecoder();
  let pending = '';
  for await (const chunk of res.body) {
    pending += decoder.decode(chunk as Uint8Array, { stream: true });
    let nl: number;
    while ((nl = pending.indexOf('\n')) >= 0) {
      const line = pending.slice(0, nl);
      pending = pending.slice(nl + 1);
      if (line.trim() !== '') yield line;
    }
  }
}
