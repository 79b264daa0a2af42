/**
 * The one rule for storing text that came from outside (a provider, a test's output, a
 * server's answer): PostgreSQL text and jsonb refuse NUL, jsonb also lone surrogates. They
 * become U+FFFD, so storage never silently drops a character and an insert never fails on them.
 */

// eslint-disable-next-line no-control-regex
const NOT_STORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** `s` with NUL and lone surrogates replaced by U+FFFD. */
export function storableText(s: string): string {
  return s.replace(NOT_STORABLE, '\ufffd');
}

/** `s` made storable, or null. */
export function storableTextOrNull(s: string | null): string | null {
  return s === null ? null : storableText(s);
}

/** JSON text PostgreSQL takes as jsonb: every string in `value` made storable. */
export function jsonbText(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => (typeof v === 'string' ? storableText(v) : v));
}
