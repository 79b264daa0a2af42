/**
 * The store as an S3-compatible bucket (SLUICE_CACHE_URL=s3://bucket/prefix), for runners on
 * many machines. One object a blob, under the settings' prefix; a PUT replaces an object whole,
 * so a reader sees the old blob or the new one, never half of one.
 *
 * The secret key goes to the SDK's signer and nowhere else: not into `description`, errors or
 * anything `util.inspect` shows of this object (the client is a private field).
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { rename, rm, stat } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { DeleteObjectCommand, DeleteObjectsCommand, GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import type { StoreSettings } from '../config';
import { checkKey, type BlobStore } from './blobStore';

type S3Settings = Extract<StoreSettings, { kind: 's3' }>;

/** The most keys one DeleteObjects request takes. */
const DELETE_BATCH = 1000;

export class S3Store implements BlobStore {
  readonly description: string;
  readonly #client: S3Client;
  readonly #bucket: string;
  readonly #prefix: string;
  readonly #secret: string | undefined;

  constructor(settings: S3Settings) {
    this.#bucket = settings.bucket;
    this.#prefix = settings.prefix;
    this.#secret = settings.secretAccessKey;
    // An endpoint URL may carry userinfo; only its origin is shown.
    const at = settings.endpoint ? ` at ${new URL(settings.endpoint).origin}` : '';
    this.description = `s3://${settings.bucket}/${settings.prefix}${at}`;
    this.#client = new S3Client({
      region: settings.region,
      endpoint: settings.endpoint,
      forcePathStyle: settings.forcePathStyle,
      // Unset: the SDK's own chain (environment, instance role, ...).
      credentials: settings.accessKeyId && settings.secretAccessKey ? { accessKeyId: settings.accessKeyId, secretAccessKey: settings.secretAccessKey } : undefined,
      // S3-compatible servers (gofakes3, older MinIO, Ceph) reject the SDK's default CRC
      // trailers on streamed uploads; checksums only where S3 requires them.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      maxAttempts: 3,
    });
  }

  private objectKey(key: string): string {
    return `${this.#prefix}${checkKey(key)}`;
  }

  async putFile(key: string, file: string): Promise<void> {
    const { size } = await stat(file);
    await this.call('put', key, () =>
      this.#client.send(new PutObjectCommand({ Bucket: this.#bucket, Key: this.objectKey(key), Body: createReadStream(file), ContentLength: size })),
    );
  }

  async getFile(key: string, file: string): Promise<boolean> {
    const blob = await this.open(key);
    if (!blob) return false;
    // Written aside and renamed, as the directory store does: `file` is the old one or the whole new one.
    const temporary = `${file}.${randomBytes(6).toString('hex')}.partial`;
    try {
      await this.call('get', key, () => pipeline(blob.stream, createWriteStream(temporary, { mode: 0o600 })));
      await rename(temporary, file);
      return true;
    } catch (err) {
      await rm(temporary, { force: true });
      throw err;
    }
  }

  async open(key: string): Promise<{ stream: Readable; size: number } | null> {
    const answer = await this.call('get', key, async () => {
      try {
        return await this.#client.send(new GetObjectCommand({ Bucket: this.#bucket, Key: this.objectKey(key) }));
      } catch (err) {
        if (isMissing(err)) return null;
        throw err;
      }
    });
    if (!answer?.Body) return null;
    return { stream: answer.Body as Readable, size: answer.ContentLength ?? 0 };
  }

  async delete(key: string): Promise<void> {
    // S3 answers a delete of nothing with success.
    await this.call('delete', key, () => this.#client.send(new DeleteObjectCommand({ Bucket: this.#bucket, Key: this.objectKey(key) })));
  }

  async deletePrefix(prefix: string): Promise<number> {
    // Whole segments, as in the directory store: `artifacts/1` is not `artifacts/12`.
    const base = this.objectKey(prefix.replace(/\/+$/, ''));
    let deleted = 0;
    let token: string | undefined;
    do {
      const page = await this.call('list', prefix, () =>
        this.#client.send(new ListObjectsV2Command({ Bucket: this.#bucket, Prefix: base, ContinuationToken: token })),
      );
      const keys = (page.Contents ?? []).map((o) => o.Key!).filter((k) => k === base || k.startsWith(`${base}/`));
      for (let i = 0; i < keys.length; i += DELETE_BATCH) {
        const batch = keys.slice(i, i + DELETE_BATCH);
        const answer = await this.call('delete', prefix, () =>
          this.#client.send(new DeleteObjectsCommand({ Bucket: this.#bucket, Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true } })),
        );
        const failed = answer.Errors ?? [];
        if (failed.length > 0) throw new Error(`S3 delete under ${prefix} at ${this.description}: ${failed.length} not deleted (${failed[0]!.Key}: ${failed[0]!.Code ?? 'error'})`);
        deleted += batch.length;
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return deleted;
  }

  /** Runs one request; its error says what was asked where, without the secret key. */
  private async call<T>(what: string, key: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      const e = err as Error;
      // No `cause`: the SDK's error carries the signed request, which is no business of a log.
      // eslint-disable-next-line preserve-caught-error
      throw new Error(this.redact(`S3 ${what} ${key} at ${this.description}: ${e.name}: ${e.message}`));
    }
  }

  private redact(text: string): string {
    return this.#secret ? text.split(this.#secret).join('[secret]') : text;
  }
}

function isMissing(err: unknown): boolean {
  const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
  // A missing bucket is a setting to fix, not a missing blob.
  if (e.name === 'NoSuchBucket') return false;
  return e.name === 'NoSuchKey' || e.name === 'NotFound' || e.$metadata?.httpStatusCode === 404;
}
