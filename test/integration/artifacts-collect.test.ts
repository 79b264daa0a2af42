// Collecting a worker's artifacts against a real PostgreSQL and real stores (a directory, and
// S3 through gofakes3): only regular files really inside the checkout are kept, never through
// a symbolic link or a hard link to somebody else's file, nothing of `.git`; the limits of one
// file and of a whole build (over its workers) leave files out with notes; a retried worker
// replaces what it kept before.
import { execFileSync } from 'node:child_process';
import { chown, link, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { collectArtifacts, type ArtifactDeps } from '../../src/steps/artifacts';
import { listSessionArtifacts } from '../../src/db/artifacts';
import { openStore, type BlobStore } from '../../src/store';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { startS3Server, type S3Server } from '../support/s3Server';
import { pgBuildRecords } from '../../src/db/buildRecords';

let db: TestDatabase;
let s3: S3Server;
let work: string;
let suiteId: number;
let repoId: number;

beforeAll(async () => {
  db = await createTestDatabase('sluice_artifacts');
  work = await mkdtemp(path.join(os.tmpdir(), 'sluice-artifacts-test-'));
  s3 = await startS3Server();
  await s3.makeBucket('artifacts');
  const org = await db.pool.query<{ id: number }>(`INSERT INTO orgs (name, email) VALUES ('acme', 'ci@acme.test') RETURNING id`);
  const repo = await db.pool.query<{ id: number }>(
    `INSERT INTO repos (org_id, name, scm, pull_url, key_hash, key_sealed, ssh_public_key, ssh_private_key_sealed)
     VALUES ($1, 'app', 'git', 'git@x:a.git', '\\x01', 'k', 'pub', 'priv') RETURNING id`,
    [org.rows[0]!.id],
  );
  repoId = repo.rows[0]!.id;
  suiteId = (await db.pool.query<{ id: number }>(`INSERT INTO suites (repo_id, branch, test_pattern) VALUES ($1, 'master', '*.sh') RETURNING id`, [repoId])).rows[0]!.id;
});

afterAll(async () => {
  await s3?.stop();
  await db?.drop();
  await rm(work, { recursive: true, force: true });
});

async function newSession(): Promise<number> {
  const event = await db.pool.query<{ id: number }>(
    `INSERT INTO ci_events (guid, repo_id, provider, decision, trigger) VALUES (gen_random_uuid(), $1, 'builds', 'build', '{}') RETURNING id`,
    [repoId],
  );
  const { rows } = await db.pool.query<{ id: number }>(
    `INSERT INTO sessions (ci_event_id, suite_id, status, branch, head, workers) VALUES ($1, $2, 'running', 'master', 'HEAD', 2) RETURNING id`,
    [event.rows[0]!.id, suiteId],
  );
  return rows[0]!.id;
}

/** A directory with `files` (path: content), made fresh. */
async function tree(name: string, files: Record<string, string | Buffer>): Promise<string> {
  const dir = path.join(work, name);
  await rm(dir, { recursive: true, force: true });
  for (const [rel, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, rel)), { recursive: true });
    await writeFile(path.join(dir, rel), content);
  }
  await mkdir(dir, { recursive: true });
  return dir;
}

async function read(store: BlobStore, key: string): Promise<string | null> {
  const blob = await store.open(key);
  if (!blob) return null;
  const chunks: Buffer[] = [];
  for await (const c of blob.stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString();
}

const BIG = { maxFileBytes: 1 << 20, maxBuildBytes: 1 << 24 };

describe.each([
  ['directory', () => openStore({ kind: 'dir', dir: path.join(work, 'store') })],
  ['S3', () => openStore(s3.settings('artifacts', 'sluice/'))],
])('with the %s store', (_name, makeStore) => {
  let deps: ArtifactDeps;
  beforeAll(() => {
    deps = { records: pgBuildRecords(db.pool, Buffer.alloc(32)), store: makeStore(), limits: BIG };
  });

  it('keeps the regular files inside the checkout that match, nothing through a link, nothing of .git', async () => {
    const session = await newSession();
    const outside = await tree('outside', { 'secret.txt': 'the runner reads as root', 'dir/also-secret.txt': 'root only' });
    const dir = await tree('checkout-links', {
      'coverage/index.html': '<h1>coverage</h1>',
      'coverage/lcov/info.txt': 'lcov',
      'reports/a.html': 'report a',
      'reports/b.txt': 'not matched',
      '.git/config': '[core]',
      'coverage/.git/HEAD': 'ref: x',
    });
    // A test may plant links out of the tree, to a file and to a directory; and a FIFO that would hang a reader.
    await symlink(path.join(outside, 'secret.txt'), path.join(dir, 'coverage/shadow'));
    await symlink(path.join(outside, 'dir'), path.join(dir, 'coverage/linked-dir'));
    await symlink('index.html', path.join(dir, 'coverage/inside-link.html'));
    execFileSync('mkfifo', [path.join(dir, 'coverage/fifo')]);
    // A hard link to a file that is not the build's (the test runs as root here, as the runner does).
    const foreign = path.join(outside, 'foreign.txt');
    await writeFile(foreign, 'owned by somebody else');
    await chown(foreign, 65534, 65534);
    await link(foreign, path.join(dir, 'coverage/hardlink.txt'));

    const result = await collectArtifacts(deps, { sessionId: session, worker: 1, tree: dir, patterns: ['coverage/**', 'reports/*.html', '.git/**', '**/HEAD', 'coverage/linked-dir/*', 'coverage/shadow'] });

    const rows = await listSessionArtifacts(db.pool, session);
    expect(rows.map((r) => [r.worker, r.path, r.size])).toEqual([
      [1, 'coverage/index.html', 17],
      [1, 'coverage/lcov/info.txt', 4],
      [1, 'reports/a.html', 8],
    ]);
    expect(result).toMatchObject({ files: 3, bytes: 29 });
    for (const r of rows) {
      expect(r.store_key).toBe(`artifacts/${session}/1/${r.id}`);
      expect(await read(deps.store, r.store_key)).toBe({ 'coverage/index.html': '<h1>coverage</h1>', 'coverage/lcov/info.txt': 'lcov', 'reports/a.html': 'report a' }[r.path]);
    }
    const notes = result.notes.join('\n');
    expect(notes).not.toContain('the runner reads as root');
    // The glob does not report links at all; a pattern whose base is a linked directory is
    // crawled through it by the glob library, and the file then left out by its real path.
    expect(notes).toMatch(/coverage\/linked-dir\/also-secret\.txt left out: reached through a symbolic link/);
    expect(notes).toMatch(/no file matches "coverage\/shadow"/);
    expect(notes).toMatch(/coverage\/hardlink\.txt left out: a hard link to a file the build does not own/);
    expect(notes).toMatch(/no file matches "\.git\/\*\*"/);
    expect(notes).toMatch(/no file matches "\*\*\/HEAD"/);
    // The FIFO, if the glob reports it at all, is left out, not waited on.
    if (notes.includes('coverage/fifo')) expect(notes).toMatch(/coverage\/fifo left out: not a regular file/);
  });

  it('refuses patterns that leave the checkout, and says which', async () => {
    const session = await newSession();
    const dir = await tree('checkout-patterns', { 'a.txt': 'a' });
    const result = await collectArtifacts(deps, { sessionId: session, worker: 1, tree: dir, patterns: ['../outside/*', '/etc/passwd', '~/x', '{a,..}/*', 'a.txt'] });
    expect(result.files).toBe(1);
    expect(result.notes).toEqual([
      'artifacts: pattern refused: "../outside/*" climbs out with \'..\'',
      'artifacts: pattern refused: "/etc/passwd" is not relative to the checkout',
      'artifacts: pattern refused: "~/x" is not relative to the checkout',
      'artifacts: pattern refused: "{a,..}/*" climbs out with \'..\'',
    ]);
  });

  it('holds the limits of one file and of the whole build, over its workers, saying what was left out', async () => {
    const session = await newSession();
    const limited = { ...deps, limits: { maxFileBytes: 1000, maxBuildBytes: 2500 } };
    const one = await tree('checkout-w1', { 'out/a.bin': Buffer.alloc(900), 'out/b.bin': Buffer.alloc(1001), 'out/c.bin': Buffer.alloc(800) });
    const two = await tree('checkout-w2', { 'out/d.bin': Buffer.alloc(700), 'out/e.bin': Buffer.alloc(100) });

    const first = await collectArtifacts(limited, { sessionId: session, worker: 1, tree: one, patterns: ['out/*'] });
    expect(first).toEqual({ files: 2, bytes: 1700, notes: ['artifacts: out/b.bin left out: 1001 bytes, over the limit of one file (1000 bytes)'] });
    // Worker 2: 800 bytes are left of the build's 2500; d (700) fits, then e (100) does too.
    const second = await collectArtifacts(limited, { sessionId: session, worker: 2, tree: two, patterns: ['out/*'] });
    expect(second).toEqual({ files: 2, bytes: 800, notes: [] });
    const third = await tree('checkout-w2-more', { 'out/f.bin': Buffer.alloc(1) });
    // Worker 2 again (retried): its own 800 go, so f fits; a worker 3 past the limit does not.
    expect(await collectArtifacts(limited, { sessionId: session, worker: 2, tree: third, patterns: ['out/*'] })).toEqual({ files: 1, bytes: 1, notes: [] });
    const fourth = await tree('checkout-w3', { 'out/g.bin': Buffer.alloc(900) });
    expect(await collectArtifacts(limited, { sessionId: session, worker: 3, tree: fourth, patterns: ['out/*'] })).toEqual({
      files: 0,
      bytes: 0,
      notes: ["artifacts: out/g.bin left out: 900 bytes, over the build's limit (2500 bytes, 1701 bytes kept already)"],
    });
    const rows = await listSessionArtifacts(db.pool, session);
    expect(rows.map((r) => [r.worker, r.path])).toEqual([
      [1, 'out/a.bin'],
      [1, 'out/c.bin'],
      [2, 'out/f.bin'],
    ]);
  });

  it('two workers collecting at once never pass the build limit together', async () => {
    const session = await newSession();
    const limited = { ...deps, limits: { maxFileBytes: 1000, maxBuildBytes: 1000 } };
    const files = Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`out/${i}.bin`, Buffer.alloc(100)]));
    const [a, b] = await Promise.all([tree('race-1', files), tree('race-2', files)]);
    const results = await Promise.all([
      collectArtifacts(limited, { sessionId: session, worker: 1, tree: a, patterns: ['out/*'] }),
      collectArtifacts(limited, { sessionId: session, worker: 2, tree: b, patterns: ['out/*'] }),
    ]);
    expect(results[0]!.bytes + results[1]!.bytes).toBe(1000);
    expect((await listSessionArtifacts(db.pool, session)).reduce((n, r) => n + r.size, 0)).toBe(1000);
  });

  it('a retried worker replaces what its earlier attempt kept, blobs included; other workers keep theirs', async () => {
    const session = await newSession();
    const before = await tree('retry-before', { 'out/old.txt': 'old', 'out/same.txt': 'first' });
    const other = await tree('retry-other', { 'out/theirs.txt': 'theirs' });
    await collectArtifacts(deps, { sessionId: session, worker: 1, tree: before, patterns: ['out/*'] });
    await collectArtifacts(deps, { sessionId: session, worker: 2, tree: other, patterns: ['out/*'] });
    const old = await listSessionArtifacts(db.pool, session);

    const after = await tree('retry-after', { 'out/same.txt': 'second' });
    expect(await collectArtifacts(deps, { sessionId: session, worker: 1, tree: after, patterns: ['out/*'] })).toEqual({ files: 1, bytes: 6, notes: [] });
    const rows = await listSessionArtifacts(db.pool, session);
    expect(rows.map((r) => [r.worker, r.path])).toEqual([
      [1, 'out/same.txt'],
      [2, 'out/theirs.txt'],
    ]);
    expect(await read(deps.store, rows[0]!.store_key)).toBe('second');
    for (const r of old.filter((o) => o.worker === 1)) expect(await read(deps.store, r.store_key)).toBeNull();
    expect(await read(deps.store, rows[1]!.store_key)).toBe('theirs');
  });
});

it('a failing store ends the collection with a note; nothing half-kept is listed', async () => {
  const session = await newSession();
  const dir = await tree('checkout-store-down', { 'a.txt': 'a', 'b.txt': 'b' });
  const down = openStore(s3.settings('no-such-bucket'));
  const result = await collectArtifacts({ records: pgBuildRecords(db.pool, Buffer.alloc(32)), store: down, limits: BIG }, { sessionId: session, worker: 1, tree: dir, patterns: ['*.txt'] });
  expect(result.files).toBe(0);
  expect(result.notes).toHaveLength(1);
  expect(result.notes[0]).toMatch(/^artifacts: the store \(s3:\/\/no-such-bucket\/ at http:\/\/127\.0\.0\.1:\d+\) failed: .*; 2 files not kept$/);
  expect(await listSessionArtifacts(db.pool, session)).toEqual([]);
  expect((await db.pool.query('SELECT 1 FROM artifacts WHERE session_id = $1', [session])).rowCount).toBe(0);
});

it('notes past MAX_NOTES end with how many more there were', async () => {
  const session = await newSession();
  const files = Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`big/${String(i).padStart(2, '0')}.bin`, Buffer.alloc(20)]));
  const dir = await tree('checkout-many', files);
  const store = openStore({ kind: 'dir', dir: path.join(work, 'store') });
  const result = await collectArtifacts({ records: pgBuildRecords(db.pool, Buffer.alloc(32)), store, limits: { maxFileBytes: 10, maxBuildBytes: 1000 } }, { sessionId: session, worker: 1, tree: dir, patterns: ['big/*'] });
  expect(result.notes).toHaveLength(20);
  expect(result.notes[0]).toBe('artifacts: big/00.bin left out: 20 bytes, over the limit of one file (10 bytes)');
  expect(result.notes[19]).toBe('artifacts: 11 more notes like these');
});
