/** What every blob store does (dir.ts, s3.ts), and what a key may be. */
import type { Readable } from 'node:stream';

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
