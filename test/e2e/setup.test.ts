/**
 * Building a real project (issue 21), end to end on real parts: hooks around the tests, the
 * rendezvous of a build's workers, package setup from the npm registry (a real `npm ci` of a
 * real package), the dependency cache from a cold build to a warm one, its restore rules (a
 * pull request writes nothing, a hostile entry is refused) and the timing keys of spec §6.
 */
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { git, pushCommit } from '../support/gitRepo';
import { openStore } from '../../src/store';
import { startS3Server, type S3Server } from '../support/s3Server';
import { script, World, type Payload, type Repo } from '../support/world';

let w: World;
beforeAll(async () => {
  w = await World.start();
});
afterAll(() => w?.stop());

type Hook = { name: string; worker: number | null; status: string; exit_code: number | null; output_tail: string; detail: string | null; command: string };
type View = Awaited<ReturnType<World['session']>> & { hooks: Hook[]; worker_setup: Array<{ worker: number; notes: string[] }> };
const view = async (session: number) => (await w.session(session)) as View;
const names = (events: Payload[]) => events.map((e) => e.event);

/** A real Node.js project: one dependency from the npm registry, locked, and a test that needs it. */
const NODE_PROJECT = {
  'package.json': { content: JSON.stringify({ name: 'fixture-app', version: '1.0.0', private: true, dependencies: { ms: '2.1.3' } }, null, 2) },
  'package-lock.json': {
    content: JSON.stringify(
      {
        name: 'fixture-app',
        version: '1.0.0',
        lockfileVersion: 3,
        requires: true,
        packages: {
          '': { name: 'fixture-app', version: '1.0.0', dependencies: { ms: '2.1.3' } },
          'node_modules/ms': {
            version: '2.1.3',
            integrity: 'sha512-6FlzubTLZG3J2a/NVCAleEhjzq5oxgHyaCU9yYXvcLsvoVaHJq/s5xXI6/XXP6tz7R9xAOtHnSO/tXtF3WRTlA==',
            license: 'MIT',
          },
        },
      },
      null,
      2,
    ),
  },
  'test/ms_test.js': { content: "const ms = require('ms');\nif (ms('2 days') !== 172800000) { console.error('wrong'); process.exit(1); }\nconsole.log('ms works');\n" },
};
const NODE_SUITE = { branch: 'master', test_pattern: 'test/*_test.js', test_command: 'node' };

describe('hooks', () => {
  it('runs each hook where and when Solano did, with the worker’s number, and shows them', async () => {
    const log = path.join(w.tmp, 'hooks.log');
    const note = (what: string) => `echo "${what} $SLUICE_WORKER_ID/$SLUICE_WORKER_COUNT" >> ${log}`;
    const repo = await w.makeRepo(
      {
        'a_test.sh': script(`echo "test a on $SLUICE_WORKER_ID" >> ${log}; test -f prepared`),
        'b_test.sh': script(`echo "test b on $SLUICE_WORKER_ID" >> ${log}`),
        'sluice.yml': {
          content: [
            'hooks:',
            `  pre_setup: touch prepared && echo "pre_setup" >> ${log}`,
            `  worker_setup: ${note('worker_setup')}`,
            `  post_setup: ${note('post_setup')}`,
            `  post_worker: ${note('post_worker')}; exit 3`,
            `  post_build: echo "post_build $SLUICE_BUILD_STATUS" >> ${log}; echo "status $SLUICE_BUILD_STATUS"`,
            'profiles:',
            '  default:',
            '    workers: 2',
            '',
          ].join('\n'),
        },
      },
      { suite: { branch: 'master', test_pattern: '*_test.sh' } },
    );
    const { session } = await w.build(repo);
    const events = await w.eventsOf(session);
    expect(names(events)).toEqual(['received', 'start', 'test', 'stop']);
    // A failing post_worker hook is shown but changes nothing.
    expect(events.at(-1)).toMatchObject({ status: 'passed', workers: 2 });

    const lines = (await readFile(log, 'utf8')).trim().split('\n');
    // Each worker set up before it ran a test (no worker waits for the other: the first one
    // ready starts the tests), and post_worker after its tests.
    expect(lines.filter((l) => l === 'pre_setup')).toHaveLength(2);
    for (const n of [1, 2]) {
      const setUp = lines.indexOf(`post_setup ${n}/2`);
      expect(lines.indexOf(`worker_setup ${n}/2`)).toBeLessThan(setUp);
      const tested = lines.findIndex((l) => l.startsWith('test ') && l.endsWith(` on ${n}`));
      if (tested >= 0) expect(setUp).toBeLessThan(tested);
    }
    expect(lines.filter((l) => l.startsWith('test ')).map((l) => l.split(' ')[1]).sort()).toEqual(['a', 'b']);
    expect(lines.filter((l) => l.startsWith('post_worker')).sort()).toEqual(['post_worker 1/2', 'post_worker 2/2']);
    expect(lines.at(-1)).toBe('post_build passed');

    const { hooks } = await view(session);
    const summary = hooks.map((h) => `${h.name}:${h.worker ?? '-'}:${h.status}:${h.exit_code}`).sort();
    expect(summary).toEqual(
      [
        'pre_setup:1:passed:0',
        'pre_setup:2:passed:0',
        'worker_setup:1:passed:0',
        'worker_setup:2:passed:0',
        'post_setup:1:passed:0',
        'post_setup:2:passed:0',
        'post_worker:1:failed:3',
        'post_worker:2:failed:3',
        'post_build:-:passed:0',
      ].sort(),
    );
    expect(hooks.find((h) => h.name === 'post_build')!.output_tail).toContain('status passed');
    // No lock file: nothing to install, and no package_setup shown.
    expect(hooks.some((h) => h.name === 'package_setup')).toBe(false);

    // Timing: the keys of the steps that ran, in the order they ran; none of those that did not.
    const t = events.at(-1)!.timing as Record<string, number>;
    const order = ['setup', 'setup_hooks', 'worker_hooks', 'worker_rendezvous', 'exec', 'post_build', 'setup_post_hooks', 'done', 'post_build_hook'];
    for (const k of order) expect(t[k]).toBeGreaterThan(1.7e9);
    // The rendezvous is the first worker ready: the tests start then.
    expect(t.setup_hooks).toBeLessThanOrEqual(t.post_build!);
    expect(t.worker_rendezvous).toBeLessThanOrEqual(t.exec! + 0.001);
    expect(t.exec).toBeLessThanOrEqual(t.post_build!);
    expect(t.post_build).toBeLessThanOrEqual(t.setup_post_hooks!);
    expect(t.done).toBeLessThanOrEqual(t.post_build_hook!);
    for (const k of ['package_setup', 'services_setup', 'setup_cache', 'capture_cache', 'artifact_collect']) expect(t[k]).toBeUndefined();
    // `test` already carried the setup's keys.
    const test = events.find((e) => e.event === 'test')!;
    expect((test.timing as Record<string, number>).worker_rendezvous).toBe(t.worker_rendezvous);
  });

  it('a failing setup hook ends the build in error once, naming the hook and its last lines, and stops the tests', async () => {
    const log = path.join(w.tmp, 'failing-setup.log');
    // Worker 1 is set up and starts the tests without waiting for worker 2 (issue 49); its tests
    // would take 30 s, and worker 2's failing setup stops them.
    const slow = script(`echo "test on $SLUICE_WORKER_ID" >> ${log}; sleep 30; echo "test done on $SLUICE_WORKER_ID" >> ${log}`);
    const repo = await w.makeRepo(
      {
        't1_test.sh': slow,
        't2_test.sh': slow,
        'setup.sh': script('echo "migrating"; if [ "$SLUICE_WORKER_ID" = 2 ]; then echo "relation \\"users\\" already exists" >&2; exit 4; fi'),
      },
      { suite: { branch: 'master', test_pattern: '*_test.sh', workers: 2, hooks: { worker_setup: './setup.sh', post_build: `echo post_build >> ${log}` } } },
    );
    const { session } = await w.build(repo);
    const events = await w.eventsOf(session);
    // `test` went out if worker 1 was set up (and started the tests) before worker 2 failed.
    expect(names(events).filter((n) => n !== 'test')).toEqual(['received', 'start', 'stop']);
    const stop = events.at(-1)!;
    expect(stop.status).toBe('error');
    const v = await view(session);
    expect(v.reason).toMatch(/^the worker_setup hook failed on worker 2 \(exit code 4\):\n/);
    expect(v.reason).toContain('relation "users" already exists');
    // No test ended anywhere, none started on worker 2 (the post_build hook ran, after the result was recorded).
    expect(stop.counts).toMatchObject({ passed: 0, failed: 0, error: 0, notstarted: 2 });
    const lines = (await readFile(log, 'utf8').catch(() => '')).trim().split('\n').filter(Boolean);
    expect(lines.filter((l) => l.startsWith('test done') || l === 'test on 2')).toEqual([]);
    expect(v.hooks.filter((h) => h.name === 'worker_setup' && h.status === 'failed').map((h) => h.worker)).toEqual([2]);
    // The commit does not count as built: the next trigger builds it again.
    const again = await w.build(repo);
    expect((await w.eventsOf(again.session)).at(-1)!.status).toBe('error');
  });
});

describe('package setup and the dependency cache', () => {
  let repo: Repo;

  it('a real project builds green from a cold cache: npm ci from the registry, and the entry is saved', async () => {
    repo = await w.makeRepo(NODE_PROJECT, { suite: NODE_SUITE });
    const { session } = await w.build(repo);
    const stop = (await w.eventsOf(session)).at(-1)!;
    expect(stop).toMatchObject({ status: 'passed', counts: expect.objectContaining({ passed: 1 }) });
    const v = await view(session);
    const install = v.hooks.find((h) => h.name === 'package_setup')!;
    expect(install).toMatchObject({ status: 'passed', command: 'npm ci --no-audit --no-fund', detail: 'package-lock.json: npm ci' });
    expect(v.worker_setup[0]!.notes.join('\n')).toMatch(/cache empty: no entry of branch master/);
    expect(v.worker_setup[0]!.notes.join('\n')).toMatch(/cache saved in master: node_modules/);
    const t = stop.timing as Record<string, number>;
    for (const k of ['setup', 'setup_cache', 'package_setup', 'worker_rendezvous', 'exec', 'post_build', 'capture_cache', 'done']) expect(t[k]).toBeGreaterThan(1.7e9);
    expect(t.setup_cache).toBeLessThanOrEqual(t.package_setup!);
    expect(t.post_build).toBeLessThanOrEqual(t.capture_cache!);
  });

  it('and again from a warm one: node_modules restored from the runner’s copy, the install skipped', async () => {
    const { session } = await w.build(repo, { force: true });
    const stop = (await w.eventsOf(session)).at(-1)!;
    expect(stop.status).toBe('passed');
    const v = await view(session);
    expect(v.hooks.find((h) => h.name === 'package_setup')).toMatchObject({ status: 'skipped', detail: expect.stringMatching(/not needed: the cache restored node_modules/) });
    expect(v.worker_setup[0]!.notes.join('\n')).toMatch(/cache restored node_modules \(this key, branch master, from this runner's copy\)/);
    // An exact hit saves nothing.
    expect((stop.timing as Record<string, number>).capture_cache).toBeUndefined();
  });

  it('a project without a lock file: npm install when cold, skipped on a hit of exactly its package.json', async () => {
    const { 'package-lock.json': _lock, ...lockless } = NODE_PROJECT;
    const bare = await w.makeRepo(lockless, { suite: NODE_SUITE });
    const cold = await w.build(bare);
    expect((await w.eventsOf(cold.session)).at(-1)!.status).toBe('passed');
    expect((await view(cold.session)).hooks.find((h) => h.name === 'package_setup')).toMatchObject({ status: 'passed', command: 'npm install --no-audit --no-fund' });
    const warm = await w.build(bare, { force: true });
    expect((await w.eventsOf(warm.session)).at(-1)!.status).toBe('passed');
    expect((await view(warm.session)).hooks.find((h) => h.name === 'package_setup')).toMatchObject({
      status: 'skipped',
      detail: 'package.json without a lock file: npm install; not needed: the cache restored node_modules for exactly these files',
    });
  });

  it('a pull request reads the branch’s entry but never writes one; a changed lock file falls back and the push saves', async () => {
    // A fork's pull request changing the lock file: its build may not write an entry.
    await git(repo.bare, ['branch', 'pr-7', 'master']);
    await pushCommit(repo.bare, { 'package-lock.json': { content: NODE_PROJECT['package-lock.json'].content.replace('"requires": true', '"requires": true ') } }, 'touch the lock', 'pr-7');
    const pr = await w.build(repo, { branch: 'master', ref: 'refs/heads/pr-7', changeset: { kind: 'github', id: '7' } });
    await w.eventsOf(pr.session);
    const prView = await view(pr.session);
    expect({ status: prView.status, reason: prView.reason }).toEqual({ status: 'passed', reason: null });
    expect(prView.worker_setup[0]!.notes.join('\n')).toMatch(/cache restored node_modules \(an older key, branch master/);
    expect(prView.hooks.find((h) => h.name === 'package_setup')!.status).toBe('passed');
    expect(prView.worker_setup[0]!.notes.join('\n')).toMatch(/cache not saved: this build may not write cache entries/);
    const entries = async () => (await w.sluice.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM cache_entries WHERE repo_id = $1', [repo.id])).rows[0]!.n;
    expect(await entries()).toBe(1);

    // The same change pushed to master: a trusted build, whose key missed, saves.
    await pushCommit(repo.bare, { 'package-lock.json': { content: NODE_PROJECT['package-lock.json'].content.replace('"requires": true', '"requires": true ') } }, 'touch the lock');
    const push = await w.build(repo);
    expect((await w.eventsOf(push.session)).at(-1)!.status).toBe('passed');
    expect(await entries()).toBe(2);
  });

  it('a hostile entry in the store is refused whole: nothing lands outside the tree, and the build installs instead', async () => {
    const other = await w.makeRepo(NODE_PROJECT, { suite: NODE_SUITE });
    const first = await w.build(other);
    expect((await w.eventsOf(first.session)).at(-1)!.status).toBe('passed');
    // Someone with access to the store swaps the entry for an archive whose symlink points out
    // of the tree with a file written through it; the runner's own copy is gone.
    const { rows } = await w.sluice.pool.query<{ store_key: string }>('SELECT store_key FROM cache_entries WHERE repo_id = $1', [other.id]);
    const store = w.sluice.config.store as { kind: 'dir'; dir: string };
    const victim = path.join(w.tmp, 'victim');
    await writeFile(path.join(store.dir, rows[0]!.store_key), await hostileArchive(victim));
    await rm(w.sluice.config.cacheLocal!.dir, { recursive: true, force: true });

    const second = await w.build(other, { force: true });
    expect((await w.eventsOf(second.session)).at(-1)!.status).toBe('passed');
    expect(await readdir(victim).catch(() => [])).toEqual([]);
    const v = await view(second.session);
    expect(v.worker_setup[0]!.notes.join('\n')).toMatch(/refused/i);
    expect(v.hooks.find((h) => h.name === 'package_setup')!.status).toBe('passed');
  });
});

describe('the cache in an S3-compatible bucket (gofakes3)', () => {
  let s3: S3Server;
  let onS3: World;
  beforeAll(async () => {
    s3 = await startS3Server();
    await s3.makeBucket('sluice-e2e');
    // As a runner with nothing configured runs them: npm ci in bubblewrap, as the build user.
    onS3 = await World.start({ store: s3.settings('sluice-e2e', 'ci/'), isolation: 'default' });
  });
  afterAll(async () => {
    await onS3?.stop();
    await s3?.stop();
  });

  it('a cold build saves the entry in the bucket; a runner without a copy downloads it, and the install is skipped', async () => {
    const repo = await onS3.makeRepo(NODE_PROJECT, { suite: NODE_SUITE });
    const cold = await onS3.build(repo);
    expect((await onS3.eventsOf(cold.session)).at(-1)!.status).toBe('passed');
    const { rows } = await onS3.sluice.pool.query<{ store_key: string }>('SELECT store_key FROM cache_entries WHERE repo_id = $1', [repo.id]);
    expect(rows).toHaveLength(1);
    // The blob is in the bucket, under the store's prefix, as another runner would read it.
    const blob = await openStore(s3.settings('sluice-e2e', 'ci/')).open(rows[0]!.store_key);
    expect(blob?.size).toBeGreaterThan(0);
    blob?.stream.destroy();

    // A runner that never saw the entry: its local copies are gone.
    await rm(onS3.sluice.config.cacheLocal!.dir, { recursive: true, force: true });
    const warm = await onS3.build(repo, { force: true });
    expect((await onS3.eventsOf(warm.session)).at(-1)!.status).toBe('passed');
    const v = (await onS3.session(warm.session)) as View;
    expect(v.worker_setup[0]!.notes.join('\n')).toMatch(/cache restored node_modules \(this key, branch master, from the store(, mounted: its changes stay in this build)?\)/);
    expect(v.hooks.find((h) => h.name === 'package_setup')!.status).toBe('skipped');
  });
});

/** A gzipped tar whose `tree/node_modules` is a symlink to `target`, then a file written through it. */
async function hostileArchive(target: string): Promise<Buffer> {
  const { execFileSync } = await import('node:child_process');
  const { mkdtempSync, mkdirSync, symlinkSync } = await import('node:fs');
  const dir = mkdtempSync(path.join(w.tmp, 'hostile-'));
  mkdirSync(path.join(dir, 'tree'));
  symlinkSync(target, path.join(dir, 'tree', 'node_modules'));
  mkdirSync(path.join(dir, 'later', 'tree', 'node_modules'), { recursive: true });
  await writeFile(path.join(dir, 'later', 'tree', 'node_modules', 'planted.js'), 'owned');
  const out = path.join(dir, 'entry.tgz');
  // GNU tar: the link first, then a member of the same name under it, as an attacker would order them.
  execFileSync('tar', ['-czf', out, '-C', dir, 'tree/node_modules', '-C', path.join(dir, 'later'), 'tree/node_modules/planted.js']);
  return readFile(out);
}
