/**
 * What one delivery attempt sends: the event (or the closure's rendering of it), Sluice's own
 * headers on top, and a signature when the webhook has a secret. Pure but for the sandbox.
 */
import type { OutgoingPayload } from '../core/types';
import { runClosure, type ClosureLimits, type ClosureResult } from './closure';
import { closureMaySet } from './headers';
import { USER_AGENT } from './send';
import { signatureHeaders } from './signature';

/** The test event `POST /api/v1/webhooks/:id/ping` sends. */
export interface PingPayload {
  event: 'ping';
  timestamp: string;
  xid: string;
  webhook_id: number;
  org_name: string;
}

/** What an attempt sends (before any closure): a lifecycle event (spec §2) or a ping. */
export type EventPayload = OutgoingPayload | PingPayload;

export interface ComposedRequest {
  /** Every header but Authorization (send.ts adds it from the credentials), lower-case names. */
  headers: Record<string, string>;
  body: string;
  /** What the closure made of the payload; null when the webhook has none. */
  closure: ClosureResult | null;
}

/**
 * The closure's body and headers when it ran `ok` (its headers under ours), else the default
 * payload as JSON. Signed when the webhook has a secret.
 */
export async function composeRequest(
  payload: EventPayload,
  closure: string | null,
  opts: { credentials: boolean; secret: string | null; closureLimits?: ClosureLimits; now?: Date },
): Promise<ComposedRequest> {
  const ran = closure === null ? null : await runClosure(closure, payload, opts.closureLimits);
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  let body = JSON.stringify(payload);
  if (ran?.kind === 'ok') {
    body = ran.body;
    for (const [name, value] of Object.entries(ran.headers)) {
      if (closureMaySet(name, { credentials: opts.credentials })) headers[name.toLowerCase()] = value;
    }
  }
  headers['user-agent'] = USER_AGENT;
  headers['x-sluice-event'] = payload.event;
  headers['x-sluice-delivery'] = payload.xid;
  if (opts.secret !== null) Object.assign(headers, signatureHeaders(opts.secret, payload.xid, body, opts.now));
  return { headers, body, closure: ran };
}
