// Artifacts go with their session: the retention cleanup deletes old sessions and then their
// blobs from the store (a plan's parts, deleted with their parent, too), keeps the blobs of the
// sessions it keeps, and a store that fails leaves the deletion queued for the next run.
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Config, StoreSettings } from '../../src/config';
import { createCleanupActivity } from '../../src/activities/cleanup';
import { collectArtifacts } from '../../src/steps/artifacts';
import { listSessionArtifacts } from '../../src/db/artifacts';
import { openStore } from '../../src/store';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { startS3Server, type S3Server } from '../support/s3Server';
import { pgBuildRecords } from '../../src/db/buildRecords';

let db: TestDatabase;
let s3: S3Server;
let work: string;
let storeDir: string;
let suiteId: number;
let repoId: number;

beforeAll(async () => {
  db = await createTestDatabase('sluice_artifact_retention');
  work = await mkdtemp(path.join(os.tmpdir(), 'sluice-artifact-retention-'));
  storeDir = path.join(work, 'store');
  s3 = await startS3Server();
  const org = await db.pool.query<{ id: number }>(`INSERT INTO orgs (name, email) VALUES ('acme', 'ci@acme.test') RETURNING id`);
  repoId = (
    await db.pool.query<{ id: number }>(
      `INSERT INTO repos (org_id, name, scm, pull_url, key_hash, key_sealed, ssh_public_key, ssh_private_key_sealed)
       VALUES ($1, 'app', 'git', 'git@x:a.git', '\\x01', 'k', 'pub', 'priv') RETURNING id`,
      [org.rows[0]!.id],
    )
  ).rows[0]!.id;
  suiteId = (await db.pool.query<{ id: number }>(`INSERT INTO suites (repo_id, branch, test_pattern) VALUES ($1, 'master', '*.sh') RETURNING id`, [repoId])).rows[0]!.id;
});

afterAll(async () => {
  await s3?.stop();
  await db?.drop();
  await rm(work, { recursive: true, force: true });
});

const config = (store: StoreSettings) => ({ retentionDays: 90, deliveryRetentionDays: 30, store }) as Config;

/** A session that ended `ageDays` ago, with `files` kept as worker 1's artifacts in the directory store. */
async function sessionWithArtifacts(ageDays: number, files: string[], parentId: number | null = null): Promise<number> {
  const event = await db.pool.query<{ id: number }>(
    `INSERT INTO ci_events (guid, repo_id, provider, decision, trigger, received_at)
     VALUES (gen_random_uuid(), $1, 'builds', 'build', '{}', now() - make_interval(days => $2)) RETURNING id`,
    [repoId, ageDays],
  );
  const { rows } = await db.pool.query<{ id: number }>(
    `INSERT INTO sessions (ci_event_id, suite_id, parent_id, status, branch, head, created_at, updated_at)
     VALUES ($1, $2, $3, 'passed', 'master', 'HEAD', now() - make_interval(days => $4), now() - make_interval(days => $4)) RETURNING id`,
    [event.rows[0]!.id, suiteId, parentId, ageDays],
  );
  const session = rows[0]!.id;
  const tree = path.join(work, `tree-${session}`);
  await mkdir(tree, { recursive: true });
  for (const f of files) await writeFile(path.join(tree, f), `${f} of ${session}`);
  const store = openStore({ kind: 'dir', dir: storeDir });
  const kept = await collectArtifacts({ records: pgBuildRecords(db.pool, Buffer.alloc(32)), store, limits: { maxFileBytes: 1 << 20, maxBuildBytes: 1 << 24 } }, { sessionId: session, worker: 1, tree, patterns: ['*'] });
  expect(kept.files).toBe(files.length);
  return session;
}

const blobsOf = (session: number) => readdir(path.join(storeDir, 'artifacts', String(session), '1')).catch(() => []);
const queued = async () => (await db.pool.query<{ session_id: number }>('SELECT session_id FROM artifact_deletions ORDER BY session_id')).rows.map((r) => r.session_id);

it("deletes old sessions' blobs with them, a plan's parts' too, and keeps the kept sessions'", async () => {
  const old = await sessionWithArtifacts(100, ['a.html', 'b.txt']);
  const parent = await sessionWithArtifacts(120, ['p.txt']);
  const part = await sessionWithArtifacts(120, ['q.txt', 'r.txt'], parent);
  const recent = await sessionWithArtifacts(10, ['c.txt']);
  expect(await blobsOf(old)).toHaveLength(2);

  const result = await createCleanupActivity({ pool: db.pool, config: config({ kind: 'dir', dir: storeDir }) })();
  expect(result).toMatchObject({ sessions: 2, artifactSessions: 3, artifactBlobs: 5 });
  expect(result.artifactError).toBeUndefined();
  for (const gone of [old, parent, part]) {
    expect(await blobsOf(gone)).toEqual([]);
    expect(await listSessionArtifacts(db.pool, gone)).toEqual([]);
  }
  expect(await blobsOf(recent)).toHaveLength(1);
  expect(await listSessionArtifacts(db.pool, recent)).toHaveLength(1);
  expect(await queued()).toEqual([]);
  // Nothing is left of the deleted sessions in the store, not even their folders.
  expect((await readdir(path.join(storeDir, 'artifacts'))).sort()).toEqual([String(recent)]);
});

it('a store that fails leaves the deletion queued; the next run finishes it', async () => {
  const old = await sessionWithArtifacts(200, ['x.txt']);
  const broken = await createCleanupActivity({ pool: db.pool, config: config(s3.settings('no-such-bucket')) })();
  expect(broken).toMatchObject({ sessions: 1, artifactSessions: 0, artifactBlobs: 0 });
  expect(broken.artifactError).toMatch(new RegExp(`^session ${old}: S3 list artifacts/${old}`));
  expect(await queued()).toEqual([old]);
  expect(await blobsOf(old)).toHaveLength(1);

  const fixed = await createCleanupActivity({ pool: db.pool, config: config({ kind: 'dir', dir: storeDir }) })();
  expect(fixed).toMatchObject({ sessions: 0, artifactSessions: 1, artifactBlobs: 1 });
  expect(await queued()).toEqual([]);
  expect(await blobsOf(old)).toEqual([]);
});

it('a session deleted any other way (its suite, by cascade) queues its blobs too', async () => {
  const suite = (await db.pool.query<{ id: number }>(`INSERT INTO suites (repo_id, branch, test_pattern) VALUES ($1, 'other', '*.sh') RETURNING id`, [repoId])).rows[0]!.id;
  const session = await sessionWithArtifacts(1, ['y.txt']);
  await db.pool.query('UPDATE sessions SET suite_id = $1 WHERE id = $2', [suite, session]);
  const plain = (await db.pool.query<{ id: number }>(
    `INSERT INTO sessions (ci_event_id, suite_id, status, branch, head) SELECT ci_event_id, $1, 'passed', 'other', 'HEAD' FROM sessions WHERE id = $2 RETURNING id`,
    [suite, session],
  )).rows[0]!.id;
  await db.pool.query('DELETE FROM suites WHERE id = $1', [suite]);
  // Only the session that had artifacts.
  expect(await queued()).toEqual([session]);
  expect(plain).toBeGreaterThan(0);
  expect(await createCleanupActivity({ pool: db.pool, config: config({ kind: 'dir', dir: storeDir }) })()).toMatchObject({ artifactSessions: 1, artifactBlobs: 1 });
  expect(await blobsOf(session)).toEqual([]);
});
