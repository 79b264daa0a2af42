/**
 * The store as a directory: one file a blob, written to a temporary name and renamed into
 * place, so a reader never sees half a blob. Readable by the directory's owner only (0700
 * directories, 0600 files): a build running as the build user cannot read other builds' caches
 * or artifacts from it. A writer running as root (a runner that starts tests as the build
 * user) gives what it writes to the store directory's owner, so the API and workers, running as
 * that user, read and delete it (docker-compose.yml: one volume, owned by `node`).
 */
import { createReadStream } from 'node:fs';
import { chmod, chown, copyFile, mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { checkKey, type BlobStore } from './blobStore';

export class DirStore implements BlobStore {
  readonly description: string;

  constructor(private readonly root: string) {
    this.description = path.resolve(root);
  }

  private pathOf(key: string): string {
    return path.join(this.root, ...checkKey(key).split('/'));
  }

  async putFile(key: string, file: string): Promise<void> {
    const target = this.pathOf(key);
    const made = await mkdir(path.dirname(target), { recursive: true, mode: 0o700 });
    const owner = await this.ownerToGiveTo();
    if (made && owner) {
      // Every directory mkdir made, from the first one down to the blob's.
      for (let dir = path.dirname(target); dir.length >= made.length; dir = path.dirname(dir)) await chown(dir, owner.uid, owner.gid);
    }
    const temporary = `${target}.${randomBytes(6).toString('hex')}.partial`;
    try {
      await copyFile(file, temporary);
      await chmod(temporary, 0o600);
      if (owner) await chown(temporary, owner.uid, owner.gid);
      await rename(temporary, target);
    } catch (err) {
      await rm(temporary, { force: true });
      throw err;
    }
  }

  /** The store directory's owner, when this process is root and the directory is someone else's. */
  private async ownerToGiveTo(): Promise<{ uid: number; gid: number } | null> {
    if (process.getuid?.() !== 0) return null;
    const info = await stat(this.root).catch(() => null);
    return info && info.uid !== 0 ? { uid: info.uid, gid: info.gid } : null;
  }

  async getFile(key: string, file: string): Promise<boolean> {
    // Copied aside and renamed: `file` is the old one or the whole blob, never half of it.
    const temporary = `${file}.${randomBytes(6).toString('hex')}.partial`;
    try {
      await copyFile(this.pathOf(key), temporary);
      await rename(temporary, file);
      return true;
    } catch (err) {
      await rm(temporary, { force: true });
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw err;
    }
  }

  async open(key: string): Promise<{ stream: ReturnType<typeof createReadStream>; size: number } | null> {
    const file = this.pathOf(key);
    const info = await stat(file).catch(() => null);
    if (!info?.isFile()) return null;
    return { stream: createReadStream(file), size: info.size };
  }

  async delete(key: string): Promise<void> {
    await rm(this.pathOf(key), { force: true });
  }

  async deletePrefix(prefix: string): Promise<number> {
    // A prefix is a folder here: `artifacts/12/` names the folder of session 12's artifacts.
    const at = this.pathOf(prefix.replace(/\/+$/, ''));
    const info = await stat(at).catch(() => null);
    const count = info === null ? 0 : info.isDirectory() ? await countFiles(at) : 1;
    await rm(at, { recursive: true, force: true });
    return count;
  }
}

async function countFiles(dir: string): Promise<number> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  let n = 0;
  for (const e of entries) n += e.isDirectory() ? await countFiles(path.join(dir, e.name)) : 1;
  return n;
}
