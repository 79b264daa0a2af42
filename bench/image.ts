/**
 * What running in an image costs (issue 35), in one run, each figure beside its baseline:
 * - per test file on a warm runner: 200 files of `exit 0`, one process each, `workers: 1`, the
 *   same repository with `image:` and without (exec → post_build ÷ 200), in turns, best of 3;
 * - the first pull of the test image (Debian and Node.js 22, ~300 MB unpacked, made by
 *   scripts/test-image.sh) from a registry on loopback into an empty store (fetched, checked,
 *   unpacked, ready to run), beside `crane pull` of the same image from the same registry (which
 *   fetches and checks, and unpacks nothing), and beside `crane pull` followed by GNU tar
 *   unpacking its layers (what the same result costs with the tools alone); best of 3 each;
 * - a second image on the first one's Debian layer, pulled into a store that has the first
 *   (only its own layer fetched: layers.ts), beside the same pull into an empty store;
 * - a warm start: trigger → `stop` of a one-file build with `image:` on a runner whose store has
 *   it, beside the same build without, in turns, best of 3.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Cluster, ClusterRepo } from '../test/support/cluster';
import type { RepoFiles } from '../test/support/gitRepo';
import { cranePath, pushImage, startOpenRegistry, testImageLayers } from '../test/support/registry';
import { script } from '../test/support/world';
import { leaseWorkerImage } from '../src/steps/image';
import type { ResolvedImage } from '../src/core/session';
import { layerTar } from '../test/support/tarLayers';
import type { Row } from './table';

const run = promisify(execFile);
const FILES = 200;
const ROUNDS = 3;

export async function imageFigures(c: Cluster, log: (line: string) => void): Promise<Row[]> {
  const registry = await startOpenRegistry();
  const work = await mkdtemp(path.join(c.tmp, 'image-'));
  try {
    log('image: pushing the test image (Debian and Node.js 22) to a registry on loopback');
    const layers = await testImageLayers();
    const image = await pushImage(registry.host, 'bench/node:22', { layers: [layers.debian, layers.node] });
    const reference = `${registry.host}/bench/node:22`;
    // A second image on the same Debian layer, as two images of one distribution are.
    const extra = path.join(work, 'extra.tar');
    await writeFile(extra, layerTar([{ path: 'etc/', type: 'Directory' }, { path: 'etc/bench-extra', body: 'extra\n' }]));
    const sibling = await pushImage(registry.host, 'bench/debian-extra:1', { layers: [layers.debian, extra] });
    return [
      ...(await pullFigures(work, reference, image.digest, image.pinned, log)),
      await sharedBaseFigure(work, { reference, digest: image.digest }, { reference: `${registry.host}/bench/debian-extra:1`, digest: sibling.digest }, log),
      ...(await buildFigures(c, reference, log)),
    ];
  } finally {
    await registry.stop();
    await rm(work, { recursive: true, force: true });
  }
}

const seconds = async (fn: () => Promise<unknown>) => {
  const t = performance.now();
  await fn();
  return (performance.now() - t) / 1000;
};

async function pullFigures(work: string, reference: string, digest: string, pinned: string, log: (line: string) => void): Promise<Row[]> {
  let sluice = Infinity;
  let crane = Infinity;
  let craneAndTar = Infinity;
  const root = { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 };
  for (let round = 1; round <= ROUNDS; round++) {
    log(`image: first pull, round ${round} of ${ROUNDS}`);
    const store = await mkdtemp(path.join(work, 'store-'));
    sluice = Math.min(
      sluice,
      await seconds(async () => {
        const leased = await leaseWorkerImage({ store: { dir: store, maxBytes: 2 ** 40 }, crane: cranePath(), mirror: null }, { reference, digest }, async () => ({ logins: [] }), root);
        await leased.lease.release();
      }),
    );
    await rm(store, { recursive: true, force: true });

    const layout = await mkdtemp(path.join(work, 'crane-'));
    crane = Math.min(crane, await seconds(() => run(cranePath(), ['pull', '--format=oci', pinned, layout])));
    await rm(layout, { recursive: true, force: true });

    const layout2 = await mkdtemp(path.join(work, 'crane-tar-'));
    craneAndTar = Math.min(
      craneAndTar,
      await seconds(async () => {
        await run(cranePath(), ['pull', '--format=oci', pinned, layout2]);
        const rootfs = path.join(layout2, 'rootfs');
        await run('mkdir', [rootfs]);
        // The layers in the manifest's order, as a plain unpack would (whiteouts aside).
        const manifest = JSON.parse((await run(cranePath(), ['manifest', pinned])).stdout) as { layers: { digest: string }[] };
        for (const layer of manifest.layers) await run('tar', ['xzf', path.join(layout2, 'blobs', 'sha256', layer.digest.split(':')[1]!), '-C', rootfs]);
      }),
    );
    await rm(layout2, { recursive: true, force: true });
  }
  return [
    {
      name: `Image, first pull of the test image (~300 MB unpacked, 2 layers) from a registry on loopback, fetched, checked and unpacked (best of ${ROUNDS})`,
      value: sluice,
      unit: 's',
      baseline: { name: '`crane pull` of the same image, then GNU tar unpacking its layers', value: craneAndTar },
      target: { text: '≤ 1.5 × crane pull + GNU tar', met: sluice <= craneAndTar * 1.5 },
      note: `${(sluice / craneAndTar).toFixed(2)} ×; \`crane pull\` alone (which unpacks nothing) ${crane.toFixed(2)} s`,
    },
  ];
}

/**
 * A second image on the first one's base layer (Debian, ~100 MB unpacked, and a file of its own):
 * pulled into a store that has the first, beside the same pull into an empty store; best of ROUNDS.
 */
async function sharedBaseFigure(work: string, first: ResolvedImage, second: ResolvedImage, log: (line: string) => void): Promise<Row> {
  const root = { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 };
  const lease = async (store: string, image: ResolvedImage) => {
    const leased = await leaseWorkerImage({ store: { dir: store, maxBytes: 2 ** 40 }, crane: cranePath(), mirror: null }, image, async () => ({ logins: [] }), root);
    await leased.lease.release();
    return leased.detail;
  };
  let warm = Infinity;
  let cold = Infinity;
  let detail = '';
  for (let round = 1; round <= ROUNDS; round++) {
    log(`image: a second image on the same base layer, round ${round} of ${ROUNDS}`);
    const store = await mkdtemp(path.join(work, 'store-'));
    await lease(store, first);
    const t = performance.now();
    detail = await lease(store, second);
    warm = Math.min(warm, (performance.now() - t) / 1000);
    await rm(store, { recursive: true, force: true });
    const empty = await mkdtemp(path.join(work, 'store-'));
    cold = Math.min(cold, await seconds(() => lease(empty, second)));
    await rm(empty, { recursive: true, force: true });
  }
  return {
    name: `Image, a second image on the first one's base layer (Debian and a file), pulled where the first is (best of ${ROUNDS})`,
    value: warm,
    unit: 's',
    baseline: { name: 'the same pull into an empty store', value: cold },
    target: { text: 'pulls only its own layer', met: /1 already on this runner/.test(detail) },
    note: detail,
  };
}

async function buildFigures(c: Cluster, reference: string, log: (line: string) => void): Promise<Row[]> {
  const files: RepoFiles = Object.fromEntries(Array.from({ length: FILES }, (_, i) => [`test/t${String(i).padStart(3, '0')}_test.sh`, script('exit 0')]));
  const suite = { branch: 'master', test_pattern: 'test/*_test.sh', workers: 1 };
  const inImage = await c.makeRepo(files, { ...suite, image: reference });
  const onHost = await c.makeRepo(files, suite);
  const one: RepoFiles = { 'test/one_test.sh': script('exit 0') };
  const warmInImage = await c.makeRepo(one, { ...suite, image: reference });
  const warmOnHost = await c.makeRepo(one, suite);

  log('image: a first build in the image on every runner (their store gets it: they share one, as on one machine)');
  await build(c, inImage);
  await build(c, onHost);

  let perFile = { image: Infinity, host: Infinity };
  let start = { image: Infinity, host: Infinity };
  for (let round = 1; round <= ROUNDS; round++) {
    log(`image: per-file and warm-start builds, round ${round} of ${ROUNDS}`);
    perFile = { image: Math.min(perFile.image, ((await build(c, inImage)).span * 1000) / FILES), host: Math.min(perFile.host, ((await build(c, onHost)).span * 1000) / FILES) };
    start = { image: Math.min(start.image, (await build(c, warmInImage)).whole), host: Math.min(start.host, (await build(c, warmOnHost)).whole) };
  }
  return [
    {
      name: `Image, per test file on a warm runner (${FILES} files of \`exit 0\`, exec → post_build ÷ ${FILES}, best of ${ROUNDS})`,
      value: perFile.image,
      unit: 'ms',
      baseline: { name: 'the same files without `image:`', value: perFile.host },
      target: { text: '≤ baseline + 10 ms', met: perFile.image <= perFile.host + 10 },
      note: `${(perFile.image - perFile.host).toFixed(2)} ms a file for running in the image`,
    },
    {
      name: `Image, a warm start: trigger → \`stop\` of a one-file build whose runner's store has the image (best of ${ROUNDS})`,
      value: start.image,
      unit: 's',
      baseline: { name: 'the same build without `image:`', value: start.host },
      target: { text: '≤ baseline + 1 s', met: start.image <= start.host + 1 },
      note: `${((start.image - start.host) * 1000).toFixed(0)} ms for the image (resolving its tag, leasing it from the store)`,
    },
  ];
}

/** A forced build that must pass: its test span and its whole time (trigger → `stop` at the receiver), in seconds. */
async function build(c: Cluster, repo: ClusterRepo): Promise<{ span: number; whole: number }> {
  const t = performance.now();
  const session = await c.build(repo, { branch: 'master', force: true });
  const stop = (await c.eventsOf(session, 600_000)).find((e) => e.event === 'stop')!;
  const whole = (performance.now() - t) / 1000;
  if (stop.status !== 'passed') throw new Error(`session ${session} ended ${String(stop.status)}`);
  const timing = stop.timing as Record<string, number>;
  return { span: timing.post_build! - timing.exec!, whole };
}
