/**
 * Issue 40's stored maps and the changes they judge, on real parts: the SQL of dependency maps
 * (db/dependencyMaps.ts) on PostgreSQL, and what changed in a checked-out tree since a map's
 * commit (steps/checkout/changes.ts) with real git and hg repositories.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadMap, mapCandidates, mapRunCost, MAPS_KEPT, recordFileDeps, startMap } from '../../src/db/dependencyMaps';
import { enqueueTests, queueCounts, recordedDurations } from '../../src/db/testQueue';
import { withTreeChanges } from '../../src/steps/checkout/changes';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { createBareRepo, git, pushCommit } from '../support/gitRepo';
import { createHgRepo, hg, hgCommit } from '../support/hgRepo';
import { insertPostSession, type PostSession } from '../support/postSession';

let db: TestDatabase;
let tmp: string;
const key = Buffer.alloc(32, 7);
beforeAll(async () => {
  db = await createTestDatabase();
  tmp = await mkdtemp(path.join(tmpdir(), 'sluice-maps-'));
});
afterAll(async () => {
  await db?.drop();
  await rm(tmp, { recursive: true, force: true });
});

/** Another session of `s`'s suite, triggered as `trigger` says (a push unless it names a changeset). */
async function session(s: PostSession, trigger: Record<string, unknown> = {}): Promise<number> {
  const event = await db.pool.query<{ id: number }>(
    "INSERT INTO ci_events (guid, repo_id, provider, decision, trigger) VALUES ($1, $2, 'builds', 'build', $3) RETURNING id",
    [randomUUID(), s.repoId, JSON.stringify({ provider: 'builds', op: 'push', branch: 'master', head: 'HEAD', scm: 'git', force: false, queuePosition: 'tail', env: {}, ...trigger })],
  );
  const { rows } = await db.pool.query<{ id: number }>("INSERT INTO sessions (ci_event_id, suite_id, branch, head) VALUES ($1, $2, 'master', 'HEAD') RETURNING id::int", [event.rows[0]!.id, s.suiteId]);
  return rows[0]!.id;
}
const commit = (n: number) => n.toString(16).padStart(40, 'a');
const deps = (...reads: string[]) => ({ reads, lists: [], probes: [] });

describe('stored maps', () => {
  it('the default branch maps its first build, then every map_every pushed builds; pull requests neither map nor count', async () => {
    const s = await insertPostSession(db.pool, key);
    expect(await startMap(db.pool, s.sessionId, commit(1), 'default', 3)).toBe(true);
    // Asked again (a retried activity): the same answer.
    expect(await startMap(db.pool, s.sessionId, commit(1), 'default', 3)).toBe(true);
    const answers: boolean[] = [];
    for (let i = 0; i < 6; i++) {
      await session(s, { changeset: { kind: 'github', id: String(i) } });
      answers.push(await startMap(db.pool, await session(s), commit(10 + i), 'default', 3));
    }
    expect(answers).toEqual([false, false, true, false, false, true]);
    // A map the runner found stale (a manifest changed since it) is made at once; a runner's
    // answer that is not a plain true is not taken for one.
    expect(await startMap(db.pool, await session(s), commit(30), 'default', 3, 'yes' as unknown as boolean)).toBe(false);
    expect(await startMap(db.pool, await session(s), commit(31), 'default', 3, true)).toBe(true);
    expect(await startMap(db.pool, await session(s), commit(32), 'default', 3)).toBe(false);
    // Another profile has its own maps.
    expect(await startMap(db.pool, await session(s), commit(99), 'unit', 3)).toBe(true);
  });

  it('is refused for a branch that is not the repository’s default, and keeps only the newest maps', async () => {
    const feature = await insertPostSession(db.pool, key, { branch: 'feature' });
    expect(await startMap(db.pool, feature.sessionId, commit(1), 'default', 1)).toBe(false);
    await recordFileDeps(db.pool, feature.sessionId, 'test/a.js', deps('lib/a.js'));
    expect((await db.pool.query('SELECT 1 FROM dependency_map_files WHERE session_id = $1', [feature.sessionId])).rowCount).toBe(0);

    const s = await insertPostSession(db.pool, key);
    const mapped: number[] = [];
    for (let i = 0; i < MAPS_KEPT + 2; i++) {
      const id = i === 0 ? s.sessionId : await session(s);
      expect(await startMap(db.pool, id, commit(i), 'default', 1)).toBe(true);
      mapped.push(id);
    }
    const candidates = await mapCandidates(db.pool, await session(s), 'default');
    expect(candidates.map((c) => c.mapSession)).toEqual(mapped.slice(2).reverse());
  });

  it('loads a map with the files it recorded, only for a build of the same repository', async () => {
    const s = await insertPostSession(db.pool, key);
    expect(await startMap(db.pool, s.sessionId, commit(5), 'default', 10)).toBe(true);
    await recordFileDeps(db.pool, s.sessionId, 'test/a.js', deps('lib/a.js', 'test/a.js'));
    await recordFileDeps(db.pool, s.sessionId, 'test/a.js', deps('lib/b.js', 'test/a.js'));
    const reader = await session(s, { changeset: { kind: 'github', id: '1' } });
    expect(await loadMap(db.pool, reader, s.sessionId)).toEqual({ commit: commit(5), files: [{ path: 'test/a.js', reads: ['lib/b.js', 'test/a.js'], lists: [], probes: [] }] });
    const stranger = await insertPostSession(db.pool, key);
    expect(await loadMap(db.pool, stranger.sessionId, s.sessionId)).toBeNull();
    expect(await mapCandidates(db.pool, stranger.sessionId, 'default')).toEqual([]);
  });

  it('lists skipped files done, counts them skipped, and keeps their zero durations out of the estimates', async () => {
    const s = await insertPostSession(db.pool, key);
    expect(await enqueueTests(db.pool, s.sessionId, [{ path: 'test/a.js', estimateMs: null }], ['test/b.js', 'test/c.js'])).toBe(1);
    // Written once: a retried activity finds the list made, with the same size to run.
    expect(await enqueueTests(db.pool, s.sessionId, [{ path: 'test/a.js', estimateMs: null }], ['test/b.js', 'test/c.js'])).toBe(1);
    expect(await queueCounts(db.pool, s.sessionId)).toEqual({ notstarted: 1, started: 0, passed: 0, failed: 0, pending: 0, skipped: 2, error: 0 });
    const { rows } = await db.pool.query<{ path: string; status: string; output: string }>('SELECT path, status, output FROM test_results WHERE session_id = $1 ORDER BY path', [s.sessionId]);
    expect(rows.map((r) => [r.path, r.status])).toEqual([['test/b.js', 'skipped'], ['test/c.js', 'skipped']]);
    expect(rows[0]!.output).toMatch(/not affected/);
    expect(await recordedDurations(db.pool, s.suiteId, 'default', ['test/b.js'])).toEqual(new Map());
  });
});

describe('a mapping run’s durations', () => {
  it('are left out of the estimates later builds plan with, and shown beside them as its cost', async () => {
    const s = await insertPostSession(db.pool, key);
    const result = (session: number, ms: number) =>
      db.pool.query("INSERT INTO test_results (session_id, path, status, duration_ms) VALUES ($1, 'test/a.js', 'passed', $2)", [session, ms]);
    await result(s.sessionId, 100);
    // The next build maps: its files run under strace, slower.
    const mapping = await session(s);
    expect(await startMap(db.pool, mapping, commit(1), 'default', 1)).toBe(true);
    await enqueueTests(db.pool, mapping, [{ path: 'test/a.js', estimateMs: 100 }]);
    await result(mapping, 400);
    expect(await recordedDurations(db.pool, s.suiteId, 'default', ['test/a.js'])).toEqual(new Map([['test/a.js', 100]]));
    expect(await mapRunCost(db.pool, mapping)).toEqual({ files: 1, traced_ms: 400, usual_ms: 100 });
    expect(await mapRunCost(db.pool, s.sessionId)).toBeNull();
  });
});

describe('what changed in a tree since a map', () => {
  it('git: whether the map’s commit is an ancestor, and every path changed since it, both sides of a rename, those added or removed apart', async () => {
    const bare = path.join(tmp, 'g.git');
    const base = await createBareRepo(bare, { 'lib/a.js': { content: 'a\n' }, 'lib/b.js': { content: 'b\n' }, 'test/a.js': { content: 't\n' } }, 'base');
    const one = await pushCommit(bare, { 'lib/a.js': { content: 'a2\n' } }, 'one');
    await git(bare, ['branch', 'side', base]);
    const side = await pushCommit(bare, { 'lib/side.js': { content: 's\n' } }, 'side', 'side');
    await pushCommit(bare, { 'lib/b.js': null, 'lib/c.js': { content: 'b\n' }, 'test/new.js': { content: 'n\n' } }, 'rename b to c, add a test');
    const tree = path.join(tmp, 'g');
    await git(bare, ['worktree', 'add', '--detach', tree, 'master']);
    await withTreeChanges('git', tree, undefined, async (changes) => {
      expect(await changes.isAncestor(base)).toBe(true);
      expect(await changes.isAncestor(side)).toBe(false);
      expect(await changes.isAncestor('f'.repeat(40))).toBe(false);
      expect(await changes.isAncestor('--all')).toBe(false);
      expect(await changes.changedSince(base)).toEqual({
        changed: ['lib/a.js', 'lib/b.js', 'lib/c.js', 'test/new.js'],
        addedOrRemoved: ['lib/b.js', 'lib/c.js', 'test/new.js'],
      });
      // The commit's own change (the first failure first, issue 49) is measured from its parent.
      expect(await changes.parent()).toBe(one);
    });
    const root = path.join(tmp, 'g-root');
    await git(bare, ['worktree', 'add', '--detach', root, base]);
    await expect(withTreeChanges('git', root, undefined, (changes) => changes.parent())).resolves.toBeNull();
  });

  it('hg: the same, with the tree’s own hgrc never read (tests may have planted hooks there)', async () => {
    const repo = path.join(tmp, 'h');
    const base = await createHgRepo(repo, { 'lib/a.py': { content: 'a\n' }, 'tests/test_a.py': { content: 't\n' } }, 'base');
    await hgCommit(repo, { 'lib/a.py': { content: 'a2\n' }, 'lib/b.py': { content: 'b\n' }, 'tests/test_a.py': null }, 'one');
    const other = await hgCommit(repo, { 'x.py': { content: 'x\n' } }, 'other branch', { branch: 'other' });
    await hg(repo, ['update', '--clean', '--quiet', 'default']);
    const planted = path.join(tmp, 'planted');
    await writeFile(path.join(repo, '.hg', 'hgrc'), `[hooks]\npre-log = touch ${planted}\npre-status = touch ${planted}\n`);
    await withTreeChanges('hg', repo, undefined, async (changes) => {
      expect(await changes.isAncestor(base)).toBe(true);
      expect(await changes.isAncestor(other)).toBe(false);
      expect(await changes.changedSince(base)).toEqual({ changed: ['lib/a.py', 'lib/b.py', 'tests/test_a.py'], addedOrRemoved: ['lib/b.py', 'tests/test_a.py'] });
      expect(await changes.parent()).toBe(base);
    });
    await hg(repo, ['update', '--clean', '--quiet', base]);
    await expect(withTreeChanges('hg', repo, undefined, (changes) => changes.parent())).resolves.toBeNull();
    await expect(stat(planted)).rejects.toThrow(/ENOENT/);
  });
});
