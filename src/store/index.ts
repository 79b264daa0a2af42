/**
 * The blob store of dependency caches and build artifacts (SLUICE_CACHE_URL): a directory, on
 * the machine or on a mount every runner shares, or an S3-compatible bucket for runners on many
 * machines. Runners write to it, the API reads artifacts from it, workers delete a session's
 * artifacts with the session. Keys are relative paths of `/`-separated segments; what a key
 * means is its caller's business (steps/cache, steps/artifacts).
 */
import type { Readable } from 'node:stream';
import type { StoreSettings } from '../config';
import { DirStore } from './dir';
import { S3Store } from './s3';

export interface BlobStore {
  /** Stores the file's content at `key`, replacing any blob there: a reader sees the old blob or the whole new one. */
  putFile(key: string, file: string): Promise<void>;
  /** Writes the blob at `key` into `file` (made or replaced); false when there is none. */
  getFile(key: string, file: string): Promise<boolean>;
  /** The blob as a stream, with its size; null when there is none. */
  open(key: string): Promise<{ stream: Readable; size: number } | null>;
  /** Removes the blob; nothing there is no error. */
  delete(key: string): Promise<void>;
  /** Removes the blob at `prefix` and every blob under it, by whole segments (`artifacts/1` is not `artifacts/12`); how many. */
  deletePrefix(prefix: string): Promise<number>;
  /** What it is, for messages: a directory, or s3://bucket/prefix; never a credential. */
  readonly description: string;
}

/** A key's segments are plain names: nothing a path could climb out with. */
const SEGMENT = /^[A-Za-z0-9._-]{1,200}$/;

/** Throws unless `key` is a store key: `/`-separated plain segments, none `.` or `..`. */
export function checkKey(key: string): string {
  const segments = key.split('/');
  if (segments.length === 0 || segments.some((s) => !SEGMENT.test(s) || s === '.' || s === '..')) {
    throw new Error(`not a store key: ${JSON.stringify(key)}`);
  }
  return key;
}

export function openStore(settings: StoreSettings): BlobStore {
  if (settings.kind === 'dir') return new DirStore(settings.dir);
  return new S3Store(settings);
}
