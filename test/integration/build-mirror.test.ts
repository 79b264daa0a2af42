/**
 * A runner's mirror of each repository (issue 39, steps/checkout/mirror.ts) against a real SSH
 * git server and real git: four workers' trees of one commit ask the server once; two builds of
 * one repository at once share the mirror safely; the trees' objects are hard links that a
 * repack of the mirror cannot break; a mirror whose fetch was killed (its lock left behind by a
 * process that is gone) or which is corrupt is thrown away, never failing the pull.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, lstatSync, readdirSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mirrorPath } from '../../src/steps/checkout/mirror';
import { fetchTree, mirrorsDir, treeDir, type TreeDeps } from '../../src/steps/checkout/tree';
import { generateRepoKeyPair } from '../../src/ssh/keys';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { createBareRepo, pushCommit } from '../support/gitRepo';
import { insertPostSession, type PostSession } from '../support/postSession';
import { startSshGitServer, type SshGitServer } from '../support/sshGitServer';
import { pgBuildRecords } from '../../src/db/buildRecords';

let db: TestDatabase;
let server: SshGitServer;
let tmp: string;
let deps: TreeDeps;
let s: PostSession;
let bare: string;
let first: string;
const secretKey = Buffer.alloc(32, 5);

beforeAll(async () => {
  db = await createTestDatabase();
  tmp = await mkdtemp(join(tmpdir(), 'sluice-mirror-'));
  const key = generateRepoKeyPair('sluice:test/mirror');
  server = await startSshGitServer({ authorizedKeys: [key.publicKey] });
  bare = join(tmp, 'app.git');
  first = await createBareRepo(bare, { 'a.txt': { content: 'one\n' } }, 'first');
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
  expect(objects.length).toBeGreaterThan(20);
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

it('takes over the lock of a fetch killed mid-way, and its half-made mirror still serves', async () => {
  // A process that held the lock and died: its pid is gone.
  const dead = spawn('true');
  await new Promise((r) => dead.on('exit', r));
  await writeFile(`${mirror()}.lock`, String(dead.pid));
  // What a killed fetch leaves: a temporary pack nobody finished.
  await writeFile(join(mirror(), 'objects/pack/tmp_pack_abandoned'), 'half a pack');
  const got = await fetchTree(deps, { sessionId: 103, repoId: s.repoId, branch: 'master', head: first }, treeDir(deps.workspaceDir, 103), undefined);
  expect(got.commitId).toBe(first);
  expect(existsSync(`${mirror()}.lock`)).toBe(false);
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

it('keeps another repository’s history out: mirrors are per repository, and the runner’s alone', async () => {
  expect(lstatSync(mirrorsDir(deps.workspaceDir)).mode & 0o777).toBe(0o700);
  expect(mirror()).toContain(`${s.repoId}-`);
});
