/**
 * A runner's mirror of each repository (issue 39, steps/checkout/mirror.ts) against a real SSH
 * git server and real git: four workers' trees of one commit ask the server once; two builds of
 * one repository at once share the mirror safely; the trees' objects are hard links that a
 * repack of the mirror cannot break; a mirror whose fetch was killed (its lock left behind by a
 * process that is gone) or which is corrupt is thrown away, never failing the pull.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, lstatSync, readdirSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { evictMirrors, mirrorPath } from '../../src/steps/checkout/mirror';
import { fetchTree, mirrorsDir, treeDir, type TreeDeps } from '../../src/steps/checkout/tree';
import { generateRepoKeyPair } from '../../src/ssh/keys';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { createBareRepo, pushCommit } from '../support/gitRepo';
import { insertPostSession, type PostSession } from '../support/postSession';
import { startSshGitServer, type SshGitServer } from '../support/sshGitServer';
import { pgBuildRecords } from '../../src/db/buildRecords';
import { eventually } from '../support/wait';

let db: TestDatabase;
let server: SshGitServer;
let tmp: string;
let deps: TreeDeps;
let s: PostSession;
let bare: string;
const secretKey = Buffer.alloc(32, 5);

beforeAll(async () => {
  db = await createTestDatabase();
  tmp = await mkdtemp(join(tmpdir(), 'sluice-mirror-'));
  const key = generateRepoKeyPair('sluice:test/mirror');
  server = await startSshGitServer({ authorizedKeys: [key.publicKey] });
  bare = join(tmp, 'app.git');
  await createBareRepo(bare, { 'a.txt': { content: 'one\n' } }, 'first');
  for (let i = 0; i < 20; i++) await pushCommit(bare, { [`f${i}.txt`]: { content: `${i}\n` } }, `commit ${i}`);
  deps = { records: pgBuildRecords(db.pool, secretKey), workspaceDir: join(tmp, 'ws') };
  s = await insertPostSession(db.pool, secretKey, { key, pullUrl: server.url(bare) });
});
afterAll(async () => {
  await server.close();
  await db.drop();
  await rm(tmp, { recursive: true, force: true });
});

const fetches = () => server.commands.filter((c) => c.startsWith('git-upload-pack')).length;
const mirror = () => mirrorPath(mirrorsDir(deps.workspaceDir), String(s.repoId), server.url(bare));
const tip = async () => execFileSync('git', ['--git-dir', bare, 'rev-parse', 'master'], { encoding: 'utf8' }).trim();

it('asks the server once for a build’s first checkout, then makes four workers’ trees of its commit from the mirror', async () => {
  const before = fetches();
  const lead = await fetchTree(deps, { sessionId: s.sessionId, repoId: s.repoId, branch: 'master', head: 'HEAD' }, treeDir(deps.workspaceDir, s.sessionId), undefined);
  expect(lead.commitId).toBe(await tip());
  const workers = await Promise.all(
    [1, 2, 3, 4].map((lane) => fetchTree(deps, { sessionId: s.sessionId, repoId: s.repoId, branch: 'master', head: lead.commitId }, treeDir(deps.workspaceDir, s.sessionId, lane), undefined)),
  );
  expect(workers.map((w) => w.commitId)).toEqual(Array(4).fill(lead.commitId));
  expect(fetches() - before).toBe(1);
  // Each tree is a repository of its own, its object files the mirror's (hard links), named after the site.
  const tree = treeDir(deps.workspaceDir, s.sessionId, 2);
  expect(await readFile(join(tree, 'f19.txt'), 'utf8')).toBe('19\n');
  const objects = execFileSync('find', [join(tree, '.git/objects'), '-type', 'f', '(', '-name', '*.pack', '-o', '-path', '*/objects/??/*', ')'], { encoding: 'utf8' }).trim().split('\n');
  expect(objects.length).toBeGreaterThan(0);
  expect(objects.every((f) => lstatSync(f).nlink > 1)).toBe(true);
  expect(execFileSync('git', ['-C', tree, 'remote', 'get-url', 'origin'], { encoding: 'utf8' }).trim()).toBe(server.url(bare));
  expect(existsSync(join(tree, '.git/objects/info/alternates'))).toBe(false);
});

it('keeps every tree whole when the mirror is repacked and collected under it', async () => {
  const tree = treeDir(deps.workspaceDir, s.sessionId, 3);
  execFileSync('git', ['--git-dir', mirror(), 'gc', '--prune=now', '--quiet']);
  execFileSync('git', ['-C', tree, 'fsck', '--no-progress', '--no-dangling'], { stdio: 'pipe' });
  expect(execFileSync('git', ['-C', tree, 'log', '--oneline'], { encoding: 'utf8' }).trim().split('\n')).toHaveLength(21);
});

it('lets two builds of one repository pull at once: each gets its commit, the server asked for new history only', async () => {
  const next = await pushCommit(bare, { 'a.txt': { content: 'two\n' } }, 'second');
  const [x, y] = await Promise.all(
    [101, 102].map((session) => fetchTree(deps, { sessionId: session, repoId: s.repoId, branch: 'master', head: 'HEAD' }, treeDir(deps.workspaceDir, session), undefined)),
  );
  expect([x!.commitId, y!.commitId]).toEqual([next, next]);
  expect(await readFile(join(treeDir(deps.workspaceDir, 102), 'a.txt'), 'utf8')).toBe('two\n');
  // Between them, no lock was left behind.
  expect(existsSync(`${mirror()}.lock`)).toBe(false);
});

it('takes over the lock of a pull killed mid-fetch (SIGKILL, its process group with it), and the mirror still serves', async () => {
  // Something new to fetch, big enough that the fetch is under way when the kill comes.
  const big = await pushCommit(bare, { 'big.bin': { content: randomBytes(32 * 1024 * 1024).toString('base64') } }, 'a big file');
  const input = { pullUrl: server.url(bare), privateKey: s.key.privateKey, workdir: treeDir(deps.workspaceDir, 103), branch: 'master', head: 'HEAD', mirror: { dir: mirrorsDir(deps.workspaceDir), key: String(s.repoId) } };
  const code = `import('${join(__dirname, '../../src/steps/checkout/git.ts')}').then((g) => (g.fetchRepository ?? g.default.fetchRepository)(JSON.parse(process.env.INPUT)))`;
  const child = spawn(process.execPath, ['--import', 'tsx', '-e', code], { detached: true, stdio: 'ignore', env: { PATH: process.env.PATH, HOME: tmp, INPUT: JSON.stringify(input) } });
  const exited = new Promise((r) => child.on('exit', r));
  // Killed while it holds the mirror's lock and its git is fetching.
  const asked = fetches();
  await eventually('the child’s fetch under way', async () => fetches() > asked && existsSync(`${mirror()}.lock`) && (await readFile(`${mirror()}.lock`, 'utf8')) === String(child.pid), 20_000);
  process.kill(-child.pid!, 'SIGKILL');
  await exited;
  expect(existsSync(`${mirror()}.lock`)).toBe(true);

  // Its git runs on in a process group of its own (as a dead runner's would): the next pull
  // takes the lock over, and gets the commit whether the mirror could serve it or was rebuilt.
  const got = await fetchTree(deps, { sessionId: 103, repoId: s.repoId, branch: 'master', head: 'HEAD' }, treeDir(deps.workspaceDir, 103), undefined);
  expect(got.commitId).toBe(big);
  expect(existsSync(`${mirror()}.lock`)).toBe(false);
  const after = await fetchTree(deps, { sessionId: 106, repoId: s.repoId, branch: 'master', head: big }, treeDir(deps.workspaceDir, 106), undefined);
  expect(after.commitId).toBe(big);
  execFileSync('git', ['--git-dir', mirror(), 'fsck', '--no-progress', '--no-dangling'], { stdio: 'pipe' });
});

it('throws a corrupt mirror away and pulls from the server instead; the next pull makes a new mirror', async () => {
  // The mirror's objects are gone (a full disk, a bad repack): its refs name commits it no longer has.
  for (const f of readdirSync(join(mirror(), 'objects/pack'))) await rm(join(mirror(), 'objects/pack', f), { force: true });
  const got = await fetchTree(deps, { sessionId: 104, repoId: s.repoId, branch: 'master', head: 'HEAD' }, treeDir(deps.workspaceDir, 104), undefined);
  expect(got.commitId).toBe(await tip());
  expect(await readFile(join(treeDir(deps.workspaceDir, 104), 'f19.txt'), 'utf8')).toBe('19\n');
  const again = await fetchTree(deps, { sessionId: 105, repoId: s.repoId, branch: 'master', head: 'HEAD' }, treeDir(deps.workspaceDir, 105), undefined);
  expect(again.commitId).toBe(got.commitId);
  expect(existsSync(join(mirror(), 'HEAD'))).toBe(true);
  execFileSync('git', ['--git-dir', mirror(), 'fsck', '--no-progress', '--no-dangling'], { stdio: 'pipe' });
});

it('fetches a pull request’s ref the site does not list as a branch, through the mirror', async () => {
  const pr = await pushCommit(bare, { 'pr.txt': { content: 'from a fork\n' } }, 'a pull request', 'pr-source');
  execFileSync('git', ['--git-dir', bare, 'update-ref', 'refs/pull/7/head', pr]);
  execFileSync('git', ['--git-dir', bare, 'branch', '-D', 'pr-source'], { stdio: 'pipe' });
  const got = await fetchTree(deps, { sessionId: 107, repoId: s.repoId, branch: 'master', head: 'refs/pull/7/head' }, treeDir(deps.workspaceDir, 107), undefined);
  expect(got.commitId).toBe(pr);
  expect(await readFile(join(treeDir(deps.workspaceDir, 107), 'pr.txt'), 'utf8')).toBe('from a fork\n');
});

it('keeps another repository’s history out: mirrors are per repository, and the runner’s alone', async () => {
  expect(lstatSync(mirrorsDir(deps.workspaceDir)).mode & 0o777).toBe(0o700);
  expect(mirror()).toContain(`${s.repoId}-`);
});

it('sweeps the least recently used mirrors past the limit, never one in use', async () => {
  const dir = join(tmp, 'evict');
  const make = async (name: string, ageS: number, locked = false) => {
    const m = join(dir, `${name}.git`);
    execFileSync('mkdir', ['-p', m]);
    await writeFile(join(m, 'pack'), randomBytes(256 * 1024));
    const t = new Date(Date.now() - ageS * 1000);
    await utimes(m, t, t);
    if (locked) await writeFile(`${m}.lock`, String(process.pid));
    return m;
  };
  const newest = await make('1-a', 10);
  const middle = await make('2-b', 100, true);
  const oldest = await make('3-c', 1000);
  // Room for about one: the newest stays, the middle one is in use, the oldest goes.
  expect(await evictMirrors({ dir, maxBytes: 300 * 1024 }, join(tmp, 'evict-trash'))).toBe(1);
  expect([existsSync(newest), existsSync(middle), existsSync(oldest)]).toEqual([true, true, false]);
});
