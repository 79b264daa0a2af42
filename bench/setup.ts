/**
 * The setup figures (issue 21), on Sluice in its production shape (test/support/cluster.ts):
 * - package setup of a project with about 100 MB of node_modules (bench/fixtures/node-100mb:
 *   typescript, jest, eslint, webpack, babel, lodash; 10,000 files), from a cold cache (`npm ci`
 *   from the registry) and from a warm one (node_modules restored from the runner's copy, the
 *   install skipped): checkout done (`setup`) → dependencies ready (`package_setup`), warm
 *   beside cold in the same run;
 * - a restore from a runner's local copy, beside a plain `cp -a` of the same tree (the local
 *   copy of the node_modules the cold build installed), five times each, in turns (the median);
 *   and a restore by hard links of the same copy (`link: true`, issue 39's P7b: the spare the
 *   previous restore linked, taken whole), where there is a build user to restore for.
 */
import { execFileSync } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { restoreCache, type CacheDeps } from '../src/steps/cache';
import { sparesSettled } from '../src/steps/cache/link';
import { findLocal } from '../src/steps/cache/local';
import { openStore } from '../src/store';
import type { Cluster } from '../test/support/cluster';
import type { Row } from './table';
import { pgBuildRecords } from '../src/db/buildRecords';

const FIXTURE = path.join(__dirname, 'fixtures', 'node-100mb');
/** What package setup caches for an npm project by default (steps/packages.ts). */
const NPM_CACHE = { key_paths: ['package-lock.json'], save_paths: ['node_modules'] };
const RUNS = 5;

export async function setupFigures(c: Cluster, log: (line: string) => void): Promise<Row[]> {
  const files = {
    'package.json': { content: await readFile(path.join(FIXTURE, 'package.json'), 'utf8') },
    'package-lock.json': { content: await readFile(path.join(FIXTURE, 'package-lock.json'), 'utf8') },
    'test/deps_test.js': { content: "require('lodash'); require('typescript'); console.log('dependencies load');\n" },
  };
  const repo = await c.makeRepo(files, { branch: 'master', test_pattern: 'test/*_test.js', test_command: 'node' });

  const ready = async (label: string) => {
    const session = await c.build(repo, { branch: 'master', force: true });
    const stop = (await c.eventsOf(session, 900_000)).find((e) => e.event === 'stop')!;
    if (stop.status !== 'passed') throw new Error(`${label} build ${session} ended ${stop.status}`);
    const t = stop.timing as Record<string, number>;
    const seconds = t.package_setup! - t.setup!;
    log(`${label} build: dependencies ready ${seconds.toFixed(1)} s after the checkout`);
    return seconds;
  };
  log('cold build: npm ci of ~100 MB of node_modules from the registry');
  const cold = await ready('cold');
  log('warm build: the same lock file, node_modules from the runner’s copy');
  const warm = await ready('warm');

  const local = await localRestore(c, repo.id, files['package-lock.json'].content, log);
  return [
    {
      name: 'Package setup, ~100 MB node_modules, warm cache (checkout → dependencies ready)',
      value: warm,
      unit: 's',
      baseline: { name: 'cold cache: npm ci from the registry', value: cold },
      target: { text: 'cold ≥ 4 × warm', met: cold >= 4 * warm },
      note: `${(cold / warm).toFixed(1)}× faster`,
    },
    {
      name: 'Restore from a runner’s local copy (~100 MB, 10,000 files; median of 5)',
      value: local.restore,
      unit: 's',
      baseline: { name: 'cp -a of the same tree', value: local.copy },
      target: { text: '≤ 1.5 × cp -a', met: local.restore <= 1.5 * local.copy },
      note: `${(local.restore / local.copy).toFixed(2)}× cp -a`,
    },
    ...(local.linked === null
      ? []
      : [
          {
            name: 'P7b: restore linked from a runner’s local copy (`link: true`, as the build user; median of 5)',
            value: local.linked,
            unit: 's',
            baseline: { name: 'cp -a of the same tree', value: local.copy },
            target: { text: '≤ 0.5 s', met: local.linked <= 0.5 },
            note: `${(local.copy / local.linked).toFixed(1)}× faster than cp -a; taking the spare the last restore left (the first, linking every file: ${local.firstLink?.toFixed(2) ?? '?'} s)`,
          },
        ]),
  ];
}

/**
 * Restores the entry the cold build saved into fresh checkouts, the way a runner does (from the
 * local copy the runners share on this machine), beside `cp -a` of that same local copy. Each
 * is timed after a `sync` (the writes of the one before must not slow the next), in turns,
 * after one untimed restore that brings the copy into the page cache.
 */
async function localRestore(c: Cluster, repoId: number, lock: string, log: (line: string) => void): Promise<{ restore: number; copy: number; linked: number | null; firstLink: number | null }> {
  const deps: CacheDeps = {
    records: pgBuildRecords(c.db.pool, Buffer.alloc(32)),
    store: openStore({ kind: 'dir', dir: c.env.SLUICE_CACHE_URL! }),
    local: { dir: c.env.SLUICE_CACHE_LOCAL_DIR!, maxBytes: 20 * 2 ** 30 },
    limits: { maxEntryBytes: 2 * 2 ** 30, maxRepoBytes: 10 * 2 ** 30 },
  };
  const { rows } = await c.db.pool.query<{ store_key: string }>('SELECT store_key FROM cache_entries WHERE repo_id = $1', [repoId]);
  const copy = await findLocal(deps.local, rows[0]!.store_key);
  if (!copy) throw new Error('the runners kept no local copy of the entry');
  const work = await mkdtemp(path.join(c.tmp, 'restore-'));
  // The build user reaches its checkouts, as it reaches a runner's workspace (the cluster's directory is 0700).
  await chmod(c.tmp, 0o711);
  await chmod(work, 0o755);
  const restore = async (i: number) => {
    const tree = path.join(work, `tree-${i}`);
    await mkdir(tree, { recursive: true });
    await writeFile(path.join(tree, 'package-lock.json'), lock);
    execFileSync('sync');
    const started = performance.now();
    const restored = await restoreCache(deps, NPM_CACHE, { repoId, readScopes: ['master'], writeScope: null, tree, home: path.join(work, `home-${i}`) });
    const seconds = (performance.now() - started) / 1000;
    if (restored.hit !== 'exact' || restored.source !== 'local') throw new Error(`expected a hit on the local copy, got ${restored.hit} from ${restored.source}: ${restored.notes.join('; ')}`);
    await rm(tree, { recursive: true, force: true });
    return seconds;
  };
  // Linked (issue 39, `link: true`), into a checkout of the build user's, as a runner with SLUICE_BUILD_USER restores.
  const owner = buildUser();
  const linked = async (i: number) => {
    const tree = path.join(work, `linked-${i}`, 'tree');
    const home = path.join(work, `linked-${i}`, 'home');
    await mkdir(tree, { recursive: true });
    await mkdir(home, { recursive: true });
    await writeFile(path.join(tree, 'package-lock.json'), lock);
    execFileSync('chown', ['-R', `${owner!.uid}:${owner!.gid}`, path.dirname(tree)]);
    // A warm runner between two builds: the spare the last restore left is linked by now.
    await sparesSettled();
    execFileSync('sync');
    const started = performance.now();
    const restored = await restoreCache(deps, { ...NPM_CACHE, link: true }, { repoId, readScopes: ['master'], writeScope: null, tree, home, owner: owner! });
    const seconds = (performance.now() - started) / 1000;
    if (!restored.linked || restored.notes.length > 0 || !restored.paths.includes('node_modules')) throw new Error(`expected a linked restore of node_modules: ${JSON.stringify(restored)}`);
    await rm(path.dirname(tree), { recursive: true, force: true });
    return seconds;
  };
  const cpA = async (i: number) => {
    const to = path.join(work, `copy-${i}`);
    execFileSync('sync');
    const started = performance.now();
    execFileSync('cp', ['-a', path.join(copy.dir, 'tree', 'node_modules'), to]);
    const seconds = (performance.now() - started) / 1000;
    await rm(to, { recursive: true, force: true });
    return seconds;
  };
  const restores: number[] = [];
  const copies: number[] = [];
  const links: number[] = [];
  let firstLink: number | null = null;
  try {
    await restore(0);
    // The first linked restore has no spare to take: it links every file (the figure before spares).
    if (owner) firstLink = await linked(0);
    for (let i = 1; i <= RUNS; i++) {
      restores.push(await restore(i));
      copies.push(await cpA(i));
      if (owner) links.push(await linked(i));
      log(`restore ${restores.at(-1)!.toFixed(2)} s, cp -a ${copies.at(-1)!.toFixed(2)} s${owner ? `, linked ${links.at(-1)!.toFixed(2)} s` : ''}`);
    }
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  return { restore: median(restores), copy: median(copies), linked: owner ? median(links) : null, firstLink };
}

/** The build user a root runner runs builds as (.ci/run makes it), or null where there is none. */
function buildUser(): { uid: number; gid: number } | null {
  try {
    const id = (flag: string) => Number(execFileSync('id', [flag, 'sluice-build'], { encoding: 'utf8', stdio: 'pipe' }).trim());
    return process.getuid?.() === 0 ? { uid: id('-u'), gid: id('-g') } : null;
  } catch {
    return null;
  }
}
