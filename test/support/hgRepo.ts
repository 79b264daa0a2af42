/**
 * Real Mercurial repositories for tests, the hg twin of gitRepo.ts. hg has no bare
 * repositories worth the name, so each repository keeps a working directory that the helpers
 * use to commit; `hg serve --stdio` (see sshGitServer.ts) serves it like any other.
 *
 * Calls on one repository are serialized: they share its working directory.
 */
import { execFile } from 'node:child_process';
import { mkdir, rm, symlink, writeFile, chmod } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { DEFAULT_AUTHOR, type Author, type RepoFiles } from './gitRepo';

const execFileAsync = promisify(execFile);

export interface HgCommitOptions {
  author?: Author;
  /** Named branch to commit on; created from `default` when it does not exist. Default `default`. */
  branch?: string;
}

/** Runs hg in `repo` with no user or system configuration. */
export async function hg(repo: string, args: string[]): Promise<string> {
  const { stdout } = await execFileAsync('hg', ['--cwd', repo, ...args], {
    env: { PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin', HOME: tmpdir(), HGRCPATH: '', HGPLAIN: '1', HGENCODING: 'utf-8' },
    maxBuffer: 64 * 1024 * 1024,
  });
  return stdout.trim();
}

const queues = new Map<string, Promise<unknown>>();

function serialized<T>(repo: string, fn: () => Promise<T>): Promise<T> {
  const run = (queues.get(repo) ?? Promise.resolve()).then(fn, fn);
  queues.set(
    repo,
    run.catch(() => undefined),
  );
  return run;
}

/** A new hg repository at `dir` with a first commit on `default`; returns its full node id. */
export async function createHgRepo(dir: string, files: RepoFiles, message: string, options: HgCommitOptions = {}): Promise<string> {
  await mkdir(dir, { recursive: true });
  await hg(dir, ['init']);
  return hgCommit(dir, files, message, options);
}

/** Commits `files` (null deletes) on `options.branch`, returning the new changeset's full node id. */
export function hgCommit(repo: string, files: RepoFiles, message: string, options: HgCommitOptions = {}): Promise<string> {
  return serialized(repo, async () => {
    const author = options.author ?? DEFAULT_AUTHOR;
    const branch = options.branch ?? 'default';
    const branches = (await hg(repo, ['branches', '--closed', '-T', '{branch}\n'])).split('\n').filter(Boolean);
    const exists = branches.includes(branch);
    // An empty repository has no branches yet: nothing to update to.
    if (branches.length > 0) await hg(repo, ['update', '--clean', '--quiet', '--rev', `max(branch("literal:${exists ? branch : 'default'}"))`]);
    if (!exists && branch !== 'default') await hg(repo, ['branch', '--force', '--quiet', branch]);
    for (const [path, file] of Object.entries(files)) {
      const abs = join(repo, path);
      if (file === null) {
        await hg(repo, ['remove', '--force', '--quiet', '--', path]);
        continue;
      }
      await mkdir(dirname(abs), { recursive: true });
      await rm(abs, { force: true });
      if (file.mode === 0o120000) {
        await symlink(file.content, abs);
      } else {
        await writeFile(abs, file.content);
        await chmod(abs, file.mode !== undefined && (file.mode & 0o111) !== 0 ? 0o755 : 0o644);
      }
    }
    await hg(repo, ['commit', '--addremove', '--quiet', '--user', `${author.name} <${author.email}>`, '--message', message]);
    return hg(repo, ['log', '-r', '.', '-T', '{node}']);
  });
}

/** Sets bookmark `name` to `rev`. */
export function hgBookmark(repo: string, name: string, rev: string): Promise<string> {
  return serialized(repo, () => hg(repo, ['bookmark', '--force', '--rev', rev, name]));
}

/**
 * Tags `rev` as `name`. hg keeps tags in `.hgtags`, so this commits (on the head of `rev`'s
 * branch, which it moves) and returns that commit's node id.
 */
export function hgTag(repo: string, name: string, rev: string): Promise<string> {
  return serialized(repo, async () => {
    await hg(repo, ['update', '--clean', '--quiet', '--rev', `max(branch(${rev}))`]);
    await hg(repo, ['tag', '--user', `${DEFAULT_AUTHOR.name} <${DEFAULT_AUTHOR.email}>`, '--rev', rev, name]);
    return hg(repo, ['log', '-r', '.', '-T', '{node}']);
  });
}

/** The full node id `rev` names in `repo`. */
export function hgNode(repo: string, rev: string): Promise<string> {
  return hg(repo, ['log', '-r', rev, '-T', '{node}']);
}
