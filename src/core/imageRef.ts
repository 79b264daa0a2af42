/**
 * Image references as people write them (`node:22`, `ghcr.io/acme/ci:3`,
 * `registry.example.com:5000/team/ci@sha256:…`), parsed and normalized the way Docker does
 * (distribution's reference grammar): a first component with a `.` or a `:`, or `localhost`, is
 * a registry, anything else is Docker Hub's (`docker.io`), where a one-component name is an
 * official image (`library/…`); no tag and no digest is `latest`. Pure, with no imports, so
 * workflow code may compare references (a rebuild's pinned digests are keyed by them).
 */

export interface ImageRef {
  /** `docker.io`, `ghcr.io`, `127.0.0.1:5000`. */
  registry: string;
  /** `library/node`, `acme/ci`. */
  repository: string;
  /** null when only a digest was given. */
  tag: string | null;
  /** `sha256:<64 hex>`, when pinned. */
  digest: string | null;
}

export const DOCKER_HUB = 'docker.io';
/** The names Docker Hub's registry answers to, all meaning DOCKER_HUB. */
const HUB_ALIASES = new Set(['docker.io', 'index.docker.io', 'registry-1.docker.io']);
export const MAX_IMAGE_REF = 512;

const COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const TAG = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;
export const DIGEST = /^sha256:[a-f0-9]{64}$/;
// A host name or IPv4 address, optionally with a port; or a bracketed IPv6 address with a port.
const HOST = /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$/;

export type ParsedImageRef = { ok: true; ref: ImageRef } | { ok: false; error: string };

export function parseImageRef(text: string): ParsedImageRef {
  const fail = (error: string): ParsedImageRef => ({ ok: false, error });
  const input = text.trim();
  if (input === '') return fail('must name an image, e.g. node:22');
  if (input.length > MAX_IMAGE_REF) return fail(`must be at most ${MAX_IMAGE_REF} characters`);
  if (/\s/.test(input)) return fail('must not contain spaces');
  if (input.includes('://')) return fail('is an image reference, not a URL (write registry.example.com/team/image:tag)');

  let rest = input;
  let digest: string | null = null;
  const at = rest.indexOf('@');
  if (at !== -1) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!DIGEST.test(digest)) return fail('has a digest that is not sha256:<64 lowercase hex digits>');
  }
  let tag: string | null = null;
  // A tag's `:` comes after the last `/` (a registry's port comes before it).
  const colon = rest.lastIndexOf(':');
  if (colon > rest.lastIndexOf('/')) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
    if (!TAG.test(tag)) return fail(`has a tag ${JSON.stringify(tag)} that is not valid (letters, digits, _, . and -, at most 128, not starting with . or -)`);
  }

  const parts = rest.split('/');
  let registry = DOCKER_HUB;
  const first = parts[0]!;
  if (parts.length > 1 && (first.includes('.') || first.includes(':') || first === 'localhost')) {
    if (!HOST.test(first)) return fail(`has a registry ${JSON.stringify(first)} that is not a host name with an optional port`);
    registry = HUB_ALIASES.has(first.toLowerCase()) ? DOCKER_HUB : first.toLowerCase();
    parts.shift();
  }
  if (parts.length === 0 || parts.some((p) => p === '')) return fail('has an empty name component');
  for (const part of parts) {
    if (!COMPONENT.test(part)) {
      return fail(`has a name component ${JSON.stringify(part)} that is not valid (lowercase letters, digits and separators . _ __ -)`);
    }
  }
  if (registry === DOCKER_HUB && parts.length === 1) parts.unshift('library');
  const repository = parts.join('/');
  if (repository.length > 255) return fail('has a name longer than 255 characters');
  if (tag === null && digest === null) tag = 'latest';
  return { ok: true, ref: { registry, repository, tag, digest } };
}

/** The reference in full: `docker.io/library/node:22`, `ghcr.io/acme/ci:3@sha256:…`. */
export function formatImageRef(ref: ImageRef): string {
  return `${ref.registry}/${ref.repository}${ref.tag !== null ? `:${ref.tag}` : ''}${ref.digest !== null ? `@${ref.digest}` : ''}`;
}

/** The reference pinned to `digest` (the tag kept for people to read). */
export function pinImageRef(ref: ImageRef, digest: string): ImageRef {
  return { ...ref, digest };
}

/** The same image at another registry (a mirror of Docker Hub); the repository, tag and digest stay. */
export function atRegistry(ref: ImageRef, registry: string): ImageRef {
  return { ...ref, registry };
}

/** A registry host as people name it (`ghcr.io`, `127.0.0.1:5000`, `docker.io`), normalized; or why it is not one. */
export function parseRegistryHost(text: string): { ok: true; host: string } | { ok: false; error: string } {
  const host = text.trim().toLowerCase();
  if (host.includes('/') || !HOST.test(host)) return { ok: false, error: 'must be a registry host with an optional port (ghcr.io, registry.example.com:5000, docker.io), not a URL or an image' };
  return { ok: true, host: HUB_ALIASES.has(host) ? DOCKER_HUB : host };
}

/** The normalized text of a reference as written, or null when it does not parse (a rebuild's pins are keyed by it). */
export function normalizeImageRef(text: string): string | null {
  const parsed = parseImageRef(text);
  return parsed.ok ? formatImageRef(parsed.ref) : null;
}
