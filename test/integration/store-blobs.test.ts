// The blob store's contract, held by both stores alike: the directory store and the S3 store
// against a real S3-compatible server (gofakes3). Then what only S3 has: prefixes inside the
// bucket, and a secret key that never shows in an error or in the store object.
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { inspect } from 'node:util';
import os from 'node:os';
import path from 'node:path';
import { openStore, type BlobStore } from '../../src/store';
import { startS3Server, TEST_SECRET_ACCESS_KEY, type S3Server } from '../support/s3Server';

let s3: S3Server;
let work: string;

beforeAll(async () => {
  work = await mkdtemp(path.join(os.tmpdir(), 'sluice-store-'));
  s3 = await startS3Server();
  await s3.makeBucket('blobs');
  await s3.makeBucket('shared');
});

afterAll(async () => {
  await s3?.stop();
  await rm(work, { recursive: true, force: true });
});

async function text(store: BlobStore, key: string): Promise<string | null> {
  const blob = await store.open(key);
  if (!blob) return null;
  const chunks: Buffer[] = [];
  for await (const c of blob.stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString();
}

describe.each([
  ['directory', () => openStore({ kind: 'dir', dir: path.join(work, 'dir-store') })],
  ['S3', () => openStore(s3.settings('blobs', 'sluice/'))],
])('the %s store', (_name, make) => {
  let store: BlobStore;
  let n = 0;
  const file = async (content: string | Buffer) => {
    const f = path.join(work, `in-${(n += 1)}`);
    await writeFile(f, content);
    return f;
  };

  beforeAll(() => {
    store = make();
  });

  it('keeps a file under a key and gives it back, as a file and as a stream with its size', async () => {
    const big = Buffer.alloc(3 * 1024 * 1024 + 17, 7);
    await store.putFile('caches/1/a.tgz', await file(big));
    const out = path.join(work, `out-${(n += 1)}`);
    expect(await store.getFile('caches/1/a.tgz', out)).toBe(true);
    expect((await readFile(out)).equals(big)).toBe(true);
    const blob = await store.open('caches/1/a.tgz');
    expect(blob?.size).toBe(big.length);
    blob?.stream.destroy();
  });

  it('replaces a blob whole', async () => {
    await store.putFile('caches/1/b', await file('old'));
    await store.putFile('caches/1/b', await file('new'));
    expect(await text(store, 'caches/1/b')).toBe('new');
  });

  it('answers a missing key with false and null, and deletes nothing quietly', async () => {
    const out = path.join(work, `out-${(n += 1)}`);
    expect(await store.getFile('caches/1/none', out)).toBe(false);
    await expect(stat(out)).rejects.toThrow();
    expect(await store.open('caches/1/none')).toBeNull();
    await store.delete('caches/1/none');
  });

  it('deletes one blob, and a prefix by whole segments', async () => {
    await store.putFile('caches/1/c', await file('c'));
    await store.delete('caches/1/c');
    expect(await store.open('caches/1/c')).toBeNull();

    for (const key of ['artifacts/1/x', 'artifacts/1/d/y', 'artifacts/12/z', 'artifacts/1x']) await store.putFile(key, await file(key));
    expect(await store.deletePrefix('artifacts/1/')).toBe(2);
    expect(await text(store, 'artifacts/1/x')).toBeNull();
    expect(await text(store, 'artifacts/1/d/y')).toBeNull();
    expect(await text(store, 'artifacts/12/z')).toBe('artifacts/12/z');
    expect(await text(store, 'artifacts/1x')).toBe('artifacts/1x');
    expect(await store.deletePrefix('artifacts/1x')).toBe(1);
    expect(await store.deletePrefix('artifacts/nothing/')).toBe(0);
  });

  it('refuses keys a path could climb out with', async () => {
    for (const key of ['../x', 'a/../../x', '/abs', 'a//b', 'a/./b', '']) {
      await expect(store.putFile(key, await file('x'))).rejects.toThrow(/not a store key/);
    }
  });
});

describe('the S3 store', () => {
  it('keeps its blobs under its prefix, so stores with different prefixes share a bucket', async () => {
    const a = openStore(s3.settings('shared', 'a/'));
    const b = openStore(s3.settings('shared', 'b/'));
    await a.putFile('k', await writeTemp('from a'));
    expect(await text(b, 'k')).toBeNull();
    expect(await text(openStore(s3.settings('shared', '')), 'a/k')).toBe('from a');
    expect(await b.deletePrefix('k')).toBe(0);
    expect(await text(a, 'k')).toBe('from a');
  });

  it('describes itself without credentials, and never shows the secret key, in errors or in the object', async () => {
    const store = openStore({ ...s3.settings('no-such-bucket', 'p/'), endpoint: `http://user:pw@127.0.0.1:${new URL(s3.endpoint).port}` });
    expect(store.description).toBe(`s3://no-such-bucket/p/ at ${s3.endpoint}`);
    const err = await store.putFile('k', await writeTemp('x')).then(
      () => null,
      (e: Error) => e,
    );
    expect(err).toBeInstanceOf(Error);
    expect(err!.message).toContain('s3://no-such-bucket/p/');
    const shown = [err!.message, err!.stack ?? '', inspect(err, { depth: 20 }), inspect(store, { depth: 20, showHidden: true }), JSON.stringify(store)].join('\n');
    expect(shown).not.toContain(TEST_SECRET_ACCESS_KEY);
    expect(shown).not.toContain('pw@');
    // A missing bucket is an error to fix, not a missing blob.
    await expect(store.open('k')).rejects.toThrow(/NoSuchBucket/);
  });
});

let temps = 0;
async function writeTemp(content: string): Promise<string> {
  const f = path.join(work, `temp-${(temps += 1)}`);
  await writeFile(f, content);
  return f;
}
