/**
 * A build's image on a runner, against real registries on loopback (crane's, and the reference
 * registry with htpasswd logins and as a pull-through mirror; test/support/registry.ts): a tag
 * resolved to its digest, the image pulled into the runner's store (every blob checked against
 * its digest), run in bubblewrap as the root filesystem, found in the store the next time without
 * the registry, and the registry's refusals worded with the image and the registry. The test
 * image is Debian with Node.js 22 (scripts/test-image.sh); this machine's own Node.js is 20.
 */
import { execFile } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { leaseWorkerImage, resolveImage, type ImageDeps, type WorkerImage } from '../../src/steps/image';
import { RegistryError } from '../../src/steps/image/registry';
import { evictImages, listImages } from '../../src/steps/image/store';
import { launch } from '../../src/steps/isolation/sandbox';
import { freePort } from '../../src/temporal/devServer';
import { layerTar } from '../support/tarLayers';
import { cranePath, pushImage, startMirror, startOpenRegistry, startPrivateRegistry, startRateLimited, testImageLayers, type PushedImage, type TestRegistry } from '../support/registry';

const run = promisify(execFile);
const ROOT = { uid: process.getuid!(), gid: process.getgid!() };
const anonymous = async () => ({ logins: [] });

let scratch: string;
let open: TestRegistry;
let node: PushedImage;
let tiny: PushedImage;

/** A fresh store, and the crane `.ci/run` built. */
async function depsWith(over: Partial<ImageDeps> = {}): Promise<ImageDeps> {
  return { store: { dir: await mkdtemp(path.join(scratch, 'store-')), maxBytes: 20 * 1024 ** 3 }, crane: cranePath(), mirror: null, ...over };
}

/** A layer of one file, as a tar file of its own. */
async function smallLayer(name: string, body: string): Promise<string> {
  const file = path.join(scratch, `${name}-${randomBytes(4).toString('hex')}.tar`);
  await writeFile(file, layerTar([{ path: 'etc/', type: 'Directory' }, { path: `etc/${name}`, body }]));
  return file;
}

/** Runs `argv` in `image` the way a build process runs (steps/sandbox.ts), with a tree and a home of its own. */
async function inImage(image: WorkerImage, argv: string[]): Promise<{ stdout: string; stderr: string; code: number }> {
  const tree = await mkdtemp(path.join(scratch, 'tree-'));
  const home = await mkdtemp(path.join(scratch, 'home-'));
  await writeFile(path.join(tree, 'hello.txt'), 'from the checkout\n');
  const env = { ...image.env, PATH: image.path, HOME: home };
  const command = launch({ bwrap: 'bwrap', network: false, image: image.sandbox }, { tree, home }, tree, argv, env);
  try {
    const { stdout, stderr } = await run(command.argv[0]!, command.argv.slice(1), { env: command.env, cwd: tree });
    return { stdout, stderr, code: 0 };
  } catch (err) {
    const e = err as { stdout: string; stderr: string; code: number };
    return { stdout: e.stdout, stderr: e.stderr, code: e.code };
  }
}

/** What a refused call threw. */
async function refusal(call: Promise<unknown>): Promise<RegistryError> {
  const err = await call.then(
    () => null,
    (e: unknown) => e,
  );
  if (!(err instanceof RegistryError)) throw new Error(`expected a RegistryError, got ${String(err)}`);
  return err;
}

beforeAll(async () => {
  scratch = await mkdtemp(path.join(os.tmpdir(), 'sluice-image-pull-'));
  // The build user reaches stores under it (0711 on the way), as under a runner's /tmp.
  await chmod(scratch, 0o711);
  open = await startOpenRegistry();
  const layers = await testImageLayers();
  node = await pushImage(open.host, 'ci/node:22', { layers: [layers.debian, layers.node], env: { NODE_VERSION: '22.12.0', HOME: '/root' }, workdir: '/app', user: 'node' });
  tiny = await pushImage(open.host, 'ci/tiny:1', { layers: [await smallLayer('tiny', 'one\n')] });
}, 600_000);

afterAll(async () => {
  await open?.stop();
  await rm(scratch, { recursive: true, force: true });
});

describe('an image from a registry, run as the root filesystem', () => {
  it('resolves the tag to its digest, pulls it, and runs Node.js 22 from it in bubblewrap, as the build user', async () => {
    const deps = await depsWith();
    const resolved = await resolveImage(deps, `${open.host}/ci/node:22`, null, { logins: [] });
    expect(resolved).toEqual({ reference: `${open.host}/ci/node:22`, digest: node.digest, notes: [] });

    const image = await leaseWorkerImage(deps, resolved, anonymous, ROOT);
    try {
      expect(image.lease.fromStore).toBe(false);
      expect(image.detail).toMatch(/^pulled: 2 layers, [\d.]+ MiB fetched, [\d.]+ MiB unpacked, in [\d.]+ s$/);
      // The image's Env and WorkingDir; HOME is the build's own, and its User is not obeyed.
      expect(image.env).toMatchObject({ NODE_VERSION: '22.12.0', PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' });
      expect(image.env.HOME).toBeUndefined();
      expect(image.workingDir).toBe('/app');
      expect(image.notes.join('\n')).toContain('names the user "node"; builds run as the build user');

      const version = await inImage(image, ['node', '--version']);
      expect(version).toMatchObject({ stdout: 'v22.12.0\n', code: 0 });
      expect(process.version).toMatch(/^v20\./);
      const facts = await inImage(image, ['/bin/sh', '-c', 'grep ^VERSION_CODENAME= /etc/os-release; id -un; cat /sluice/tree/hello.txt; pwd; npm --version']);
      expect(facts.stdout).toBe(`VERSION_CODENAME=bookworm\nsluice\nfrom the checkout\n/sluice/tree\n10.9.0\n`);
      // Read-only: a build cannot change the image the next one runs.
      const write = await inImage(image, ['/bin/sh', '-c', 'touch /usr/local/bin/planted']);
      expect(write.code).not.toBe(0);
      expect(write.stderr).toMatch(/Read-only file system/);
      expect(existsSync(path.join(image.sandbox.rootfs, 'usr/local/bin/planted'))).toBe(false);
    } finally {
      await image.lease.release();
    }

    // The next build on this runner: from the store, with no registry at all.
    const again = await leaseWorkerImage({ ...deps, crane: '/nonexistent/crane' }, resolved, anonymous, ROOT);
    try {
      expect(again.lease.fromStore).toBe(true);
      expect(again.detail).toMatch(/^from this runner's store \(\d+ MiB\)$/);
      expect((await inImage(again, ['node', '-p', 'process.versions.node'])).stdout).toBe('22.12.0\n');
    } finally {
      await again.lease.release();
    }
  });

  it('a pinned digest is checked with the registry, not resolved again; a wrong one is refused', async () => {
    const deps = await depsWith();
    const pinned = await resolveImage(deps, `${open.host}/ci/node:22`, node.digest, { logins: [] });
    expect(pinned.digest).toBe(node.digest);
    const gone = `sha256:${'0'.repeat(64)}`;
    const err = await refusal(resolveImage(deps, `${open.host}/ci/node:22`, gone, { logins: [] }));
    expect(err.problem).toBe('not found');
    expect(err.message).toContain(`image ${open.host}/ci/node:22@${gone} (registry ${open.host}): not found`);
  });

  it('several workers of a runner pull an image once and share it', async () => {
    const deps = await depsWith();
    const before = open.requests().filter((r) => r.path.includes('/blobs/')).length;
    const images = await Promise.all([1, 2, 3].map(() => leaseWorkerImage(deps, { reference: `${open.host}/ci/tiny:1`, digest: tiny.digest }, anonymous, ROOT)));
    try {
      expect(images.filter((i) => !i.lease.fromStore)).toHaveLength(1);
      expect(new Set(images.map((i) => i.sandbox.rootfs)).size).toBe(1);
      // One layer and one configuration, fetched once.
      expect(open.requests().filter((r) => r.path.includes('/blobs/')).length - before).toBe(2);
    } finally {
      for (const i of images) await i.lease.release();
    }
  });
});

describe('what a registry says, in the build’s words', () => {
  it('a private image: refused without a login, pulled with one, or with a DOCKER_AUTH_CONFIG secret', async () => {
    const login = { username: 'ci-bot', password: `pw-${randomBytes(8).toString('hex')}` };
    const priv = await startPrivateRegistry(login);
    try {
      const pushed = await pushImage(priv.host, 'team/secret-tools:3', { layers: [await smallLayer('private', 'team only\n')], auth: login });
      const deps = await depsWith();
      const image = `${priv.host}/team/secret-tools:3`;

      const anon = await refusal(resolveImage(deps, image, null, { logins: [] }));
      expect(anon.problem).toBe('unauthorized');
      expect(anon.message).toContain(`image ${image} (registry ${priv.host}): unauthorized`);

      const wrong = await refusal(resolveImage(deps, image, null, { logins: [{ host: priv.host, ...login, password: 'wrong-password' }] }));
      expect(wrong.problem).toBe('unauthorized');
      expect(wrong.message).not.toContain('wrong-password');

      const withLogin = { logins: [{ host: priv.host, ...login }] };
      expect((await resolveImage(deps, image, null, withLogin)).digest).toBe(pushed.digest);
      const dockerAuthConfig = JSON.stringify({ auths: { [`http://${priv.host}`]: { auth: Buffer.from(`${login.username}:${login.password}`).toString('base64') } }, credHelpers: { [priv.host]: 'planted' } });
      expect((await resolveImage(deps, image, null, { logins: [], dockerAuthConfig })).digest).toBe(pushed.digest);

      const leased = await leaseWorkerImage(deps, { reference: image, digest: pushed.digest }, async () => withLogin, ROOT);
      try {
        expect(await readFile(path.join(leased.sandbox.rootfs, 'etc/private'), 'utf8')).toBe('team only\n');
      } finally {
        await leased.lease.release();
      }
      // The logins were on disk only while crane needed them.
      expect((await readdir(os.tmpdir())).filter((n) => n.startsWith('sluice-registry-') && existsSync(path.join(os.tmpdir(), n, 'config.json')))).toEqual([]);
    } finally {
      await priv.stop();
    }
  });

  it('an image the registry does not have, a registry that does not answer, one that rate-limits', async () => {
    const deps = await depsWith();
    const missing = await refusal(resolveImage(deps, `${open.host}/ci/node:23`, null, { logins: [] }));
    expect(missing.problem).toBe('not found');
    expect(missing.message).toMatch(new RegExp(`^image ${open.host}/ci/node:23 \\(registry ${open.host}\\): not found: the registry has no such image \\(.*MANIFEST_UNKNOWN`));

    const closed = `127.0.0.1:${await closedPort()}`;
    const unreachable = await refusal(resolveImage(deps, `${closed}/ci/node:22`, null, { logins: [] }));
    expect(unreachable.problem).toBe('unreachable');
    expect(unreachable.retryable).toBe(true);
    expect(unreachable.message).toContain(`image ${closed}/ci/node:22 (registry ${closed}): unreachable: the registry did not answer (`);
    expect(unreachable.message).toContain('connection refused');

    const limited = await startRateLimited({ pingOk: true });
    try {
      const err = await refusal(resolveImage(deps, `${limited.host}/library/node:22`, null, { logins: [] }));
      expect(err.problem).toBe('rate limited');
      expect(err.message).toContain(`image ${limited.host}/library/node:22 (registry ${limited.host}): rate limited`);
      expect(err.message).toContain('TOOMANYREQUESTS');
    } finally {
      await limited.stop();
    }

    const bad = await refusal(resolveImage(deps, 'Not An Image', null, { logins: [] }));
    expect(bad.message).toBe('image "Not An Image" must not contain spaces');
  });

  it("Docker Hub's images come through the mirror when there is one", async () => {
    const mirror = await startMirror({ upstream: `http://${open.host}` });
    try {
      // In the upstream as Docker Hub keeps an official image: library/<name>.
      const hub = await pushImage(open.host, 'library/tiny-hub:1', { layers: [await smallLayer('hub', 'from the hub\n')] });
      const deps = await depsWith({ mirror: { host: mirror.host, insecure: false } });
      const resolved = await resolveImage(deps, 'tiny-hub:1', null, { logins: [] });
      expect(resolved).toEqual({ reference: 'docker.io/library/tiny-hub:1', digest: hub.digest, notes: [] });
      const leased = await leaseWorkerImage(deps, resolved, anonymous, ROOT);
      try {
        expect(await readFile(path.join(leased.sandbox.rootfs, 'etc/hub'), 'utf8')).toBe('from the hub\n');
        const manifest = JSON.parse((await run(cranePath(), ['manifest', hub.pinned])).stdout) as { layers: { digest: string }[] };
        expect(mirror.cached(manifest.layers[0]!.digest)).toBe(true);
      } finally {
        await leased.lease.release();
      }
    } finally {
      await mirror.stop();
    }
  });

  it('a blob whose bytes do not match its digest is refused, and nothing of it is stored', async () => {
    const pushed = await pushImage(open.host, 'ci/corrupt:1', { layers: [await smallLayer('corrupt', 'original\n')] });
    const manifest = JSON.parse((await run(cranePath(), ['manifest', pushed.pinned])).stdout) as { layers: { digest: string }[] };
    const layer = manifest.layers[0]!.digest;
    // A registry (or a mirror, or anything on the way) that serves other bytes under the layer's digest.
    const liar = await tamperingProxy(open.host, (url) => url.endsWith(`/blobs/${layer}`));
    try {
      const deps = await depsWith();
      const err = await refusal(leaseWorkerImage(deps, { reference: `${liar.host}/ci/corrupt:1`, digest: pushed.digest }, anonymous, ROOT));
      expect(err.message).toContain(`image ${liar.host}/ci/corrupt:1@${pushed.digest}`);
      expect(err.message).toContain('does not match its digest');
      expect(liar.tampered()).toBeGreaterThan(0);
      expect(await listImages(deps.store)).toEqual([]);
    } finally {
      await liar.stop();
    }
  });
});

describe('the runner’s store', () => {
  /** Layer digests of a pushed image, bottom first. */
  const layersOf = async (pushed: PushedImage) =>
    (JSON.parse((await run(cranePath(), ['manifest', pushed.pinned])).stdout) as { layers: { digest: string }[] }).layers.map((l) => l.digest);

  it('fetches and unpacks a layer two images share once, their files one on disk', async () => {
    const base = await smallLayer('base', 'shared\n');
    const x = await pushImage(open.host, 'ci/share-x:1', { layers: [base, await smallLayer('x', 'x\n')] });
    const y = await pushImage(open.host, 'ci/share-y:1', { layers: [base, await smallLayer('y', 'y\n')] });
    const [shared] = await layersOf(x);
    expect((await layersOf(y))[0]).toBe(shared);
    // Every fetch of the shared blob, counted on the way (nothing is changed).
    let fetched = 0;
    const counter = await tamperingProxy(open.host, (url) => {
      if (url.endsWith(`/blobs/${shared}`)) fetched += 1;
      return false;
    });
    try {
      const deps = await depsWith();
      const a = await leaseWorkerImage(deps, { reference: `${counter.host}/ci/share-x:1`, digest: x.digest }, anonymous, ROOT);
      const b = await leaseWorkerImage(deps, { reference: `${counter.host}/ci/share-y:1`, digest: y.digest }, anonymous, ROOT);
      expect(fetched).toBe(1);
      expect(a.detail).toMatch(/^pulled: 2 layers, /);
      expect(b.detail).toMatch(/^pulled: 2 layers \(1 already on this runner\), /);
      expect(await readFile(path.join(b.sandbox.rootfs, 'etc/base'), 'utf8')).toBe('shared\n');
      expect(await readFile(path.join(b.sandbox.rootfs, 'etc/y'), 'utf8')).toBe('y\n');
      expect(existsSync(path.join(b.sandbox.rootfs, 'etc/x'))).toBe(false);
      // One file on disk, in both images.
      expect((await stat(path.join(b.sandbox.rootfs, 'etc/base'))).ino).toBe((await stat(path.join(a.sandbox.rootfs, 'etc/base'))).ino);
      await a.lease.release();
      await b.lease.release();
    } finally {
      await counter.stop();
    }
  });

  it('a hostile image cannot change the files of a layer it shares with another', async () => {
    const base = path.join(scratch, `hostile-base-${randomBytes(4).toString('hex')}.tar`);
    await writeFile(base, layerTar([{ path: 'etc/', type: 'Directory' }, { path: 'etc/shared.conf', body: 'trusted\n' }, { path: 'bin/', type: 'Directory' }, { path: 'bin/tool', body: '#!/bin/sh\necho trusted\n', mode: 0o755 }]));
    // On top of the shared layer: a hard link to its file then a file of the same name (a write
    // "through" the link, if extraction opened what is there), a whiteout, a link replaced by a
    // file, and a directory made a link to the host.
    const evil = path.join(scratch, `hostile-top-${randomBytes(4).toString('hex')}.tar`);
    await writeFile(
      evil,
      layerTar([
        { path: 'etc/', type: 'Directory' },
        { path: 'etc/alias', type: 'Link', linkpath: 'etc/shared.conf' },
        { path: 'etc/alias', body: 'poisoned\n' },
        { path: 'etc/.wh.shared.conf', body: '' },
        { path: 'etc/shared.conf', type: 'Link', linkpath: 'bin/tool' },
        { path: 'bin/tool', body: '#!/bin/sh\necho poisoned\n', mode: 0o755 },
      ]),
    );
    const hostile = await pushImage(open.host, 'ci/hostile-share:1', { layers: [base, evil] });
    const benign = await pushImage(open.host, 'ci/benign-share:1', { layers: [base, await smallLayer('benign', 'ok\n')] });
    expect((await layersOf(hostile))[0]).toBe((await layersOf(benign))[0]);

    const deps = await depsWith();
    const h = await leaseWorkerImage(deps, { reference: `${open.host}/ci/hostile-share:1`, digest: hostile.digest }, anonymous, ROOT);
    const b = await leaseWorkerImage(deps, { reference: `${open.host}/ci/benign-share:1`, digest: benign.digest }, anonymous, ROOT);
    expect(b.detail).toMatch(/1 already on this runner/);
    // The benign image sees the shared layer as it was pushed; the hostile one what its own layer made of it.
    expect(await readFile(path.join(b.sandbox.rootfs, 'etc/shared.conf'), 'utf8')).toBe('trusted\n');
    expect(await readFile(path.join(b.sandbox.rootfs, 'bin/tool'), 'utf8')).toBe('#!/bin/sh\necho trusted\n');
    expect(await readFile(path.join(h.sandbox.rootfs, 'bin/tool'), 'utf8')).toBe('#!/bin/sh\necho poisoned\n');
    // And a third image of the shared layer, pulled after both, too.
    await h.lease.release();
    await b.lease.release();
    const again = await pushImage(open.host, 'ci/benign-share-2:1', { layers: [base, await smallLayer('other', 'ok\n')] });
    const c = await leaseWorkerImage(deps, { reference: `${open.host}/ci/benign-share-2:1`, digest: again.digest }, anonymous, ROOT);
    expect(await readFile(path.join(c.sandbox.rootfs, 'etc/shared.conf'), 'utf8')).toBe('trusted\n');
    expect(await readFile(path.join(c.sandbox.rootfs, 'bin/tool'), 'utf8')).toBe('#!/bin/sh\necho trusted\n');
    await c.lease.release();
  });

  it('evicts the least recently used images past its limit, never one a build holds', async () => {
    const images = await Promise.all(['a', 'b', 'c'].map(async (n) => pushImage(open.host, `ci/evict-${n}:1`, { layers: [await smallLayer(n, n.repeat(2000))] })));
    const deps = await depsWith();
    // Room for two of them.
    deps.store.maxBytes = 4500;
    const lease = (i: number) => leaseWorkerImage(deps, { reference: `${open.host}/ci/evict-${'abc'[i]}:1`, digest: images[i]!.digest }, anonymous, ROOT);

    const a = await lease(0);
    await a.lease.release();
    const b = await lease(1);
    // c comes while b is held: a, the least recently used that nobody holds, goes.
    const c = await lease(2);
    expect((await listImages(deps.store)).map((m) => m.digest).sort()).toEqual([images[1]!.digest, images[2]!.digest].sort());
    await c.lease.release();

    // a again (pulled anew) while b is still held: c goes, not b.
    const a2 = await lease(0);
    expect(a2.lease.fromStore).toBe(false);
    expect((await listImages(deps.store)).map((m) => m.digest).sort()).toEqual([images[0]!.digest, images[1]!.digest].sort());
    // Held by a running build, b survives any sweep, over the limit or not.
    deps.store.maxBytes = 1;
    await evictImages(deps.store);
    expect((await listImages(deps.store)).map((m) => m.digest).sort()).toEqual([images[0]!.digest, images[1]!.digest].sort());
    expect((await stat(b.sandbox.rootfs)).isDirectory()).toBe(true);
    await a2.lease.release();
    await b.lease.release();
    await evictImages(deps.store);
    expect(await listImages(deps.store)).toEqual([]);
  });

  it('a store is reachable by the build user, and lists nothing to it', async () => {
    const deps = await depsWith();
    const image = await leaseWorkerImage(deps, { reference: `${open.host}/ci/tiny:1`, digest: tiny.digest }, anonymous, ROOT);
    try {
      expect((await stat(deps.store.dir)).mode & 0o777).toBe(0o711);
      expect((await stat(path.dirname(image.sandbox.rootfs))).mode & 0o777).toBe(0o711);
      expect((await stat(image.sandbox.rootfs)).mode & 0o777).toBe(0o755);
      expect((await stat(image.sandbox.passwd)).mode & 0o777).toBe(0o644);
      expect(await readFile(image.sandbox.passwd, 'utf8')).toContain(`sluice:x:${ROOT.uid}:${ROOT.gid}:Sluice build:/sluice/home:/bin/sh`);
    } finally {
      await image.lease.release();
    }
  });
});

/** A port nothing listens on. */
const closedPort = (): Promise<number> => freePort();

/**
 * A registry in front of `upstream` that flips a byte of the responses `corrupt` picks: what a
 * broken mirror or a tampering network would serve. A stand-in on purpose: no real registry
 * serves other bytes under a digest.
 */
async function tamperingProxy(upstream: string, corrupt: (url: string) => boolean): Promise<{ host: string; tampered(): number; stop(): Promise<void> }> {
  let tampered = 0;
  const server = http.createServer((req, res) => {
    const forward = http.request({ host: '127.0.0.1', port: Number(upstream.split(':')[1]), path: req.url, method: req.method, headers: { ...req.headers, host: upstream } }, (up) => {
      const chunks: Buffer[] = [];
      up.on('data', (c: Buffer) => chunks.push(c));
      up.on('end', () => {
        const body = Buffer.concat(chunks);
        if (req.method === 'GET' && up.statusCode === 200 && corrupt(req.url ?? '') && body.length > 0) {
          body[body.length - 1] = body[body.length - 1]! ^ 0xff;
          tampered += 1;
        }
        res.writeHead(up.statusCode ?? 502, up.headers);
        res.end(body);
      });
    });
    forward.on('error', () => res.writeHead(502).end());
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { host: `127.0.0.1:${port}`, tampered: () => tampered, stop: () => new Promise((resolve) => server.close(() => resolve())) };
}
