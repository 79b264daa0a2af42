// An image's layers as one root directory: normal layers come out as GNU tar would write them
// (less setuid bits and devices), whiteouts delete from the lower layers only, and hostile layers,
// built header by header, write nothing outside the root and nothing through a link.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, lstatSync, readFileSync, readdirSync, readlinkSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { applyLayer, extractLayer, prepareMountPoints, readRootFile, type ExtractedLayer } from '../../src/steps/image/unpack';
import { chunked, layerTar, type LayerEntry } from '../support/tarLayers';

const CANARY = 'the host file nobody may touch\n';

let base: string;
/** The image's root, built layer by layer. */
let root: string;
/** A directory beside the root, as the host's /etc would be: hostile layers aim at it. */
let outside: string;
/** A name no other test or process uses, for the files a hostile layer tries to write beside the root. */
let token: string;
let layers = 0;

beforeEach(async () => {
  base = await mkdtemp(path.join(os.tmpdir(), 'sluice-image-unpack-'));
  root = path.join(base, 'root');
  outside = path.join(base, 'outside');
  token = randomBytes(6).toString('hex');
  await mkdir(root);
  await mkdir(outside);
  await writeFile(path.join(outside, 'canary'), CANARY);
});
afterEach(async () => {
  await rm(base, { recursive: true, force: true });
});

/** Extracts `entries` into a fresh directory (streamed in 1000-byte chunks) and merges it over the root. */
async function addLayer(entries: LayerEntry[]): Promise<ExtractedLayer> {
  const dir = path.join(base, `layer-${++layers}`);
  await mkdir(dir);
  const layer = await extractLayer(chunked(layerTar(entries)), dir);
  await applyLayer(root, dir, layer);
  await rm(dir, { recursive: true, force: true });
  return layer;
}

function inRoot(rel: string): string {
  return path.join(root, rel);
}

function read(rel: string): string {
  return readFileSync(inRoot(rel), 'utf8');
}

function modeOf(rel: string): number {
  return lstatSync(inRoot(rel)).mode & 0o7777;
}

function kindOf(rel: string): string {
  const info = lstatSync(inRoot(rel), { throwIfNoEntry: false });
  if (!info) return 'missing';
  return info.isSymbolicLink() ? 'link' : info.isDirectory() ? 'dir' : info.isFile() ? 'file' : 'other';
}

/** The outside directory holds its canary alone, unchanged and linked nowhere else; nothing was written beside the root. */
function expectOutsideUntouched(): void {
  expect(readdirSync(outside)).toEqual(['canary']);
  expect(readFileSync(path.join(outside, 'canary'), 'utf8')).toBe(CANARY);
  expect(statSync(path.join(outside, 'canary')).nlink).toBe(1);
  const beside = readdirSync(base).filter((name) => !/^(root|outside|layer-\d+)$/.test(name));
  expect(beside).toEqual([]);
  expect(readdirSync(path.dirname(base)).filter((name) => name.includes(token))).toEqual([]);
}

/** The extended attributes of a file, where a tool can list them. */
function xattrsOf(file: string): string[] | null {
  try {
    const out = execFileSync('python3', ['-c', 'import os, sys; print("\\n".join(os.listxattr(sys.argv[1])))', file], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    return out.split('\n').filter(Boolean);
  } catch {
    try {
      const out = execFileSync('getfattr', ['-d', '-m', '-', '--absolute-names', file], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
      return out.split('\n').filter((line) => line.includes('='));
    } catch {
      return null;
    }
  }
}

describe('a normal image', () => {
  it('merges two layers: files, directories, links and modes, less setuid and setgid', async () => {
    const big = randomBytes(300 * 1024);
    const lower = await addLayer([
      { path: './' },
      { path: './bin/', mode: 0o755 },
      { path: './bin/tool', body: '#!/bin/sh\necho tool\n', mode: 0o755 },
      { path: './bin/tool2', type: 'Link', linkpath: './bin/tool' },
      { path: './bin/su', body: 'su', mode: 0o4755 },
      { path: './bin/wall', body: 'wall', mode: 0o2755, gid: 5 },
      { path: './etc/', mode: 0o755 },
      { path: './etc/conf', body: 'lower\n', mode: 0o640 },
      { path: './etc/secret', body: 's', mode: 0o600 },
      { path: './usr/lib/libx.so', body: 'ELF' },
      { path: './opt/', mode: 0o711 },
      { path: './opt/keep', body: 'k' },
      { path: './tmp/', mode: 0o1777 },
      { path: './ro/', mode: 0o555 },
      { path: './ro/file', body: 'r', mode: 0o444 },
      { path: './lnk', type: 'SymbolicLink', linkpath: 'bin/tool' },
      { path: './abs', type: 'SymbolicLink', linkpath: '/etc/conf' },
    ]);
    expect(lower).toMatchObject({ skipped: 0, notes: [], whiteouts: [], opaqueDirs: [], pendingLinks: [] });
    expect(lower.bytes).toBe('#!/bin/sh\necho tool\n'.length + 'su'.length + 'wall'.length + 'lower\n'.length + 1 + 3 + 1 + 1);
    expect(lower.impliedDirs.sort()).toEqual(['usr', 'usr/lib']);

    const upper = await addLayer([
      { path: 'etc/', mode: 0o700 },
      { path: 'etc/conf', body: 'upper\n', mode: 0o644 },
      { path: 'etc/extra', body: 'new' },
      { path: 'lnk', body: 'a file now' },
      { path: 'usr/local/bin/node', body: big, mode: 0o755 },
      { path: 'bin/tool3', type: 'Link', linkpath: 'bin/tool' },
      { path: 'opt/added', body: 'a' },
      { path: 'lib', type: 'SymbolicLink', linkpath: 'usr/lib' },
    ]);
    expect(upper.pendingLinks).toEqual([{ path: 'bin/tool3', target: 'bin/tool' }]);

    expect(read('bin/tool')).toBe('#!/bin/sh\necho tool\n');
    expect(modeOf('bin/tool')).toBe(0o755);
    // One file, three names: a link within the lower layer, and one from the upper layer to it.
    const ino = lstatSync(inRoot('bin/tool')).ino;
    expect(lstatSync(inRoot('bin/tool2')).ino).toBe(ino);
    expect(lstatSync(inRoot('bin/tool3')).ino).toBe(ino);
    expect(lstatSync(inRoot('bin/tool')).nlink).toBe(3);
    expect(modeOf('bin/su')).toBe(0o755);
    expect(modeOf('bin/wall')).toBe(0o755);
    expect(lstatSync(inRoot('bin/wall')).gid).toBe(process.getgid!());
    expect(read('etc/conf')).toBe('upper\n');
    expect(modeOf('etc/conf')).toBe(0o644);
    expect(modeOf('etc/secret')).toBe(0o600);
    expect(read('etc/extra')).toBe('new');
    expect(modeOf('etc')).toBe(0o700);
    expect(modeOf('tmp')).toBe(0o1777);
    expect(modeOf('ro')).toBe(0o555);
    expect(modeOf('ro/file')).toBe(0o444);
    // The upper layer named only opt/added: opt keeps the lower layer's mode.
    expect(modeOf('opt')).toBe(0o711);
    expect(read('opt/keep')).toBe('k');
    expect(modeOf('usr')).toBe(0o755);
    expect(readFileSync(inRoot('usr/local/bin/node')).equals(big)).toBe(true);
    expect(kindOf('lnk')).toBe('file');
    expect(read('lnk')).toBe('a file now');
    expect(readlinkSync(inRoot('abs'))).toBe('/etc/conf');
    expect(readlinkSync(inRoot('lib'))).toBe('usr/lib');
    expect(lstatSync(inRoot('etc/conf')).mtime.toISOString()).toBe('2024-01-02T03:04:05.000Z');
    expect(lstatSync(inRoot('etc/conf')).uid).toBe(process.getuid!());
    expectOutsideUntouched();
  });

  it('streams a file bigger than the stream chunks from a tar read whole', async () => {
    const big = randomBytes(5 * 1024 * 1024 + 7);
    const dir = path.join(base, 'layer-one');
    await mkdir(dir);
    const layer = await extractLayer(Readable.from([layerTar([{ path: 'usr/local/bin/node', body: big, mode: 0o755 }])]), dir);
    expect(layer).toMatchObject({ files: 4, bytes: big.length, skipped: 0 });
    expect(readFileSync(path.join(dir, 'usr/local/bin/node')).equals(big)).toBe(true);
  });

  it('lets a later entry replace an earlier one of the same layer, and a directory merge with one', async () => {
    await addLayer([
      { path: 'x/', mode: 0o700 },
      { path: 'x/a', body: 'a' },
      { path: 'x/', mode: 0o750 },
      { path: 'f', body: 'first' },
      { path: 'f', body: 'second' },
      { path: 'd/', mode: 0o755 },
      { path: 'd/in', body: 'gone' },
      { path: 'd', body: 'a file replaces the directory' },
      { path: 's', type: 'SymbolicLink', linkpath: '/nowhere' },
      { path: 's/', mode: 0o755 },
      // A hard link waiting for a lower layer's file, then a directory of the same name.
      { path: 'hl', type: 'Link', linkpath: 'lower/file' },
      { path: 'hl/inner', body: 'i' },
    ]).then((layer) => expect(layer.pendingLinks).toEqual([]));
    expect(read('x/a')).toBe('a');
    expect(modeOf('x')).toBe(0o750);
    expect(read('f')).toBe('second');
    expect(read('d')).toBe('a file replaces the directory');
    expect(kindOf('s')).toBe('dir');
    expect(read('hl/inner')).toBe('i');
  });

  it('refuses a stream that is not a whole tar', async () => {
    const dir = path.join(base, 'layer-bad');
    await mkdir(dir);
    const tar = layerTar([{ path: 'big', body: randomBytes(10_000) }]);
    await expect(extractLayer(chunked(tar.subarray(0, 4096)), dir)).rejects.toThrow(/Truncated/);
    const garbage = Buffer.alloc(2048, 'not a tar header at all ');
    await expect(extractLayer(chunked(garbage), dir)).rejects.toThrow();
    // A download cut off: the stream is destroyed before its end.
    const cut = new Readable({
      read() {
        this.push(tar.subarray(0, 2048));
        this.destroy();
      },
    });
    await expect(extractLayer(cut, dir)).rejects.toThrow(/closed before its end/);
  });
});

describe('whiteouts', () => {
  it('delete a file, a whole directory, and the lower contents of an opaque directory, wherever its marker is', async () => {
    await addLayer([
      { path: 'a/keep', body: 'k' },
      { path: 'a/gone', body: 'g' },
      { path: 'dir/x', body: 'x' },
      { path: 'dir/sub/y', body: 'y' },
      { path: 'opq1/old', body: 'o' },
      { path: 'opq1/sub/old', body: 'o' },
      { path: 'opq2/old', body: 'o' },
      { path: 'opq2/link', type: 'SymbolicLink', linkpath: '/' },
    ]);
    const upper = await addLayer([
      { path: 'a/' },
      { path: 'a/.wh.gone', body: '' },
      { path: '.wh.dir', body: '' },
      // The marker before the layer's own entries in the directory...
      { path: 'opq1/' },
      { path: 'opq1/.wh..wh..opq', body: '' },
      { path: 'opq1/new', body: 'n1' },
      // ...and after them.
      { path: 'opq2/' },
      { path: 'opq2/new', body: 'n2' },
      { path: 'opq2/sub/deeper', body: 'd' },
      { path: 'opq2/.wh..wh..opq', body: '' },
    ]);
    expect(upper.whiteouts.sort()).toEqual(['a/gone', 'dir']);
    expect(upper.opaqueDirs.sort()).toEqual(['opq1', 'opq2']);
    expect(read('a/keep')).toBe('k');
    expect(kindOf('a/gone')).toBe('missing');
    expect(kindOf('a/.wh.gone')).toBe('missing');
    expect(kindOf('dir')).toBe('missing');
    expect(readdirSync(inRoot('opq1'))).toEqual(['new']);
    expect(readdirSync(inRoot('opq2')).sort()).toEqual(['new', 'sub']);
    expect(read('opq2/sub/deeper')).toBe('d');
    expectOutsideUntouched();
  });

  it('delete nothing outside the root: not through `..`, not through a lower link', async () => {
    const outsideRel = path.relative(root, outside);
    await addLayer([
      { path: 'abs-link', type: 'SymbolicLink', linkpath: outside },
      { path: 'rel-link', type: 'SymbolicLink', linkpath: outsideRel },
      { path: 'plain', body: 'p' },
    ]);
    const upper = await addLayer([
      { path: '../../.wh.canary', body: '' },
      { path: `../outside/.wh.canary`, body: '' },
      { path: 'abs-link/.wh.canary', body: '' },
      { path: 'rel-link/.wh.canary', body: '' },
      { path: 'abs-link/.wh..wh..opq', body: '' },
      { path: 'rel-link/.wh..wh..opq', body: '' },
      { path: 'plain/.wh.x', body: '' },
      { path: '.wh.', body: '' },
      { path: '.wh..', body: '' },
    ]);
    expect(upper.skipped).toBe(4);
    expect(readlinkSync(inRoot('abs-link'))).toBe(outside);
    expect(readlinkSync(inRoot('rel-link'))).toBe(outsideRel);
    expect(read('plain')).toBe('p');
    expect(readdirSync(root).sort()).toEqual(['abs-link', 'plain', 'rel-link']);
    expectOutsideUntouched();
  });
});

describe('a hostile layer', () => {
  it('writes nothing outside the root or through a link, and leaves out devices, FIFOs, setuid bits, owners and xattrs', async () => {
    await addLayer([
      { path: 'etc/passwd', body: 'root:x:0:0:root:/root:/bin/sh\n' },
      { path: 'lower-link', type: 'SymbolicLink', linkpath: outside },
    ]);
    const hostPasswd = statSync('/etc/passwd');
    const layer = await addLayer([
      { path: '/etc/x', body: 'absolute, kept inside' },
      { path: `../escape-${token}`, body: 'e' },
      { path: `a/../../escape2-${token}`, body: 'e' },
      { path: 'evil', type: 'SymbolicLink', linkpath: outside },
      { path: 'evil/pwned', body: 'p' },
      { path: 'evil/sub/pwned', body: 'p' },
      { path: 'evil/', mode: 0o755 },
      { path: 'gone/', mode: 0o755 },
      { path: 'gone/x', body: 'x' },
      // A directory replaced by a link: what was known of it is forgotten.
      { path: 'gone', type: 'SymbolicLink', linkpath: outside },
      { path: 'gone/pwned', body: 'p' },
      { path: 'up', type: 'SymbolicLink', linkpath: '..' },
      { path: 'up/x', type: 'Link', linkpath: 'etc/passwd' },
      { path: 'steal', type: 'Link', linkpath: 'up/up/etc/passwd' },
      { path: 'grab', type: 'Link', linkpath: 'lower-link/canary' },
      { path: 'grab2', type: 'Link', linkpath: 'gone/canary' },
      { path: 'hl-passwd', type: 'Link', linkpath: '/etc/passwd' },
      { path: 'hl-up', type: 'Link', linkpath: '../../x' },
      { path: 'lower-link/pwned', body: 'p' },
      { path: 'dev/null', type: 'CharacterDevice', devmaj: 1, devmin: 3, mode: 0o666 },
      { path: 'dev/sda', type: 'BlockDevice', devmaj: 8, devmin: 0, mode: 0o660 },
      { path: 'usr/lib/kmem', type: 'CharacterDevice', devmaj: 1, devmin: 2, mode: 0o666 },
      { path: 'run/fifo', type: 'FIFO', mode: 0o644 },
      { path: 'usr/bin/sudo', body: 'sudo', mode: 0o4755, uid: 0, gid: 0 },
      { path: 'usr/bin/theirs', body: 't', mode: 0o6755, uid: 1234, gid: 1234 },
      {
        path: 'usr/bin/ping',
        body: 'ping',
        mode: 0o755,
        pax: { 'SCHILY.xattr.security.capability': Buffer.from([1, 0, 0, 2, 0x00, 0x20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]), 'SCHILY.xattr.user.evil': '1' },
      },
    ]);

    expect(read('etc/x')).toBe('absolute, kept inside');
    // A link to a directory is made as it is: inside the sandbox it names the image's own paths.
    expect(readlinkSync(inRoot('gone'))).toBe(outside);
    // The later evil/ entry replaced the link: a real directory, empty, as nothing went through the link.
    expect(kindOf('evil')).toBe('dir');
    expect(readdirSync(inRoot('evil'))).toEqual([]);
    expect(readlinkSync(inRoot('up'))).toBe('..');
    expect(kindOf('steal')).toBe('missing');
    expect(kindOf('grab')).toBe('missing');
    expect(kindOf('grab2')).toBe('missing');
    expect(kindOf('hl-up')).toBe('missing');
    // The image's own /etc/passwd, not the host's.
    expect(lstatSync(inRoot('hl-passwd')).ino).toBe(lstatSync(inRoot('etc/passwd')).ino);
    expect(statSync('/etc/passwd').nlink).toBe(hostPasswd.nlink);
    // The upper layer's lower-link/ (made for lower-link/pwned) replaces the lower link, as in overlayfs.
    expect(kindOf('lower-link')).toBe('dir');
    expect(read('lower-link/pwned')).toBe('p');
    expect(kindOf('dev/null')).toBe('missing');
    expect(kindOf('dev/sda')).toBe('missing');
    expect(kindOf('usr/lib/kmem')).toBe('missing');
    expect(kindOf('run/fifo')).toBe('missing');
    expect(modeOf('usr/bin/sudo')).toBe(0o755);
    expect(modeOf('usr/bin/theirs')).toBe(0o755);
    for (const file of ['usr/bin/sudo', 'usr/bin/theirs', 'usr/bin/ping']) {
      expect(lstatSync(inRoot(file))).toMatchObject({ uid: process.getuid!(), gid: process.getgid!() });
    }
    expect(read('usr/bin/ping')).toBe('ping');
    const xattrs = xattrsOf(inRoot('usr/bin/ping'));
    if (xattrs !== null) expect(xattrs).toEqual([]);

    expect(layer.skipped).toBe(11);
    // Every device is left out; those of the image's own /dev (mmdebstrap's, debootstrap's) without a
    // note, since the sandbox mounts a /dev of its own there.
    expect(layer.notes).toEqual([
      `../escape-${token}: a path with '..' or NUL`,
      `a/../../escape2-${token}: a path with '..' or NUL`,
      'evil/pwned: a path through evil, a symbolic link',
      'evil/sub/pwned: a path through evil, a symbolic link',
      'gone/pwned: a path through gone, a symbolic link',
      'up/x: a path through up, a symbolic link',
      'hl-up: a hard link to ../../x',
      'usr/lib/kmem: a CharacterDevice',
      'run/fifo: a FIFO',
    ]);
    expect(layer.pendingLinks).toEqual([
      { path: 'steal', target: 'up/up/etc/passwd' },
      { path: 'grab', target: 'lower-link/canary' },
      { path: 'grab2', target: 'gone/canary' },
      { path: 'hl-passwd', target: 'etc/passwd' },
    ]);
    expectOutsideUntouched();
  });

  it('keeps at most 20 notes, and counts every entry left out', async () => {
    const entries: LayerEntry[] = Array.from({ length: 30 }, (_, i) => ({ path: `../x${i}`, body: 'x' }));
    const layer = await addLayer(entries);
    expect(layer.skipped).toBe(30);
    expect(layer.notes).toHaveLength(20);
    expect(readdirSync(root)).toEqual([]);
    expectOutsideUntouched();
  });
});

describe('prepareMountPoints', () => {
  it('replaces links and wrong kinds of file on the way with real directories and files', async () => {
    const hostPasswd = readFileSync('/etc/passwd');
    await symlink(outside, inRoot('tmp'));
    await symlink('/', inRoot('etc'));
    await writeFile(inRoot('proc'), 'a file where a directory goes');
    await mkdir(inRoot('dev'), { mode: 0o700 });
    await writeFile(inRoot('dev/keep'), 'k');
    await mkdir(inRoot('sluice'));
    await symlink(outside, inRoot('sluice/tree'));

    await prepareMountPoints(root, { dirs: ['proc', 'dev', 'tmp', 'sluice/tree', 'sluice/home'], files: ['etc/passwd', 'etc/resolv.conf'] });

    for (const dir of ['proc', 'tmp', 'sluice/tree', 'sluice/home', 'etc']) {
      expect([dir, kindOf(dir), modeOf(dir)]).toEqual([dir, 'dir', 0o755]);
    }
    // What was right already stays as it was.
    expect(modeOf('dev')).toBe(0o700);
    expect(read('dev/keep')).toBe('k');
    for (const file of ['etc/passwd', 'etc/resolv.conf']) {
      expect([file, kindOf(file), modeOf(file), read(file)]).toEqual([file, 'file', 0o644, '']);
    }
    expect(readFileSync('/etc/passwd').equals(hostPasswd)).toBe(true);
    expectOutsideUntouched();
  });

  it('keeps a real file as it is and replaces a link to the host', async () => {
    await mkdir(inRoot('etc'));
    await writeFile(inRoot('etc/passwd'), 'build:x:1000:1000::/home/build:/bin/sh\n', { mode: 0o600 });
    await symlink(path.join(outside, 'canary'), inRoot('etc/resolv.conf'));
    await prepareMountPoints(root, { dirs: [], files: ['etc/passwd', 'etc/resolv.conf'] });
    expect(read('etc/passwd')).toBe('build:x:1000:1000::/home/build:/bin/sh\n');
    expect(modeOf('etc/passwd')).toBe(0o600);
    expect(kindOf('etc/resolv.conf')).toBe('file');
    expect(read('etc/resolv.conf')).toBe('');
    expectOutsideUntouched();
  });

  it('refuses a path out of the root', async () => {
    await expect(prepareMountPoints(root, { dirs: ['../x'], files: [] })).rejects.toThrow(/not a path inside the image/);
    expectOutsideUntouched();
  });
});

describe('readRootFile', () => {
  it('reads a real file of the image, at most maxBytes of it', async () => {
    await mkdir(inRoot('etc'));
    await writeFile(inRoot('etc/passwd'), 'root:x:0:0:root:/root:/bin/sh\n');
    expect(await readRootFile(root, 'etc/passwd', 1024)).toBe('root:x:0:0:root:/root:/bin/sh\n');
    expect(await readRootFile(root, '/etc/passwd', 4)).toBe('root');
    expect(await readRootFile(root, 'etc/missing', 1024)).toBeNull();
    expect(await readRootFile(root, 'etc', 1024)).toBeNull();
    expect(await readRootFile(root, '../outside/canary', 1024)).toBeNull();
  });

  it('refuses a linked etc/passwd and a linked etc', async () => {
    await mkdir(inRoot('etc'));
    await symlink(path.join(outside, 'canary'), inRoot('etc/passwd'));
    expect(await readRootFile(root, 'etc/passwd', 1024)).toBeNull();

    await rm(inRoot('etc'), { recursive: true });
    await writeFile(path.join(outside, 'passwd'), 'host:x:0:0::/:/bin/sh\n');
    await symlink(outside, inRoot('etc'));
    expect(await readRootFile(root, 'etc/passwd', 1024)).toBeNull();
    expect(existsSync(path.join(root, 'etc/passwd'))).toBe(true);
  });
});
