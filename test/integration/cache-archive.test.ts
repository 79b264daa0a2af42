// A cache entry's archive: what packing keeps (files, directories and symbolic links, no
// following), and hostile archives, built header by header, that unpacking refuses whole.
import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync, readlinkSync } from 'node:fs';
import { link, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { Header, list } from 'tar';
import { checkEntry, EntryTooBig, packEntry, unpackEntry } from '../../src/steps/cache/archive';

let work: string;
beforeAll(async () => {
  work = await mkdtemp(path.join(os.tmpdir(), 'sluice-cache-archive-'));
});
afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

type Raw = { path: string; type?: string; linkpath?: string; body?: string; mode?: number };

/** A gzipped tar of exactly these headers, none of them cleaned up as a tar tool would. */
async function hostile(name: string, entries: Raw[]): Promise<string> {
  const blocks: Buffer[] = [];
  for (const e of entries) {
    const body = Buffer.from(e.body ?? '');
    const type = e.type ?? (e.path.endsWith('/') ? 'Directory' : 'File');
    const header = new Header({ path: e.path, type: type as Header['type'], linkpath: e.linkpath, size: type === 'File' ? body.length : 0, mode: e.mode ?? 0o644, mtime: new Date(0), uid: 0, gid: 0 });
    const block = Buffer.alloc(512);
    header.encode(block, 0);
    blocks.push(block);
    if (type === 'File' && body.length > 0) blocks.push(body, Buffer.alloc((512 - (body.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  const file = path.join(work, `${name}.tgz`);
  await writeFile(file, gzipSync(Buffer.concat(blocks)));
  return file;
}

async function entriesOf(file: string): Promise<{ path: string; type: string; linkpath?: string }[]> {
  const out: { path: string; type: string; linkpath?: string }[] = [];
  await list({ file, onReadEntry: (e) => out.push({ path: e.path, type: e.type, ...(e.linkpath ? { linkpath: e.linkpath } : {}) }) });
  return out;
}

describe('packEntry', () => {
  it('keeps files, directories and symbolic links as they are, follows no link, and stores hard links as files', async () => {
    const dir = await mkdtemp(path.join(work, 'pack-'));
    await mkdir(path.join(dir, 'tree/node_modules/a'), { recursive: true });
    await mkdir(path.join(dir, 'home/.npm'), { recursive: true });
    await writeFile(path.join(dir, 'tree/node_modules/a/index.js'), 'module.exports = 1;\n');
    await link(path.join(dir, 'tree/node_modules/a/index.js'), path.join(dir, 'tree/node_modules/a/copy.js'));
    await symlink('../a/index.js', path.join(dir, 'tree/node_modules/a/self.js'));
    await symlink('/etc', path.join(dir, 'home/.npm/etc'));
    execFileSync('mkfifo', [path.join(dir, 'tree/node_modules/fifo')]);
    await writeFile(path.join(dir, 'home/.npm/index'), 'x');

    const out = path.join(work, 'packed.tgz');
    const bytes = await packEntry(dir, ['tree', 'home'], out, 1024 * 1024);
    expect(bytes).toBeGreaterThan(0);
    const entries = await entriesOf(out);
    expect(new Set(entries.map((e) => e.type))).toEqual(new Set(['Directory', 'File', 'SymbolicLink']));
    expect(entries.map((e) => e.path).sort()).toEqual(
      ['home/', 'home/.npm/', 'home/.npm/etc', 'home/.npm/index', 'tree/', 'tree/node_modules/', 'tree/node_modules/a/', 'tree/node_modules/a/copy.js', 'tree/node_modules/a/index.js', 'tree/node_modules/a/self.js'].sort(),
    );
    expect(entries.find((e) => e.path === 'home/.npm/etc')).toEqual({ path: 'home/.npm/etc', type: 'SymbolicLink', linkpath: '/etc' });
    // Stored as a link, not followed: nothing of /etc is in it. And the link out is why the archive would be refused.
    expect(await checkEntry(out, 1e9)).toEqual({ ok: false, why: 'home/.npm/etc: a symbolic link to /etc, outside home/' });
  });

  it('stops at the entry limit', async () => {
    const dir = await mkdtemp(path.join(work, 'big-'));
    await mkdir(path.join(dir, 'tree'));
    await writeFile(path.join(dir, 'tree/random'), Buffer.from(Array.from({ length: 256 * 1024 }, () => Math.floor(Math.random() * 256))));
    await expect(packEntry(dir, ['tree'], path.join(work, 'big.tgz'), 64 * 1024)).rejects.toBeInstanceOf(EntryTooBig);
  });

  it('unpacks what it packed, links and modes as they were', async () => {
    const dir = await mkdtemp(path.join(work, 'round-'));
    await mkdir(path.join(dir, 'tree/node_modules/.bin'), { recursive: true });
    await writeFile(path.join(dir, 'tree/node_modules/tool.js'), '#!/usr/bin/env node\n', { mode: 0o755 });
    await symlink('../tool.js', path.join(dir, 'tree/node_modules/.bin/tool'));
    const out = path.join(work, 'round.tgz');
    await packEntry(dir, ['tree'], out, 1e9);
    const verdict = await checkEntry(out, 1e9);
    expect(verdict).toEqual({ ok: true, unpackedBytes: 20, links: [['tree/node_modules/.bin/tool', '../tool.js']] });
    const into = await mkdtemp(path.join(work, 'into-'));
    await unpackEntry(out, into, verdict.ok ? verdict.links : []);
    expect(readlinkSync(path.join(into, 'tree/node_modules/.bin/tool'))).toBe('../tool.js');
    expect(lstatSync(path.join(into, 'tree/node_modules/tool.js')).mode & 0o777).toBe(0o755);
    expect(await readFile(path.join(into, 'tree/node_modules/.bin/tool'), 'utf8')).toBe('#!/usr/bin/env node\n');
  });
});

describe('checkEntry refuses hostile archives whole', () => {
  const cases: [string, Raw[], RegExp][] = [
    ['an absolute path', [{ path: 'tree/' }, { path: '/etc/sluice-pwned', body: 'x' }], /absolute path/],
    ['a path climbing out with ..', [{ path: 'tree/' }, { path: 'tree/../../sluice-pwned', body: 'x' }], /'\.\.'/],
    ['a path outside tree/ and home/', [{ path: 'elsewhere/file', body: 'x' }], /outside tree\/ and home\//],
    ['a symbolic link to /etc, then a file written through it', [{ path: 'tree/nm', type: 'SymbolicLink', linkpath: '/etc' }, { path: 'tree/nm/sluice-pwned', body: 'x' }], /tree\/nm\/sluice-pwned: a path through tree\/nm, which is not a directory/],
    ['a relative symbolic link out of its root', [{ path: 'tree/a/up', type: 'SymbolicLink', linkpath: '../../../etc' }], /tree\/a\/up: a symbolic link to \.\.\/\.\.\/\.\.\/etc, outside tree\//],
    ['a link from home into tree', [{ path: 'home/x', type: 'SymbolicLink', linkpath: '../tree/y' }], /outside home\//],
    [
      'a chain of links, each inside alone, that ends outside',
      [
        { path: 'tree/a/b/x', type: 'SymbolicLink', linkpath: 'y/..' },
        { path: 'tree/a/b/y', type: 'SymbolicLink', linkpath: '../..' },
      ],
      /tree\/a\/b\/x: a symbolic link to y\/\.\., outside tree\//,
    ],
    ['a loop of links', [{ path: 'tree/l1', type: 'SymbolicLink', linkpath: 'l2/x' }, { path: 'tree/l2', type: 'SymbolicLink', linkpath: 'l1/x' }], /outside tree\//],
    ['a hard link to a file outside', [{ path: 'tree/' }, { path: 'tree/shadow', type: 'Link', linkpath: '/etc/shadow' }], /hard link to \/etc\/shadow/],
    ['a hard link climbing out', [{ path: 'tree/shadow', type: 'Link', linkpath: 'tree/../../etc/shadow' }], /hard link/],
    ['a hard link into the other root', [{ path: 'home/f', body: 'x' }, { path: 'tree/f', type: 'Link', linkpath: 'home/f' }], /hard link to home\/f/],
    ['a hard link to a file stored after it', [{ path: 'tree/l', type: 'Link', linkpath: 'tree/f' }, { path: 'tree/f', body: 'x' }], /hard link to tree\/f/],
    ['a hard link through a symbolic link', [{ path: 'tree/d', type: 'SymbolicLink', linkpath: '.' }, { path: 'tree/f', body: 'x' }, { path: 'tree/l', type: 'Link', linkpath: 'tree/d/f' }], /hard link to tree\/d\/f/],
    ['a character device', [{ path: 'tree/null', type: 'CharacterDevice' }], /CharacterDevice/],
    ['a block device', [{ path: 'tree/sda', type: 'BlockDevice' }], /BlockDevice/],
    ['a FIFO', [{ path: 'tree/fifo', type: 'FIFO' }], /FIFO/],
    ['a path twice (a directory, then a link in its place)', [{ path: 'tree/d/' }, { path: 'tree/d', type: 'SymbolicLink', linkpath: '.' }], /tree\/d twice/],
    ['a file under a file', [{ path: 'tree/f', body: 'x' }, { path: 'tree/f/g', body: 'y' }], /not a directory/],
  ];

  it.each(cases)('%s', async (name, entries, why) => {
    const file = await hostile(name.replace(/\W+/g, '-'), entries);
    const verdict = await checkEntry(file, 1e9);
    expect(verdict.ok).toBe(false);
    expect(verdict.ok === false && verdict.why).toMatch(why);
  });

  it('refuses what is not a gzipped tar, and an archive that unpacks past the limit', async () => {
    const junk = path.join(work, 'junk.tgz');
    await writeFile(junk, 'not an archive');
    expect((await checkEntry(junk, 1e9)).ok).toBe(false);
    const big = await hostile('big', [{ path: 'tree/a', body: 'x'.repeat(600) }, { path: 'tree/b', body: 'y'.repeat(600) }]);
    expect(await checkEntry(big, 1000)).toEqual({ ok: false, why: 'it unpacks to more than 1000 bytes' });
  });

  it('lets links that stay inside through, and a hard link to a file stored before it', async () => {
    const file = await hostile('fine', [
      { path: 'tree/' },
      { path: 'tree/nm/' },
      { path: 'tree/nm/f', body: 'content' },
      { path: 'tree/nm/up', type: 'SymbolicLink', linkpath: '..' },
      { path: 'tree/nm/via', type: 'SymbolicLink', linkpath: 'up/nm/f' },
      { path: 'tree/nm/hard', type: 'Link', linkpath: 'tree/nm/f' },
      { path: 'home/.npm/x', body: 'y' },
    ]);
    const verdict = await checkEntry(file, 1e9);
    expect(verdict).toEqual({ ok: true, unpackedBytes: 8, links: [['tree/nm/up', '..'], ['tree/nm/via', 'up/nm/f']] });
    const into = await mkdtemp(path.join(work, 'fine-'));
    await unpackEntry(file, into, verdict.ok ? verdict.links : []);
    expect(await readFile(path.join(into, 'tree/nm/via'), 'utf8')).toBe('content');
    expect(lstatSync(path.join(into, 'tree/nm/hard')).nlink).toBe(2);
    expect(existsSync(path.join(into, 'home/.npm/x'))).toBe(true);
  });
});
