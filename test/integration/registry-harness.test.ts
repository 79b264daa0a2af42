/**
 * The registry harness (test/support/registry.ts) against the real tools: crane's registry, the
 * reference registry with htpasswd auth and as a pull-through mirror, the rate-limit stand-in, and
 * the test image's cached layers (scripts/test-image.sh) pushed whole.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { c as createTar, list } from 'tar';
import { eventually } from '../support/wait';
import {
  DEFAULT_PATH,
  crane,
  pushImage,
  runCrane,
  startMirror,
  startOpenRegistry,
  startPrivateRegistry,
  startRateLimited,
  testImageLayers,
  type TestRegistry,
} from '../support/registry';

interface Manifest {
  mediaType: string;
  config: { digest: string };
  layers: { digest: string; mediaType: string }[];
}
interface ImageConfig {
  os: string;
  architecture: string;
  config: { Env?: string[]; WorkingDir?: string; User?: string };
}

let work: string;
let layer: string; // a tiny layer: etc/sluice-hello
let open: TestRegistry;

beforeAll(async () => {
  work = await mkdtemp(path.join(os.tmpdir(), 'sluice-registry-harness-'));
  await mkdir(path.join(work, 'root', 'etc'), { recursive: true });
  await writeFile(path.join(work, 'root', 'etc', 'sluice-hello'), 'hello from a layer\n');
  layer = path.join(work, 'layer.tar');
  // Fixed owner and date: the same layer bytes, so the same digests, on every run.
  await createTar({ cwd: path.join(work, 'root'), file: layer, portable: true, mtime: new Date(0) }, ['etc']);
  open = await startOpenRegistry();
});

afterAll(async () => {
  await open?.stop();
  await rm(work, { recursive: true, force: true });
});

async function entriesOf(file: string): Promise<{ path: string; type: string; linkpath?: string }[]> {
  const out: { path: string; type: string; linkpath?: string }[] = [];
  await list({ file, onReadEntry: (e) => out.push({ path: e.path, type: e.type, ...(e.linkpath ? { linkpath: e.linkpath } : {}) }) });
  return out;
}

/** The image's files, flattened (`crane export`), as tar entry paths. */
async function exported(ref: string, auth?: { username: string; password: string; host: string }): Promise<string[]> {
  const file = path.join(work, `export-${Date.now()}-${Math.random().toString(36).slice(2)}.tar`);
  await crane(['export', ref, file], { auth });
  const entries = await entriesOf(file);
  await rm(file);
  return entries.map((e) => e.path);
}

describe('the open registry (crane registry serve)', () => {
  it('takes a pushed image and gives back its manifest, config and files as pushed', async () => {
    const pushed = await pushImage(open.host, 'sluice/small:1', {
      layers: [layer],
      env: { GREETING: 'hello, world', EQUATION: 'a=b' },
      workdir: '/work',
      user: '1000:1000',
    });
    expect(pushed.ref).toBe(`${open.host}/sluice/small:1`);
    expect(pushed.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(pushed.pinned).toBe(`${open.host}/sluice/small@${pushed.digest}`);

    const manifest = JSON.parse(await crane(['manifest', pushed.ref])) as Manifest;
    expect(manifest.mediaType).toBe('application/vnd.docker.distribution.manifest.v2+json');
    expect(manifest.layers).toHaveLength(1);
    const config = JSON.parse(await crane(['config', pushed.ref])) as ImageConfig;
    expect(config).toMatchObject({ os: 'linux', architecture: 'amd64' });
    expect(config.config.Env).toEqual([`PATH=${DEFAULT_PATH}`, 'GREETING=hello, world', 'EQUATION=a=b']);
    expect(config.config.WorkingDir).toBe('/work');
    expect(config.config.User).toBe('1000:1000');
    expect((await crane(['digest', pushed.pinned])).trim()).toBe(pushed.digest);
    expect(await exported(pushed.ref)).toContain('etc/sluice-hello');
    expect(open.requests()).toContainEqual({ method: 'PUT', path: '/v2/sluice/small/manifests/1' });

    // The same inputs give the same image: tests may pin digests they computed before.
    const again = await pushImage(open.host, 'sluice/small:again', { layers: [layer], env: { GREETING: 'hello, world', EQUATION: 'a=b' }, workdir: '/work', user: '1000:1000' });
    expect(again.digest).toBe(pushed.digest);
  });

  it('pushes OCI media types when asked, and PATH as given', async () => {
    const pushed = await pushImage(open.host, 'sluice/oci', { layers: [layer], oci: true, env: { PATH: '/opt/bin:/usr/bin' } });
    expect(pushed.ref).toBe(`${open.host}/sluice/oci:latest`);
    const manifest = JSON.parse(await crane(['manifest', pushed.ref])) as Manifest;
    expect(manifest.mediaType).toBe('application/vnd.oci.image.manifest.v1+json');
    const config = JSON.parse(await crane(['config', pushed.ref])) as ImageConfig;
    expect(config.config.Env).toEqual(['PATH=/opt/bin:/usr/bin']);
  });
});

describe('the private registry (distribution, htpasswd)', () => {
  const credentials = { username: 'sluice', password: 'registry-SECRET-7e1d' };
  let registry: TestRegistry;
  beforeAll(async () => {
    registry = await startPrivateRegistry(credentials);
  });
  afterAll(() => registry?.stop());

  it('refuses anonymous and wrong credentials with UNAUTHORIZED, and serves the right ones', async () => {
    const auth = { ...credentials, host: registry.host };
    const pushed = await pushImage(registry.host, 'team/app:1', { layers: [layer], auth });

    const anonymous = await runCrane(['digest', pushed.ref]);
    expect(anonymous.code).not.toBe(0);
    expect(anonymous.stderr).toContain('UNAUTHORIZED');
    const wrong = await runCrane(['digest', pushed.ref], { auth: { ...auth, password: 'not-it' } });
    expect(wrong.code).not.toBe(0);
    expect(wrong.stderr).toContain('UNAUTHORIZED');
    // Credentials for another registry are not sent here.
    const elsewhere = await runCrane(['digest', pushed.ref], { auth: { ...auth, host: open.host } });
    expect(elsewhere.stderr).toContain('UNAUTHORIZED');

    expect((await crane(['digest', pushed.ref], { auth })).trim()).toBe(pushed.digest);
    expect(await exported(pushed.ref, auth)).toContain('etc/sluice-hello');
    expect(registry.requests()).toContainEqual({ method: 'GET', path: '/v2/', status: 401 });
    expect(registry.requests()).toContainEqual({ method: 'PUT', path: '/v2/team/app/manifests/1', status: 201 });
  });
});

describe('the mirror (distribution as a pull-through cache)', () => {
  it('serves an image that exists only in its upstream, fetching and keeping it', async () => {
    const pushed = await pushImage(open.host, 'library/mirrored:1', { layers: [layer], env: { FROM: 'upstream' } });
    const manifest = JSON.parse(await crane(['manifest', pushed.ref])) as Manifest;
    const layerDigest = manifest.layers[0]!.digest;

    const mirror = await startMirror({ upstream: `http://${open.host}` });
    try {
      expect(mirror.cached(layerDigest)).toBe(false);
      const viaMirror = `${mirror.host}/library/mirrored:1`;
      expect((await crane(['digest', viaMirror])).trim()).toBe(pushed.digest);
      const config = JSON.parse(await crane(['config', viaMirror])) as ImageConfig;
      expect(config.config.Env).toContain('FROM=upstream');
      expect(await exported(viaMirror)).toContain('etc/sluice-hello');

      // The layer came from the upstream, through the mirror, which kept it (it writes while it serves).
      expect(open.requests()).toContainEqual({ method: 'GET', path: `/v2/library/mirrored/blobs/${layerDigest}` });
      expect(mirror.requests()).toContainEqual({ method: 'GET', path: `/v2/library/mirrored/blobs/${layerDigest}`, status: 200 });
      await eventually('the mirror to keep the layer', async () => mirror.cached(layerDigest), 10_000);

      // A name the upstream lacks is not there through the mirror either.
      const missing = await runCrane(['digest', `${mirror.host}/library/absent:1`]);
      expect(missing.code).not.toBe(0);
      expect(missing.stderr).toMatch(/MANIFEST_UNKNOWN|NAME_UNKNOWN|not found/i);
    } finally {
      await mirror.stop();
    }
  });

  it('pulls from a private upstream with its own credentials, serving clients anonymously', async () => {
    const credentials = { username: 'mirror', password: 'upstream-SECRET-41f0' };
    const upstream = await startPrivateRegistry(credentials);
    const mirror = await startMirror({ upstream: `http://${upstream.host}`, upstreamAuth: credentials }).catch(async (err) => {
      await upstream.stop();
      throw err;
    });
    try {
      const pushed = await pushImage(upstream.host, 'library/private:1', { layers: [layer], auth: credentials });
      expect((await runCrane(['digest', pushed.ref])).stderr).toContain('UNAUTHORIZED');
      expect((await crane(['digest', `${mirror.host}/library/private:1`])).trim()).toBe(pushed.digest);
    } finally {
      await mirror.stop();
      await upstream.stop();
    }
  });
});

describe('the rate-limited registry (the stand-in for Docker Hub past its limit)', () => {
  it('makes crane fail with TOOMANYREQUESTS', async () => {
    const limited = await startRateLimited();
    try {
      const r = await runCrane(['digest', `${limited.host}/library/node:22`], { timeoutMs: 45_000 });
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain('TOOMANYREQUESTS');
      expect(r.stderr).toContain('You have reached your pull rate limit');
      expect(limited.requests().length).toBeGreaterThan(0);
      expect(limited.requests().every((q) => q.status === 429)).toBe(true);
    } finally {
      await limited.stop();
    }
  });

  it('with /v2/ answering, as on Docker Hub, fails at the manifest with TOOMANYREQUESTS', async () => {
    const limited = await startRateLimited({ pingOk: true });
    try {
      const r = await runCrane(['digest', `${limited.host}/library/node:22`], { timeoutMs: 45_000 });
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain('TOOMANYREQUESTS');
      expect(limited.requests()).toContainEqual({ method: 'GET', path: '/v2/library/node/manifests/22', status: 429 });
    } finally {
      await limited.stop();
    }
  });
});

describe('the test image (scripts/test-image.sh)', () => {
  let layers: { debian: string; node: string };
  // Cached by .ci/run; made here when missing (a couple of minutes, once).
  beforeAll(async () => {
    layers = await testImageLayers();
  }, 15 * 60_000);

  it('has Node.js 22 with npm and npx, and npm trusting this machine CA bundle', async () => {
    const entries = await entriesOf(layers.node);
    const byPath = new Map(entries.map((e) => [e.path, e]));
    expect(byPath.get('usr/local/bin/node')?.type).toBe('File');
    expect(byPath.get('usr/local/bin/npm')).toEqual({ path: 'usr/local/bin/npm', type: 'SymbolicLink', linkpath: '../lib/node_modules/npm/bin/npm-cli.js' });
    expect(byPath.get('usr/local/bin/npx')).toEqual({ path: 'usr/local/bin/npx', type: 'SymbolicLink', linkpath: '../lib/node_modules/npm/bin/npx-cli.js' });
    expect(byPath.get('usr/local/lib/node_modules/npm/bin/npm-cli.js')?.type).toBe('File');

    const npmrc: string[] = [];
    await list({
      file: layers.node,
      filter: (p) => p === 'usr/local/etc/npmrc',
      onReadEntry: (e) => e.on('data', (d: Buffer) => npmrc.push(d.toString())),
    });
    const cafile = /^cafile=(.+)$/m.exec(npmrc.join(''))?.[1];
    expect(cafile).toBeDefined();
    expect(byPath.get(cafile!.replace(/^\//, ''))?.type).toBe('File');
  });

  it('has a Debian bookworm root filesystem', async () => {
    const paths = new Set((await entriesOf(layers.debian)).map((e) => e.path.replace(/^\.\//, '')));
    for (const p of ['etc/debian_version', 'etc/ssl/certs/ca-certificates.crt', 'usr/bin/apt-get', 'bin', 'usr/bin/bash']) expect(paths).toContain(p);
  });

  it('pushes whole: Debian, then Node.js, with /usr/local/bin on PATH', async () => {
    const pushed = await pushImage(open.host, 'sluice/node:22', { layers: [layers.debian, layers.node], workdir: '/' });
    const manifest = JSON.parse(await crane(['manifest', pushed.ref])) as Manifest;
    expect(manifest.layers).toHaveLength(2);
    const config = JSON.parse(await crane(['config', pushed.ref])) as ImageConfig;
    const pathVar = config.config.Env?.find((e) => e.startsWith('PATH='));
    expect(pathVar?.slice('PATH='.length).split(':')).toContain('/usr/local/bin');
    expect(config).toMatchObject({ os: 'linux', architecture: 'amd64' });
  }, 5 * 60_000);
});
