/**
 * A build's artifacts as the API serves them: the blob store it reads them from and the
 * download itself (their download URL is app/builds.ts's, with the views that list them).
 *
 * A download is a file the build wrote, and anyone who can open a pull request writes builds:
 * an HTML file from a build must never run as a page of Sluice's origin (where the sign-in
 * cookie and the report tokens live). So every download is an attachment of type
 * application/octet-stream with `X-Content-Type-Options: nosniff`, and the response carries
 * `Content-Security-Policy: sandbox; default-src 'none'`: were a browser to show it anyway, it
 * would be a page of an opaque origin with no script, no plugin and nothing loaded. It is
 * streamed from the store, never held whole in memory.
 */
import path from 'node:path';
import type { FastifyReply } from 'fastify';
import type { BlobStore } from '../store';

/**
 * The file name a download is saved as: the last segment of the artifact's path, without
 * control characters or anything a file system or a header could read as structure, never
 * empty or a dot-name that hides itself.
 */
export function downloadName(artifactPath: string): string {
  const base = path.posix.basename(artifactPath);
  const cleaned = base
    // eslint-disable-next-line no-control-regex
    .replace(/[\u0000-\u001f\u007f-\u009f/\\:*?"<>|;]/g, '_')
    .replace(/^[.\s]+|[.\s]+$/g, '')
    .slice(0, 200);
  return cleaned === '' ? 'artifact' : cleaned;
}

/** `attachment; filename*=UTF-8''<name>` (RFC 6266, RFC 8187): the name percent-encoded, nothing quoted. */
export function attachmentHeader(artifactPath: string): string {
  const encoded = encodeURIComponent(downloadName(artifactPath)).replace(/['()*!]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `attachment; filename*=UTF-8''${encoded}`;
}

/** Headers every download carries, whatever the file. */
export const DOWNLOAD_HEADERS: Readonly<Record<string, string>> = {
  'content-type': 'application/octet-stream',
  'x-content-type-options': 'nosniff',
  'content-security-policy': "sandbox; default-src 'none'",
  // The URL carries the report's token: not into another site's logs, not into a shared cache.
  'referrer-policy': 'no-referrer',
  'cache-control': 'private, no-store',
  'cross-origin-resource-policy': 'same-origin',
};

/** Sends the blob at `storeKey` as a download of `artifactPath`; false when the store has no such blob. */
export async function sendArtifact(reply: FastifyReply, store: BlobStore, storeKey: string, artifactPath: string): Promise<boolean> {
  const blob = await store.open(storeKey);
  if (!blob) return false;
  void reply.headers({ ...DOWNLOAD_HEADERS, 'content-disposition': attachmentHeader(artifactPath), 'content-length': String(blob.size) });
  void reply.send(blob.stream);
  return true;
}
