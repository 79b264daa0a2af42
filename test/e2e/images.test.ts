/**
 * A build brings its own toolchain (issue 35), end to end on real parts: runners whose own
 * Node.js is 20 build a real open-source project that needs Node.js 22 (nodejs/nodejs.org's
 * `@node-core/rehype-shiki`, as published on the npm registry, its suite on `node --test`) in
 * an image served by a real registry (`crane registry serve`; the image is Debian and Node.js 22,
 * made offline by scripts/test-image.sh). Two runners, each with a store of its own as on two
 * machines, run the two workers of one build on the one digest the build resolved; a rebuild runs
 * that digest again after the tag moved on, unless asked to resolve it again. A private image
 * is pulled with the repository's registry login, and an untrusted pull request does not get
 * it; a missing image and an unreachable registry end the build saying which; a hostile image
 * (paths that escape, links out, a device node, a setuid file) runs with none of that; a
 * runner's store evicts the image least recently used past its limit.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { git, pushCommit, type RepoFiles } from '../support/gitRepo';
import { pushImage, startOpenRegistry, startPrivateRegistry, testImageLayers, type PushedImage, type TestRegistry } from '../support/registry';
import { layerTar } from '../support/tarLayers';
import { script, World, type Repo } from '../support/world';
import { freePort } from '../../src/temporal/devServer';
import { listImages } from '../../src/steps/image/store';

const run = promisify(execFile);
jest.setTimeout(600_000);

/** The real project: a package of nodejs/nodejs.org's repository, whose tests need Node.js 22 (`--experimental-test-module-mocks`). */
const PROJECT = '@node-core/rehype-shiki@1.5.0';

type Hook = { name: string; worker: number | null; status: string; command: string; detail: string | null; runner: string | null; output_tail: string };
type View = { status: string; reason: string | null; counts: Record<string, number>; image?: { reference: string; digest: string }; affected?: Record<string, unknown>; hooks: Hook[]; tests: { path: string; status: string; output?: string }[] };

let w: World;
let open: TestRegistry;
let node22: PushedImage;
let layers: { debian: string; node: string };
let scratch: string;

const view = async (session: number) => (await w.session(session)) as unknown as View;
const imageSteps = (v: View) => v.hooks.filter((h) => h.name === 'image');
const ended = async (session: number) => {
  await w.eventsOf(session);
  return view(session);
};

/** The session once it ended, which must have passed: else what its tests and hooks printed says why. */
async function passed(session: number): Promise<View> {
  const v = await ended(session);
  if (v.status === 'passed') return v;
  const { rows } = await w.sluice.pool.query<{ path: string; status: string; output: string }>('SELECT path, status, output FROM test_results WHERE session_id = $1 ORDER BY path', [session]);
  const tests = rows.map((r) => `--- ${r.path}: ${r.status}\n${r.output}`);
  const hooks = v.hooks.map((h) => `--- ${h.name} on worker ${h.worker ?? '-'}: ${h.status}\n${h.output_tail}`);
  throw new Error(`session ${session} ended ${v.status} (${v.reason ?? 'no reason'}), not passed:\n${[...hooks, ...tests].join('\n')}`);
}

/** The project as published, every file of its tarball, for a repository of our git server. */
async function realProject(): Promise<RepoFiles> {
  const dir = await mkdtemp(path.join(scratch, 'project-'));
  const { stdout } = await run('npm', ['pack', PROJECT, '--pack-destination', dir, '--silent'], { cwd: dir, timeout: 120_000 });
  await run('tar', ['xzf', path.join(dir, stdout.trim().split('\n').at(-1)!), '-C', dir]);
  const files: RepoFiles = {};
  const walk = async (rel: string) => {
    for (const entry of await readdir(path.join(dir, 'package', rel), { withFileTypes: true })) {
      const at = path.posix.join(rel, entry.name);
      if (entry.isDirectory()) await walk(at);
      else files[at] = { content: await readFile(path.join(dir, 'package', at), 'utf8') };
    }
  };
  await walk('');
  return files;
}

/** A repository whose one test says which Node.js ran it and passes only on 22. */
const VERSION_TEST = {
  't/node_test.sh': script('echo "node $(node --version) on $(grep ^VERSION_CODENAME= /etc/os-release)"; test "$(node -p "process.versions.node.split(\'.\')[0]")" = 22'),
};
const VERSION_SUITE = { branch: 'master', test_pattern: 't/*_test.sh' };

beforeAll(async () => {
  scratch = await mkdtemp(path.join(os.tmpdir(), 'sluice-e2e-images-'));
  open = await startOpenRegistry();
  layers = await testImageLayers();
  node22 = await pushImage(open.host, 'ci/node:22', { layers: [layers.debian, layers.node], env: { NODE_VERSION: '22.12.0' } });
  // Two runners, one slot each (so a build's two workers run on both), each its own store: two machines.
  w = await World.start({ runners: 2, runnerSlots: 1, isolation: 'default', imageStores: 'per-runner' });
}, 900_000);

afterAll(async () => {
  await w?.stop();
  await open?.stop();
  await rm(scratch, { recursive: true, force: true });
});

describe('a project that needs Node.js 22, on runners with Node.js 20', () => {
  let repo: Repo;
  let first: number;

  it('builds green in the image, both workers on two runners running the digest the build resolved', async () => {
    expect(process.version).toMatch(/^v20\./);
    const project = await realProject();
    expect(JSON.parse(project['package.json']!.content).engines).toBeDefined();
    repo = await w.makeRepo(
      {
        ...project,
        'sluice.yml': {
          content: [
            `image: ${open.host}/ci/node:22`,
            'profiles:',
            '  default:',
            '    workers: 2',
            // The same project on the runner's own Node.js: the contrast.
            '  host:',
            '    test_pattern: "src/__tests__/*.test.mjs"',
            '    image: null',
            '',
          ].join('\n'),
        },
      },
      { suite: { branch: 'master', test_pattern: 'src/__tests__/*.test.mjs', test_command: 'node --experimental-test-module-mocks --test' } },
    );
    ({ session: first } = await w.build(repo));
    const v = await passed(first);
    expect(v.counts).toMatchObject({ passed: 2, failed: 0, error: 0 });
    expect(v.image).toEqual({ reference: `${open.host}/ci/node:22`, digest: node22.digest });

    // Each worker got the image on its own runner (two stores: two pulls), both the one digest.
    const steps = imageSteps(v);
    expect(steps.map((s) => s.worker).sort()).toEqual([1, 2]);
    expect(new Set(steps.map((s) => s.runner))).toEqual(new Set(w.sluice.runnerNames));
    for (const s of steps) {
      expect(s).toMatchObject({ status: 'passed', command: `${open.host}/ci/node:22@${node22.digest}` });
      expect(s.detail).toMatch(/^pulled: 2 layers, /);
    }
    // Package setup ran the image's npm (no lock file: npm install), after the image.
    const installs = v.hooks.filter((h) => h.name === 'package_setup');
    expect(installs.map((h) => h.status)).toEqual(['passed', 'passed']);
  });

  it('the same project on the runner’s own Node.js 20 fails: the image is what made it pass', async () => {
    const { session } = await w.build(repo, { branch: 'master', force: true, profile_name: 'host' });
    const v = await ended(session);
    expect(v.status).not.toBe('passed');
    expect(v.image).toBeUndefined();
    expect(imageSteps(v)).toEqual([]);
  });

  it('a rebuild runs the digest its build ran after the tag moved on; a new build, or a rebuild asked to, takes the new one', async () => {
    const moved = await pushImage(open.host, 'ci/node:22', { layers: [layers.debian, layers.node, await smallLayer('moved', 'a newer build of the image\n')], env: { NODE_VERSION: '22.12.0' } });
    expect(moved.digest).not.toBe(node22.digest);
    const small = await w.makeRepo({ ...VERSION_TEST, 'sluice.yml': { content: `image: ${open.host}/ci/node:22\n` } }, { suite: VERSION_SUITE });
    // Built before the tag moved? No: this repository's first build takes the tag as it is now.
    const fresh = await passed((await w.build(small)).session);
    expect(fresh.image?.digest).toBe(moved.digest);

    // The first project's build ran the old digest: its rebuild runs it again, from the stores.
    const rebuilt = await w.sluice.admin<{ session: number }>('POST', `/api/v1/sessions/${first}/rebuild`, {});
    const again = await passed(rebuilt.session);
    expect(again.image?.digest).toBe(node22.digest);
    for (const s of imageSteps(again)) expect(s.detail).toMatch(/^from this runner's store/);

    const resolved = await w.sluice.admin<{ session: number }>('POST', `/api/v1/sessions/${first}/rebuild`, { resolve_images: true });
    const anew = await passed(resolved.session);
    expect(anew.image?.digest).toBe(moved.digest);
  });
});

describe('affected tests in an image (issue 40)', () => {
  it('a push maps what each file read, traced by the runner’s strace brought into the image; a pull request then runs only what its change reaches', async () => {
    const requiring = (mod: string) => `const m = require('../lib/${mod}');\nif (m() !== '${mod}' || !process.version.startsWith('v22.')) process.exit(1);\n`;
    const repo = await w.makeRepo(
      {
        'lib/a.js': { content: "module.exports = () => 'a';\n" },
        'lib/b.js': { content: "module.exports = () => 'b';\n" },
        't/a.test.js': { content: requiring('a') },
        't/b.test.js': { content: requiring('b') },
        'sluice.yml': { content: `image: ${open.host}/ci/node:22\nprofiles:\n  default:\n    affected: true\n` },
      },
      { suite: { branch: 'master', test_pattern: 't/*.test.js', test_command: 'node' } },
    );
    const mapped = await passed((await w.build(repo)).session);
    expect(mapped).toMatchObject({ counts: { passed: 2 }, affected: { mode: 'map' } });
    const { rows } = await w.sluice.pool.query<{ path: string; reads: string[] }>(
      'SELECT f.path, f.reads FROM dependency_maps m JOIN dependency_map_files f USING (session_id) WHERE m.repo_id = $1 ORDER BY f.path',
      [repo.id],
    );
    expect(rows).toEqual([
      { path: 't/a.test.js', reads: ['lib/a.js', 't/a.test.js'] },
      { path: 't/b.test.js', reads: ['lib/b.js', 't/b.test.js'] },
    ]);

    await git(repo.bare, ['branch', 'pr-image', 'master']);
    await pushCommit(repo.bare, { 'lib/b.js': { content: "module.exports = () => 'b'; // same\n" } }, 'touch b', 'pr-image');
    const pr = await passed((await w.build(repo, { branch: 'master', ref: 'refs/heads/pr-image', changeset: { kind: 'github', id: '40' } })).session);
    expect(pr).toMatchObject({ counts: { passed: 1, skipped: 1 }, affected: { mode: 'selected', ran: 1, total: 2, reasons: { 't/b.test.js': 'depends on lib/b.js' } } });
  });
});

describe('registries', () => {
  it('a private image is pulled with the repository’s registry login; an untrusted pull request gets none and fails saying so', async () => {
    const login = { username: 'ci-bot', password: `pw-${randomBytes(8).toString('hex')}` };
    const priv = await startPrivateRegistry(login);
    try {
      const image = await pushImage(priv.host, 'team/ci:1', { layers: [layers.debian, layers.node], auth: login });
      const repo = await w.makeRepo({ ...VERSION_TEST, 'sluice.yml': { content: `image: ${priv.host}/team/ci:1\n` } }, { suite: VERSION_SUITE });
      await w.sluice.admin('PUT', `/api/v1/repos/${repo.id}/registries/${priv.host}`, login);

      const push = await passed((await w.build(repo)).session);
      expect(push.image?.digest).toBe(image.digest);

      const pr = await ended((await w.build(repo, { branch: 'master', ref: 'refs/heads/master', changeset: { kind: 'github', id: '9' }, force: true })).session);
      expect(pr.status).toBe('error');
      expect(pr.reason).toContain(`image ${priv.host}/team/ci:1 (registry ${priv.host}): unauthorized`);
      expect(pr.reason).not.toContain(login.password);
      // Nothing ran: the image was refused before any worker could find it in a store.
      expect(pr.tests).toEqual([]);
      expect(imageSteps(pr)).toEqual([]);
    } finally {
      await priv.stop();
    }
  });

  it('a missing image and an unreachable registry end the build in error, naming the image and the registry', async () => {
    const closed = `127.0.0.1:${await freePort()}`;
    for (const [image, says] of [
      [`${open.host}/ci/no-such-image:1`, `image ${open.host}/ci/no-such-image:1 (registry ${open.host}): not found`],
      [`${closed}/ci/node:22`, `image ${closed}/ci/node:22 (registry ${closed}): unreachable`],
    ] as const) {
      const repo = await w.makeRepo({ ...VERSION_TEST, 'sluice.yml': { content: `image: ${image}\n` } }, { suite: VERSION_SUITE });
      const { session } = await w.build(repo);
      const events = await w.eventsOf(session);
      expect(events.map((e) => e.event)).toEqual(['received', 'start', 'stop']);
      const v = await view(session);
      expect(v.status).toBe('error');
      expect(v.reason).toContain(says);
      // The registry's words, never a stack trace.
      expect(v.reason).not.toMatch(/\n\s+at /);
    }
  });
});

describe('a hostile image', () => {
  it('runs with none of what it tried: no path out of its root, no device node, no setuid bit', async () => {
    const outside = await mkdtemp(path.join(scratch, 'outside-'));
    await writeFile(path.join(outside, 'canary'), 'untouched\n');
    const hostile = path.join(scratch, 'hostile.tar');
    await writeFile(
      hostile,
      layerTar([
        { path: `../../../../../../${outside}/pwned-dotdot`, body: 'escaped\n' },
        { path: '/srv/sluice-planted/pwned-absolute', body: 'escaped\n' },
        { path: 'escape', type: 'SymbolicLink', linkpath: outside },
        { path: 'escape/pwned-link', body: 'escaped\n' },
        { path: 'escape/canary', body: 'overwritten\n' },
        { path: 'hardlink-out', type: 'Link', linkpath: `${outside}/canary` },
        { path: 'usr/local/bin/', type: 'Directory' },
        { path: 'usr/local/bin/suid-root', body: '#!/bin/sh\nid -u\n', mode: 0o4755, uid: 0 },
        { path: 'dev-mem', type: 'CharacterDevice', devmaj: 1, devmin: 1, mode: 0o666 },
      ]),
    );
    const image = await pushImage(open.host, 'ci/hostile:1', { layers: [layers.debian, layers.node, hostile] });
    const checks = [
      // What landed inside its own root, harmlessly.
      'test -f /srv/sluice-planted/pwned-absolute && echo "absolute path: inside the image"',
      'test -L /escape && echo "link: kept, pointing inside the image"',
      '! test -e /dev-mem && echo "device node: none"',
      'test -f /usr/local/bin/suid-root && ! test -u /usr/local/bin/suid-root && echo "setuid bit: dropped"',
      'echo "I am $(id -u), in $(pwd)"',
    ].join(' && ');
    const repo = await w.makeRepo({ 't/hostile_test.sh': script(checks), 'sluice.yml': { content: `image: ${image.ref}\n` } }, { suite: VERSION_SUITE });
    const v = await passed((await w.build(repo)).session);
    // Nothing of it reached the runner's own files.
    expect(await readdir(outside)).toEqual(['canary']);
    expect(await readFile(path.join(outside, 'canary'), 'utf8')).toBe('untouched\n');
    expect(existsSync('/srv/sluice-planted')).toBe(false);
    // What the unpacking left out is said on the image step.
    const said = imageSteps(v)[0]!.output_tail;
    expect(said).toContain('left out of the image: dev-mem: a CharacterDevice');
    expect(said).toMatch(/left out of the image: .*pwned-dotdot: a path with '\.\.'/);
    expect(said).toMatch(/left out of the image: escape\/pwned-link: a path through escape, a symbolic link/);
  });
});

describe('a runner’s store', () => {
  it('evicts the image least recently used past its limit: a build in it again pulls it again', async () => {
    // One runner whose store holds one of these images (~180 MB unpacked each), not two.
    const small = await World.start({ runners: 1, isolation: 'default', imageMaxBytes: 250 * 1024 * 1024 });
    try {
      const images = await Promise.all(['a', 'b'].map(async (n) => pushImage(open.host, `ci/evict-${n}:1`, { layers: [layers.debian, await smallLayer('which', `image ${n}\n`)] })));
      const repos = await Promise.all(images.map((image) => small.makeRepo({ 't/which_test.sh': script('cat /etc/which'), 'sluice.yml': { content: `image: ${image.ref}\n` } }, { suite: VERSION_SUITE })));
      const detail = async (repo: Repo) => {
        const { session } = await small.build(repo, { branch: 'master', force: true });
        await small.eventsOf(session);
        const v = (await small.session(session)) as unknown as View;
        expect(v.status).toBe('passed');
        return imageSteps(v)[0]!.detail;
      };
      const stored = async () => (await listImages({ dir: small.sluice.config.images!.dir, maxBytes: 0 })).map((m) => m.digest);

      expect(await detail(repos[0]!)).toMatch(/^pulled: /);
      expect(await detail(repos[0]!)).toMatch(/^from this runner's store/);
      expect(await stored()).toEqual([images[0]!.digest]);
      // b's pull puts the store over its limit: a, which no build holds now, goes.
      expect(await detail(repos[1]!)).toMatch(/^pulled: /);
      expect(await stored()).toEqual([images[1]!.digest]);
      expect(await detail(repos[0]!)).toMatch(/^pulled: /);
      expect(await stored()).toEqual([images[0]!.digest]);
    } finally {
      await small.stop();
    }
  });
});

/** A layer of one file, as a tar file of its own. */
async function smallLayer(name: string, body: string): Promise<string> {
  await mkdir(scratch, { recursive: true });
  const file = path.join(scratch, `${name}-${randomBytes(4).toString('hex')}.tar`);
  await writeFile(file, layerTar([{ path: 'etc/', type: 'Directory' }, { path: `etc/${name}`, body }]));
  return file;
}
