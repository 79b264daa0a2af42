/**
 * Checkouts on a runner (steps/checkout/tree.ts) against a real SSH git server and real git:
 * a tree is reused only while it holds the commit asked for and no test has run in it, and git
 * never runs in a directory it did not create, so configuration a build planted in a `.git`
 * cannot run a command during the next fetch.
 */
import { existsSync } from 'node:fs';
import { appendFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureTree, fetchTree, markUsed, treeDir, type TreeDeps } from '../../src/steps/checkout/tree';
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
let first: string;
let second: string;
const secretKey = Buffer.alloc(32, 3);

beforeAll(async () => {
  db = await createTestDatabase();
  tmp = await mkdtemp(join(tmpdir(), 'sluice-tree-'));
  const key = generateRepoKeyPair('sluice:test/tree');
  server = await startSshGitServer({ authorizedKeys: [key.publicKey] });
  const bare = join(tmp, 'app.git');
  first = await createBareRepo(bare, { 'a.txt': { content: 'one\n' } }, 'first');
  second = await pushCommit(bare, { 'a.txt': { content: 'two\n' } }, 'second');
  deps = { records: pgBuildRecords(db.pool, secretKey), workspaceDir: join(tmp, 'ws') };
  s = await insertPostSession(db.pool, secretKey, { key, pullUrl: server.url(bare) });
});

afterAll(async () => {
  await server.close();
  await db.drop();
  await rm(tmp, { recursive: true, force: true });
});

const ref = (commitId: string) => ({ sessionId: s.sessionId, repoId: s.repoId, branch: 'master', commitId });

it('reuses a pristine tree of the same commit, and fetches afresh once tests ran in it', async () => {
  const workdir = treeDir(deps.workspaceDir, s.sessionId, 2);
  expect((await fetchTree(deps, { ...ref(first), head: first }, workdir, undefined)).commitId).toBe(first);
  await writeFile(join(workdir, 'left-by-nobody'), 'x');
  await ensureTree(deps, ref(first), workdir, 'pristine', undefined);
  expect(existsSync(join(workdir, 'left-by-nobody'))).toBe(true); // reused as it was

  await markUsed(workdir);
  await writeFile(join(workdir, 'left-by-a-test'), 'x');
  await ensureTree(deps, ref(first), workdir, 'objects', undefined);
  expect(existsSync(join(workdir, 'left-by-a-test'))).toBe(true); // the push only reads objects
  await ensureTree(deps, ref(first), workdir, 'pristine', undefined);
  expect(existsSync(join(workdir, 'left-by-a-test'))).toBe(false);
  expect(await readFile(join(workdir, 'a.txt'), 'utf8')).toBe('one\n');
});

it('never lets configuration planted in a tree run during the next fetch', async () => {
  const workdir = treeDir(deps.workspaceDir, s.sessionId, 3);
  await fetchTree(deps, { ...ref(first), head: first }, workdir, undefined);
  // What a build could leave: a command git runs when it refreshes the index (checkout does).
  const ran = join(tmp, 'planted-command-ran');
  const hook = join(tmp, 'fsmonitor.sh');
  await writeFile(hook, `#!/bin/sh\ntouch ${ran}\n`, { mode: 0o755 });
  await appendFile(join(workdir, '.git', 'config'), `[core]\n\tfsmonitor = ${hook}\n`);

  await ensureTree(deps, ref(second), workdir, 'pristine', undefined);
  expect(await readFile(join(workdir, 'a.txt'), 'utf8')).toBe('two\n');
  expect(existsSync(ran)).toBe(false);
  expect(await readFile(join(workdir, '.git', 'config'), 'utf8')).not.toContain('fsmonitor');
});

describe('SSH host keys, trusted on first use', () => {
  // A branch's tip is always asked of the server; a commit this runner's mirror has already is not (steps/checkout/mirror.ts).
  const tip = () => ({ ...ref(first), head: 'HEAD' });
  const storedHosts = async () => (await db.pool.query('SELECT ssh_known_hosts FROM repos WHERE id = $1', [s.repoId])).rows[0].ssh_known_hosts as string | null;

  it('the first checkout records the server\'s host key for the repository', async () => {
    await db.pool.query('UPDATE repos SET ssh_known_hosts = NULL WHERE id = $1', [s.repoId]);
    await fetchTree(deps, tip(), treeDir(deps.workspaceDir, s.sessionId, 4), undefined);
    expect(await storedHosts()).toMatch(new RegExp(`^\\[127\\.0\\.0\\.1\\]:${server.port} ssh-ed25519 AAAA\\S+\\n$`));
  });

  it('a server whose host key changed fails the next checkout, saying why and how to reset', async () => {
    const learned = (await storedHosts())!;
    // The same host, another key: what a machine in the middle (or a reinstalled server) shows.
    const other = generateRepoKeyPair('someone-else').publicKey.split(' ').slice(0, 2).join(' ');
    await db.pool.query('UPDATE repos SET ssh_known_hosts = $2 WHERE id = $1', [s.repoId, `[127.0.0.1]:${server.port} ${other}\n`]);
    const error = await fetchTree(deps, tip(), treeDir(deps.workspaceDir, s.sessionId, 5), undefined).then(
      () => null,
      (e: unknown) => e as Error & { reason?: string; retryable?: boolean },
    );
    expect(error).not.toBeNull();
    expect(error!.message).toMatch(/Host key verification failed/);
    expect(error!.message).toContain(`reset it with PATCH /api/v1/repos/${s.repoId} {"ssh_known_hosts": null}`);
    expect(error!.retryable).toBe(false);
    // Nothing was learned over the refused key.
    expect(await storedHosts()).toBe(`[127.0.0.1]:${server.port} ${other}\n`);

    // Reset, as an administrator who checked the new key would: learned again on the next checkout.
    await db.pool.query('UPDATE repos SET ssh_known_hosts = NULL WHERE id = $1', [s.repoId]);
    await fetchTree(deps, tip(), treeDir(deps.workspaceDir, s.sessionId, 5), undefined);
    expect(await storedHosts()).toBe(learned);
  });
});
