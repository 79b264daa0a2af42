/**
 * Real git repositories for tests. Commits are written straight into a bare repository with
 * plumbing (hash-object, update-index on a throwaway index, write-tree, commit-tree,
 * update-ref), so no working clone is needed and each commit costs a few git invocations.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

/** A file to commit. `mode` 0o755 makes it executable, 0o120000 makes it a symlink to `content`. */
export interface RepoFile {
  content: string;
  mode?: number;
}

/** Files to add or replace; `null` deletes the path from the branch. */
export type RepoFiles = Record<string, RepoFile | null>;

export interface Author {
  name: string;
  email: string;
}

export interface CommitOptions {
  author?: Author;
}

export const DEFAULT_AUTHOR: Author = { name: 'Test Author', email: 'author@example.test' };

/** Runs git against `gitDir` with an environment that ignores the machine's git config. */
export async function git(
  gitDir: string,
  args: string[],
  extraEnv: Record<string, string> = {},
  input?: string,
): Promise<string> {
  const env = {
    PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    HOME: tmpdir(),
    LANG: 'C',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_DIR: gitDir,
    ...extraEnv,
  };
  const promise = execFileAsync('git', args, { env, maxBuffer: 64 * 1024 * 1024 });
  // Only hash-object reads stdin; the others may exit before we could write to it.
  promise.child.stdin?.on('error', () => undefined);
  promise.child.stdin?.end(input);
  const { stdout } = await promise;
  return stdout.trim();
}

function modeString(mode: number | undefined): string {
  if (mode === 0o120000) return '120000';
  return mode !== undefined && (mode & 0o111) !== 0 ? '100755' : '100644';
}

/** An empty bare repository at `dir` whose default branch is `master`, plus a first commit. */
export async function createBareRepo(
  dir: string,
  files: RepoFiles,
  message: string,
  options: CommitOptions = {},
): Promise<string> {
  await execFileAsync('git', ['init', '--quiet', '--bare', '--initial-branch=master', dir], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: tmpdir(), GIT_CONFIG_NOSYSTEM: '1' },
  });
  return pushCommit(dir, files, message, 'master', options);
}

/**
 * Commits `files` on top of `branch` (or as a root commit when the branch does not exist yet)
 * directly in the bare repository `bare`, and returns the new commit id.
 */
export async function pushCommit(
  bare: string,
  files: RepoFiles,
  message: string,
  branch = 'master',
  options: CommitOptions = {},
): Promise<string> {
  const author = options.author ?? DEFAULT_AUTHOR;
  const scratch = await mkdtemp(join(tmpdir(), 'sluice-gitrepo-'));
  const env = {
    GIT_INDEX_FILE: join(scratch, 'index'),
    // An empty work tree, only so update-index agrees to remove paths.
    GIT_WORK_TREE: scratch,
    GIT_AUTHOR_NAME: author.name,
    GIT_AUTHOR_EMAIL: author.email,
    GIT_COMMITTER_NAME: author.name,
    GIT_COMMITTER_EMAIL: author.email,
  };
  try {
    const ref = `refs/heads/${branch}`;
    const parent = await git(bare, ['rev-parse', '--verify', '--quiet', ref], env).catch(() => '');
    if (parent) await git(bare, ['read-tree', parent], env);
    for (const [path, file] of Object.entries(files)) {
      if (file === null) {
        await git(bare, ['update-index', '--force-remove', '--', path], env);
        continue;
      }
      const blob = await git(bare, ['hash-object', '-w', '--stdin'], env, file.content);
      await git(bare, ['update-index', '--add', '--cacheinfo', `${modeString(file.mode)},${blob},${path}`], env);
    }
    const tree = await git(bare, ['write-tree'], env);
    const commit = await git(bare, ['commit-tree', tree, ...(parent ? ['-p', parent] : []), '-m', message], env);
    // Compare-and-swap on the old value, so concurrent helpers can't silently drop a commit.
    await git(bare, ['update-ref', ref, commit, parent || '0'.repeat(40)], env);
    return commit;
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/** The commit id `ref` points at in `bare`. */
export async function revParse(bare: string, ref: string): Promise<string> {
  return git(bare, ['rev-parse', '--verify', `${ref}^{commit}`]);
}
