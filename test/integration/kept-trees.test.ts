/**
 * Kept trees (steps/checkout/kept.ts, issue 49) against a real SSH git server and real git: a
 * runner keeps the tree of a build that ended, cleaned, and the next checkout of the repository
 * starts from it, writing only the files that differ. What the last build left never reaches the
 * next one (files, ignored files, a submodule's contents, planted git configuration, a changed
 * tracked file), a force-push is no problem, and a tree never crosses repositories or serves a
 * build that may read less than the one that used it (the cache's scopes).
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { appendFile, mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { pgBuildRecords } from '../../src/db/buildRecords';
import { keptDir } from '../../src/steps/checkout/kept';
import { ensureTree, fetchTree, markUsed, retireTree, retireTreeLater, treeDir, type TreeDeps } from '../../src/steps/checkout/tree';
import type { TreeRef } from '../../src/core/session';
import { generateRepoKeyPair } from '../../src/ssh/keys';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { createBareRepo, git, pushCommit } from '../support/gitRepo';
import { insertPostSession, type PostSession } from '../support/postSession';
import { startSshGitServer, type SshGitServer } from '../support/sshGitServer';

let db: TestDatabase;
let server: SshGitServer;
let tmp: string;
let bare: string;
let deps: TreeDeps;
let s: PostSession;
let other: PostSession;
let first: string;
let second: string;
const secretKey = Buffer.alloc(32, 5);
const MASTER = { readScopes: ['master'], writeScope: 'master' };
const FEATURE = { readScopes: ['feature', 'master'], writeScope: 'feature' };
const FORK = { readScopes: ['feature', 'master'], writeScope: null };
let sessions = 0;
const key = generateRepoKeyPair('sluice:test/kept');

beforeAll(async () => {
  db = await createTestDatabase();
  tmp = await mkdtemp(join(tmpdir(), 'sluice-kept-'));
  server = await startSshGitServer({ authorizedKeys: [key.publicKey] });
  bare = join(tmp, 'app.git');
  first = await createBareRepo(
    bare,
    { 'same.txt': { content: 'unchanged\n' }, 'a.txt': { content: 'one\n' }, 'edited.txt': { content: 'as committed\n' }, '.gitignore': { content: 'build/\n' } },
    'first',
  );
  second = await pushCommit(bare, { 'a.txt': { content: 'two\n' } }, 'second');
  deps = { records: pgBuildRecords(db.pool, secretKey), workspaceDir: join(tmp, 'ws') };
  s = await insertPostSession(db.pool, secretKey, { key, pullUrl: server.url(bare) });
  other = await insertPostSession(db.pool, secretKey, { key, pullUrl: server.url(bare), repo: 'other' });
});

afterAll(async () => {
  await server.close();
  await db.drop();
  await rm(tmp, { recursive: true, force: true });
});

const ref = (commitId: string, scopes: TreeRef['scopes'], repo = s): TreeRef & { head: string } => ({
  sessionId: repo.sessionId,
  repoId: repo.repoId,
  branch: 'master',
  commitId,
  head: commitId,
  ...(scopes ? { scopes } : {}),
});

/** A tree of `commitId` for a build with `scopes`, in a lane of its own. */
async function checkout(commitId: string, scopes: TreeRef['scopes'], repo = s): Promise<string> {
  const workdir = treeDir(deps.workspaceDir, repo.sessionId, ++sessions);
  await fetchTree(deps, ref(commitId, scopes, repo), workdir, undefined);
  return workdir;
}

/** Every file under `dir` (but `.git`) with its content: what a build sees. */
async function files(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const walk = async (d: string): Promise<void> => {
    for (const e of await readdir(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.name === '.git' && d === dir) continue;
      if (e.isDirectory()) {
        out[`${relative(dir, p)}/`] = '';
        await walk(p);
      } else out[relative(dir, p)] = e.isSymbolicLink() ? '(link)' : await readFile(p, 'utf8');
    }
  };
  await walk(dir);
  return out;
}

const keptCount = async () => {
  let n = 0;
  for (const repo of await readdir(keptDir(deps.workspaceDir)).catch(() => [] as string[])) {
    n += (await readdir(join(keptDir(deps.workspaceDir), repo))).filter((e) => e.startsWith('kept-')).length;
  }
  return n;
};

/** What a fresh checkout of `commitId` holds, made where no tree is kept. */
async function fresh(commitId: string): Promise<Record<string, string>> {
  const workdir = join(tmp, `fresh-${commitId.slice(0, 8)}-${++sessions}`);
  await fetchTree({ ...deps, keptTrees: 0 }, ref(commitId, undefined), workdir, undefined);
  return files(workdir);
}

afterEach(async () => {
  await rm(keptDir(deps.workspaceDir), { recursive: true, force: true });
});

it('starts the next build from the last tree, cleaned, writing only the files that differ', async () => {
  const used = await checkout(first, MASTER);
  const same = await stat(join(used, 'same.txt'));
  await markUsed(used);
  // What a build leaves: a new file, an ignored one, a tracked file changed and one deleted.
  await writeFile(join(used, 'left-by-a-test.txt'), 'x');
  await mkdir(join(used, 'build'));
  await writeFile(join(used, 'build', 'out.js'), 'ignored output');
  await writeFile(join(used, 'edited.txt'), 'changed by a test\n');
  await unlink(join(used, 'a.txt'));
  await retireTree(deps, used);
  expect(existsSync(used)).toBe(false);
  expect(await keptCount()).toBe(1);

  const next = await checkout(second, MASTER);
  expect(await keptCount()).toBe(0); // claimed
  expect(await files(next)).toEqual(await fresh(second));
  // Not written again: the same file (inode) the last build's checkout wrote.
  expect((await stat(join(next, 'same.txt'))).ino).toBe(same.ino);
  expect(execFileSync('git', ['rev-parse', 'HEAD'], { cwd: next, encoding: 'utf8' }).trim()).toBe(second);
  expect(execFileSync('git', ['status', '--porcelain', '--ignored'], { cwd: next, encoding: 'utf8' })).toBe('');
});

it('clears what a build put in a submodule’s directory', async () => {
  // A commit with a submodule (a gitlink and .gitmodules); Sluice does not check submodules out.
  const withSub = join(tmp, 'sub.git');
  await createBareRepo(withSub, { 'a.txt': { content: 'a\n' }, '.gitmodules': { content: '[submodule "sub"]\n\tpath = sub\n\turl = ../lib.git\n' } }, 'one');
  const work = join(tmp, 'sub-work');
  execFileSync('git', ['clone', '--quiet', withSub, work]);
  execFileSync('git', ['update-index', '--add', '--cacheinfo', `160000,${'1'.repeat(40)},sub`], { cwd: work });
  execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '--quiet', '-m', 'add sub'], { cwd: work });
  execFileSync('git', ['push', '--quiet', 'origin', 'HEAD:master'], { cwd: work });
  const commit = (await git(withSub, ['rev-parse', 'master'])).trim();
  const repo = await insertPostSession(db.pool, secretKey, { key, pullUrl: server.url(withSub), repo: 'with-sub' });

  const used = await checkout(commit, MASTER, repo);
  expect(existsSync(join(used, 'sub'))).toBe(true);
  await markUsed(used);
  await writeFile(join(used, 'sub', 'planted.js'), 'module.exports = "from the last build"');
  await retireTree(deps, used);
  const next = await checkout(commit, MASTER, repo);
  expect(await readdir(join(next, 'sub'))).toEqual([]);
  expect(await files(next)).toEqual({ 'a.txt': 'a\n', '.gitmodules': '[submodule "sub"]\n\tpath = sub\n\turl = ../lib.git\n', 'sub/': '' });
});

it('runs nothing a build planted in the tree’s .git, and follows no link it left there', async () => {
  const used = await checkout(first, MASTER);
  await markUsed(used);
  // A filter git would run to check a file out or to hash it, named in the tree's own config.
  const ran = join(tmp, 'planted-filter-ran');
  await appendFile(join(used, '.git', 'config'), `[filter "evil"]\n\tclean = touch ${ran}\n\tsmudge = touch ${ran}\n`);
  await writeFile(join(used, '.gitattributes'), '* filter=evil\n');
  await writeFile(join(used, 'a.txt'), 'changed\n');
  await retireTree(deps, used);
  const next = await checkout(second, MASTER);
  expect(existsSync(ran)).toBe(false);
  expect(await files(next)).toEqual(await fresh(second));

  // A `.git` that is a link to a directory elsewhere: the link goes, not what it points at.
  const precious = join(tmp, 'precious');
  await mkdir(precious, { recursive: true });
  await writeFile(join(precious, 'keep.txt'), 'keep');
  await markUsed(next);
  await rm(join(next, '.git'), { recursive: true });
  await symlink(precious, join(next, '.git'));
  await retireTree(deps, next);
  expect(await readFile(join(precious, 'keep.txt'), 'utf8')).toBe('keep');
});

it('survives a force-push: the next commit shares no history with the kept one', async () => {
  const used = await checkout(second, MASTER);
  await retireTree(deps, used);
  const work = join(tmp, 'rewrite');
  await rm(work, { recursive: true, force: true });
  execFileSync('git', ['init', '--quiet', '-b', 'master', work]);
  await writeFile(join(work, 'same.txt'), 'unchanged\n');
  await writeFile(join(work, 'new.txt'), 'rewritten history\n');
  execFileSync('git', ['add', '.'], { cwd: work });
  execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '--quiet', '-m', 'orphan'], { cwd: work });
  execFileSync('git', ['push', '--quiet', '--force', bare, 'master:master'], { cwd: work });
  const rewritten = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: work, encoding: 'utf8' }).trim();
  try {
    const workdir = treeDir(deps.workspaceDir, s.sessionId, ++sessions);
    // The branch's tip, as a build's first checkout asks for it.
    const got = await fetchTree(deps, { ...ref(rewritten, MASTER), head: 'HEAD' }, workdir, undefined);
    expect(got.commitId).toBe(rewritten);
    expect(await keptCount()).toBe(0);
    expect(await files(workdir)).toEqual({ 'same.txt': 'unchanged\n', 'new.txt': 'rewritten history\n' });
  } finally {
    await git(bare, ['update-ref', 'refs/heads/master', second]);
  }
});

it('never lends a tree to another repository, nor to a build that may read less than the one that used it', async () => {
  await retireTree(deps, await checkout(first, FEATURE));
  expect(await keptCount()).toBe(1);
  // Another repository, and a build of master (which may not read the feature branch's cache): fresh trees.
  await checkout(first, MASTER, other);
  await checkout(first, MASTER);
  expect(await keptCount()).toBe(1);
  // A pull request onto master from the feature branch may read it.
  await checkout(first, FEATURE);
  expect(await keptCount()).toBe(0);

  // A tree a build that may not write the cache used (a fork's pull request) is never kept.
  const forked = await checkout(first, FORK);
  await markUsed(forked);
  await retireTree(deps, forked);
  expect(await keptCount()).toBe(0);
  expect(existsSync(forked)).toBe(false);
});

it('frees a tree’s name at once: a checkout into it right after (a push) never meets the tree being cleaned', async () => {
  const used = await checkout(first, MASTER);
  await markUsed(used);
  await writeFile(join(used, 'left-by-a-test.txt'), 'x');
  await retireTreeLater(deps, used);
  // The push of the same session wants the commit's objects in the same place, at once (a push
  // names no scopes: it never starts from a kept tree).
  await ensureTree(deps, ref(second, undefined), used, 'objects', undefined);
  const now = await files(used);
  // The kept tree is made in the background meanwhile, and the new tree stays whole.
  for (let i = 0; i < 200 && (await keptCount()) === 0; i++) await new Promise((r) => setTimeout(r, 50));
  expect(await keptCount()).toBe(1);
  expect(await files(used)).toEqual(now);
  expect(execFileSync('git', ['rev-parse', 'HEAD'], { cwd: used, encoding: 'utf8' }).trim()).toBe(second);
});

it('keeps at most the configured number of trees, the newest', async () => {
  const few = { ...deps, keptTrees: 2 };
  const trees = [await checkout(first, MASTER), await checkout(first, MASTER), await checkout(first, MASTER)];
  for (const t of trees) await retireTree(few, t);
  expect(await keptCount()).toBe(2);
});
