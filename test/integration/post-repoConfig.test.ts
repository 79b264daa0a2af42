/**
 * readRepoConfig: sluice.yml read from a real checkout (pulled over SSH) and parsed there, so
 * the workflow gets validated settings (or an error) and never parses; and what an untrusted
 * tree could do instead of a plain file: a link to a secret, a FIFO, a huge file, a file
 * whose aliases expand to more than Temporal should carry.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fetchRepository } from '../../src/steps/checkout/git';
import { MAX_REPO_CONFIG_BYTES, MAX_REPO_CONFIG_JSON_BYTES, readRepoConfig, readRepoConfigText } from '../../src/steps/checkout/repoConfig';
import { resolveProfiles } from '../../src/core/profiles';
import { generateRepoKeyPair } from '../../src/ssh/keys';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { createBareRepo } from '../support/gitRepo';
import { startSshGitServer, type SshGitServer } from '../support/sshGitServer';

let db: TestDatabase;
let workspace: string;
let server: SshGitServer;
let count = 0;

// What the checkout activity returns as `repoConfig`, read from the tree it made.
const read = (workdir: string) => readRepoConfig(workdir);

async function workdirWith(files: Record<string, string | Buffer>): Promise<string> {
  const dir = join(workspace, `session-${++count}`);
  await mkdir(dir);
  for (const [name, content] of Object.entries(files)) await writeFile(join(dir, name), content);
  return dir;
}

const SLUICE_YML = `plan: [unit, lint]
profiles:
  unit:
    test_pattern: "test/*_test.sh"
  lint:
    test_pattern: "lint/*.sh"
    workers: 2
`;

beforeAll(async () => {
  db = await createTestDatabase();
  workspace = await mkdtemp(join(tmpdir(), 'sluice-post-config-'));
});

afterAll(async () => {
  await server?.close();
  await db.drop();
  await rm(workspace, { recursive: true, force: true });
});

describe('readRepoConfig', () => {
  it('reads and parses sluice.yml from a real checkout, ready for resolveProfiles', async () => {
    const key = generateRepoKeyPair('sluice:test/config');
    server = await startSshGitServer({ authorizedKeys: [key.publicKey] });
    const bare = join(workspace, 'repo.git');
    await createBareRepo(bare, { 'sluice.yml': { content: SLUICE_YML }, 'test/a_test.sh': { content: 'exit 0\n', mode: 0o755 } }, 'with config');
    const workdir = join(workspace, `session-${++count}`);
    await fetchRepository({ pullUrl: server.url(bare), privateKey: key.privateKey, workdir, branch: 'master', head: 'HEAD' });

    expect(await readRepoConfigText(workdir)).toEqual({ text: SLUICE_YML });
    const result = await read(workdir);
    expect(result).toEqual({
      config: { plan: ['unit', 'lint'], profiles: { unit: { test_pattern: 'test/*_test.sh' }, lint: { test_pattern: 'lint/*.sh', workers: 2 } } },
    });
    if (!('config' in result)) throw new Error(result.error);
    // What crosses Temporal is JSON: the settings must survive it unchanged.
    expect(JSON.parse(JSON.stringify(result))).toEqual(result);
    const resolved = resolveProfiles({ suiteDefault: { name: 'default', test_pattern: '**/*_test.sh' }, fileConfig: result.config });
    expect(resolved).toEqual({
      isPlan: true,
      profiles: [
        { name: 'unit', test_pattern: 'test/*_test.sh', test_command: null, env: {}, workers: 1, junit_pattern: null, retry_failed: 0 },
        { name: 'lint', test_pattern: 'lint/*.sh', test_command: null, env: {}, workers: 2, junit_pattern: null, retry_failed: 0 },
      ],
    });
  });

  it('no sluice.yml: null, and no error', async () => {
    expect(await read(await workdirWith({ 'README.md': 'hi\n' }))).toEqual({ config: null });
  });

  it('an empty sluice.yml configures nothing', async () => {
    expect(await read(await workdirWith({ 'sluice.yml': '# nothing yet\n' }))).toEqual({ config: { profiles: {} } });
  });

  it('drops a byte order mark', async () => {
    const dir = await workdirWith({ 'sluice.yml': '\ufeffplan: [a]\n' });
    expect(await readRepoConfigText(dir)).toEqual({ text: 'plan: [a]\n' });
    expect(await read(dir)).toEqual({ config: { profiles: {}, plan: ['a'] } });
  });

  it('settings that are not valid: the error, with the line', async () => {
    expect(await read(await workdirWith({ 'sluice.yml': 'profiles:\n  unit:\n    test_patern: "x"\n' }))).toEqual({
      error: 'sluice.yml line 3: profiles.unit: unknown key "test_patern"',
    });
  });

  it('refuses settings that aliases expand beyond what Temporal should carry', async () => {
    // 12 KiB of text; each alias repeats the 8 KiB value: over the bound once expanded.
    const lines = ['profiles:', `  p0: { test_pattern: "t/*", env: { A: &big "${'v'.repeat(8 * 1024)}" } }`];
    for (let i = 1; i < 80; i++) lines.push(`  p${i}: { test_pattern: "t/*", env: { A: *big } }`);
    const result = await read(await workdirWith({ 'sluice.yml': lines.join('\n') + '\n' }));
    expect(result).toEqual({ error: expect.stringMatching(/^sluice\.yml expands to more than 512 KiB of settings \(\d+ bytes; YAML aliases\?\)$/) });
    expect(MAX_REPO_CONFIG_JSON_BYTES).toBe(512 * 1024);
  });

  it('does not follow a symbolic link (to a secret of the worker, say)', async () => {
    const secret = join(workspace, 'secret.key');
    await writeFile(secret, 'TOP-SECRET\n');
    const dir = await workdirWith({});
    await symlink(secret, join(dir, 'sluice.yml'));
    const result = await read(dir);
    expect(result).toEqual({ error: 'sluice.yml is a symbolic link; Sluice reads only a regular file' });
    expect(JSON.stringify(result)).not.toContain('TOP-SECRET');
  });

  it('a FIFO or a directory is not read (and does not hang)', async () => {
    const fifoDir = await workdirWith({});
    execFileSync('mkfifo', [join(fifoDir, 'sluice.yml')]);
    expect(await read(fifoDir)).toEqual({ error: 'sluice.yml is not a regular file' });
    const dirDir = await workdirWith({});
    await mkdir(join(dirDir, 'sluice.yml'));
    expect(await read(dirDir)).toEqual({ error: 'sluice.yml is not a regular file' });
  });

  it('caps the size', async () => {
    const atCap = `# ${'x'.repeat(MAX_REPO_CONFIG_BYTES - 3)}\n`;
    const dir = await workdirWith({ 'sluice.yml': atCap });
    expect(await readRepoConfigText(dir)).toEqual({ text: expect.any(String) });
    expect(((await readRepoConfigText(dir)) as { text: string }).text).toHaveLength(MAX_REPO_CONFIG_BYTES);
    expect(await read(dir)).toEqual({ config: { profiles: {} } });
    const over = atCap + 'y';
    expect(await read(await workdirWith({ 'sluice.yml': over }))).toEqual({
      error: `sluice.yml is larger than 64 KiB (${MAX_REPO_CONFIG_BYTES + 1} bytes)`,
    });
  });

  it('refuses what is not UTF-8', async () => {
    expect(await read(await workdirWith({ 'sluice.yml': Buffer.from([0x70, 0x6c, 0x61, 0x6e, 0x3a, 0xff, 0xfe, 0x0a]) }))).toEqual({
      error: 'sluice.yml is not UTF-8 text',
    });
  });
});
