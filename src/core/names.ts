/**
 * The rules every name that reaches git, hg or a report page obeys, whichever trigger or
 * admin request brought it: branch names (git's ref-name rules), single-word tokens (commit
 * ids, refs, profile names), links. Pure.
 */

export const MAX_NAME_BYTES = 255;
export const MAX_URL_LENGTH = 2048;

// eslint-disable-next-line no-control-regex
export const CONTROL = /[\u0000-\u001f\u007f]/;

/**
 * Why `name` is not acceptable as a branch name, or undefined when it is. The rules of
 * `git check-ref-format --branch`, plus a length cap; applied to hg branches too (so an hg
 * branch with a space in its name cannot be built).
 */
export function branchNameProblem(name: string): string | undefined {
  if (name === '') return 'must not be empty';
  if (Buffer.byteLength(name, 'utf8') > MAX_NAME_BYTES) return `must be at most ${MAX_NAME_BYTES} bytes`;
  if (!isWellFormed(name)) return 'must be valid Unicode';
  if (CONTROL.test(name)) return 'must not contain control characters';
  if (/\s/.test(name)) return 'must not contain whitespace';
  if (name.startsWith('-')) return 'must not start with "-"';
  if (name.includes('..')) return 'must not contain ".."';
  if (/[~^:?*[\\]/.test(name)) return 'must not contain any of ~ ^ : ? * [ \\';
  if (name === '@' || name.includes('@{')) return 'must not be "@" or contain "@{"';
  if (name.startsWith('/') || name.endsWith('/') || name.includes('//')) return 'must not start or end with "/" or contain "//"';
  if (name.endsWith('.')) return 'must not end with "."';
  for (const part of name.split('/')) {
    if (part.startsWith('.')) return 'no part may start with "."';
    if (part.endsWith('.lock')) return 'no part may end with ".lock"';
  }
  return undefined;
}

/** Why `value` is no acceptable commit id, ref or profile name: one word that cannot be read as a command-line option. */
export function tokenProblem(value: string): string | undefined {
  if (Buffer.byteLength(value, 'utf8') > MAX_NAME_BYTES) return `must be at most ${MAX_NAME_BYTES} bytes`;
  if (CONTROL.test(value) || /\s/.test(value)) return 'must not contain whitespace or control characters';
  if (!isWellFormed(value)) return 'must be valid Unicode';
  if (value.startsWith('-')) return 'must not start with "-"';
  return undefined;
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** No lone UTF-16 surrogate: such a string has no UTF-8 form (PostgreSQL refuses it in jsonb). */
export function isWellFormed(value: string): boolean {
  return !LONE_SURROGATE.test(value);
}

export function isHttpUrl(value: string): boolean {
  try {
    const u = new URL(value);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '';
  } catch {
    return false;
  }
}

/** This machine's own names (a URL's `hostname`): where plain HTTP crosses no network. */
export const isLoopbackHost = (hostname: string): boolean => ['127.0.0.1', 'localhost', '[::1]'].includes(hostname);
