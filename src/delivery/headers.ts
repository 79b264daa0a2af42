/**
 * The one header policy of outgoing webhooks: which headers are Sluice's, whatever a closure or
 * a caller asks for. The sandbox (closure.ts), the composer (compose.ts) and the sender
 * (send.ts) all ask here, so the lists cannot drift apart.
 */

/**
 * Headers that frame the connection or the body. undici owns them (and rejects some outright),
 * so they are dropped wherever they come from.
 */
export const FRAMING_HEADERS: ReadonlySet<string> = new Set([
  'host',
  'content-length',
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'expect',
]);

/** Headers that identify and sign a delivery: always Sluice's values, never a closure's. */
export function isSluiceHeader(lower: string): boolean {
  return lower === 'user-agent' || lower.startsWith('x-sluice-') || lower === 'webhook-id' || lower === 'webhook-timestamp' || lower === 'webhook-signature';
}

/**
 * May a closure set header `name`? Not a framing header, not one of Sluice's, and not
 * `Authorization` when the webhook has credentials of its own.
 */
export function closureMaySet(name: string, opts: { credentials: boolean }): boolean {
  const lower = name.toLowerCase();
  return !FRAMING_HEADERS.has(lower) && !isSluiceHeader(lower) && !(opts.credentials && lower === 'authorization');
}
