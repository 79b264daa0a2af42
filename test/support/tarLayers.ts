/**
 * Image layer tars for tests, written header by header with node-tar's `Header`: its `Pack`
 * cleans up what a hostile layer would not, so absolute and `..` paths, devices, FIFOs, setuid
 * modes, foreign owners, links to anywhere and PAX records (xattrs, capabilities) go in exactly
 * as given.
 */
import { Readable } from 'node:stream';
import { Header } from 'tar';

export type LayerEntryType = 'File' | 'Directory' | 'SymbolicLink' | 'Link' | 'CharacterDevice' | 'BlockDevice' | 'FIFO';

export interface LayerEntry {
  path: string;
  /** File, or Directory for a path ending in `/`. */
  type?: LayerEntryType;
  /** 0o644 for a file, 0o755 for a directory, 0o777 for a symbolic link. */
  mode?: number;
  body?: string | Buffer;
  linkpath?: string;
  uid?: number;
  gid?: number;
  devmaj?: number;
  devmin?: number;
  mtime?: Date;
  /** Records of a PAX extended header written just before the entry, e.g. `SCHILY.xattr.security.capability`. */
  pax?: Record<string, string | Buffer>;
}

const BLOCK = 512;

function padded(data: Buffer): Buffer[] {
  const rest = data.length % BLOCK;
  return rest === 0 ? [data] : [data, Buffer.alloc(BLOCK - rest)];
}

/** One PAX record, `<length> <key>=<value>\n`, whose length counts its own digits. */
function paxRecord(key: string, value: string | Buffer): Buffer {
  const body = Buffer.concat([Buffer.from(` ${key}=`), Buffer.from(value), Buffer.from('\n')]);
  let length = body.length + 1;
  while (String(length).length + body.length !== length) length = String(length).length + body.length;
  return Buffer.concat([Buffer.from(String(length)), body]);
}

function headerBlock(fields: ConstructorParameters<typeof Header>[0]): Buffer {
  const block = Buffer.alloc(BLOCK);
  new Header(fields).encode(block, 0);
  return block;
}

/** An uncompressed tar of exactly these entries, ended by the two zero blocks. */
export function layerTar(entries: LayerEntry[]): Buffer {
  const blocks: Buffer[] = [];
  for (const e of entries) {
    const type = e.type ?? (e.path.endsWith('/') ? 'Directory' : 'File');
    const body = Buffer.from(e.body ?? '');
    const mtime = e.mtime ?? new Date('2024-01-02T03:04:05Z');
    if (e.pax) {
      const records = Buffer.concat(Object.entries(e.pax).map(([k, v]) => paxRecord(k, v)));
      blocks.push(headerBlock({ path: `PaxHeader/${e.path.slice(-80)}`, type: 'ExtendedHeader', size: records.length, mode: 0o644, mtime }), ...padded(records));
    }
    const defaultMode = type === 'Directory' ? 0o755 : type === 'SymbolicLink' ? 0o777 : 0o644;
    blocks.push(
      headerBlock({
        path: e.path,
        type,
        mode: e.mode ?? defaultMode,
        uid: e.uid ?? 0,
        gid: e.gid ?? 0,
        uname: e.uid ? '' : 'root',
        gname: e.gid ? '' : 'root',
        size: type === 'File' ? body.length : 0,
        mtime,
        linkpath: e.linkpath ?? '',
        devmaj: e.devmaj ?? 0,
        devmin: e.devmin ?? 0,
      }),
    );
    if (type === 'File' && body.length > 0) blocks.push(...padded(body));
  }
  blocks.push(Buffer.alloc(2 * BLOCK));
  return Buffer.concat(blocks);
}

/** The tar as a stream of `size`-byte chunks: headers and bodies then straddle chunks, as from gunzip. */
export function chunked(tar: Buffer, size = 1000): Readable {
  const chunks: Buffer[] = [];
  for (let at = 0; at < tar.length; at += size) chunks.push(tar.subarray(at, at + size));
  return Readable.from(chunks);
}
