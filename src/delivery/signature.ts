/**
 * Standard Webhooks signatures (https://www.standardwebhooks.com/), optional per webhook: a
 * receiver that holds the webhook's secret can tell that Sluice sent a request, that its body
 * was not changed, and (from the timestamp) that it is not an old one played again.
 *
 *   webhook-id:        the event's xid (the same on every attempt, so receivers dedupe on it)
 *   webhook-timestamp: seconds since the epoch, of this attempt
 *   webhook-signature: v1,<base64 HMAC-SHA256 over "<id>.<timestamp>.<body>">
 *
 * The secret is `whsec_` + base64 of 32 random bytes; the HMAC key is those bytes.
 */
import { createHmac, randomBytes } from 'node:crypto';

export const SECRET_PREFIX = 'whsec_';
const SECRET_BYTES = 32;

export function newSigningSecret(): string {
  return SECRET_PREFIX + randomBytes(SECRET_BYTES).toString('base64');
}

function keyOf(secret: string): Buffer {
  const key = Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64');
  if (key.length < 24) throw new Error('a signing secret must hold at least 24 bytes');
  return key;
}

/** The `webhook-signature` value for one request. */
export function signatureOf(secret: string, id: string, timestampSeconds: number, body: string): string {
  const mac = createHmac('sha256', keyOf(secret)).update(`${id}.${timestampSeconds}.${body}`, 'utf8').digest('base64');
  return `v1,${mac}`;
}

/** The three Standard Webhooks headers of one attempt. */
export function signatureHeaders(secret: string, id: string, body: string, now: Date = new Date()): Record<string, string> {
  const timestamp = Math.floor(now.getTime() / 1000);
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signatureOf(secret, id, timestamp, body),
  };
}
