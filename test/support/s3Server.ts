/**
 * A real S3-compatible server for tests: gofakes3 (built by `.ci/run` into
 * ~/.cache/sluice/bin, or wherever $GOFAKES3 says), on a free loopback port with an in-memory
 * backend, and a bucket the test makes through the S3 API. Missing binary: the test fails
 * saying how to get it, never skips.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { freePort } from '../../src/temporal/devServer';
import type { StoreSettings } from '../../src/config';
import { eventually } from './wait';

export interface S3Server {
  endpoint: string;
  /** Store settings for a bucket made on it (made by makeBucket). */
  settings(bucket: string, prefix?: string): Extract<StoreSettings, { kind: 's3' }>;
  makeBucket(bucket: string): Promise<void>;
  /** Everything it printed, for a failing test's message. */
  output(): string;
  stop(): Promise<void>;
}

/** Credentials the tests sign with (gofakes3 accepts any); the secret must never show in an error. */
export const TEST_ACCESS_KEY_ID = 'sluice-test-access';
export const TEST_SECRET_ACCESS_KEY = 'sluice-test-SECRET-5b1c0ffee';

export function gofakes3Path(): string {
  const file = process.env.GOFAKES3 || path.join(os.homedir(), '.cache', 'sluice', 'bin', 'gofakes3');
  if (!existsSync(file)) {
    throw new Error(`gofakes3 is not at ${file}: run .ci/run once (it builds it with go install), or set GOFAKES3 to its path`);
  }
  return file;
}

export async function startS3Server(): Promise<S3Server> {
  const binary = gofakes3Path();
  const port = await freePort();
  const endpoint = `http://127.0.0.1:${port}`;
  let out = '';
  const child: ChildProcess = spawn(binary, ['-backend', 'memory', '-host', `127.0.0.1:${port}`], { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await eventually(`gofakes3 listening on ${endpoint}`, async () => {
    if (child.exitCode !== null) throw new Error(`gofakes3 exited: ${out}`);
    return connects(port);
  }, 20_000);

  const settings = (bucket: string, prefix = ''): Extract<StoreSettings, { kind: 's3' }> => ({
    kind: 's3',
    bucket,
    prefix,
    endpoint,
    region: 'us-east-1',
    accessKeyId: TEST_ACCESS_KEY_ID,
    secretAccessKey: TEST_SECRET_ACCESS_KEY,
    forcePathStyle: true,
  });
  return {
    endpoint,
    settings,
    async makeBucket(bucket) {
      const client = new S3Client({ region: 'us-east-1', endpoint, forcePathStyle: true, credentials: { accessKeyId: TEST_ACCESS_KEY_ID, secretAccessKey: TEST_SECRET_ACCESS_KEY } });
      await client.send(new CreateBucketCommand({ Bucket: bucket }));
      client.destroy();
    },
    output: () => out,
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

function connects(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
