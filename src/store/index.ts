/**
 * The blob store of dependency caches and build artifacts (SLUICE_CACHE_URL): a directory, on
 * the machine or on a mount every runner shares, or an S3-compatible bucket for runners on many
 * machines. Runners write to it, the API reads artifacts from it, workers delete a session's
 * artifacts with the session. Keys are relative paths of `/`-separated segments; what a key
 * means is its caller's business (steps/cache, steps/artifacts).
 */
import type { StoreSettings } from '../config';
import type { BlobStore } from './blobStore';
import { DirStore } from './dir';
import { S3Store } from './s3';

export { checkKey, type BlobStore } from './blobStore';

export function openStore(settings: StoreSettings): BlobStore {
  if (settings.kind === 'dir') return new DirStore(settings.dir);
  return new S3Store(settings);
}
