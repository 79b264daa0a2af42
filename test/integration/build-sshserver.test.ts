/**
 * The test SSH git server itself, driven by the real OpenSSH client and git: it must behave
 * like a real SCM's SSH endpoint (push and pull work, nothing else does), or the build tests
 * built on it prove nothing. Also: our key fingerprints agree with ssh-keygen.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { fetchRepository } from '../../src/steps/checkout/git';
import { generateRepoKeyPair, publicKeyFingerprint, type RepoKeyPair } from '../../src/ssh/keys';
import { createBareRepo, revParse } from '../support/gitRepo';
import { startSshGitServer, type SshGitServer } from '../support/sshGitServer';

const execFileAsync = promisify(execFile);

let server: SshGitServer;
let key: RepoKeyPair;
let tmp: string;
let keyFile: string;

const SSH_OPTIONS = [
  '-F', '/dev/null',
  '-o', 'IdentitiesOnly=yes',
  '-o', 'BatchMode=yes',
  '-o', 'StrictHostKeyChecking=no',
  '-o', 'UserKnownHostsFile=/dev/null',
  '-o', 'LogLevel=ERROR',
];

/** Runs the real ssh client against the server; resolves with the exit code and output. */
async function ssh(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await execFileAsync('ssh', [...SSH_OPTIONS, '-i', keyFile, '-p', String(server.port), ...args], {
      env: { PATH: process.env.PATH, HOME: tmp },
    });
    return { code: 0, stdout, stderr };
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string };
    return { code: err.code, stdout: err.stdout, stderr: err.stderr };
  }
}

beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'sluice-sshserver-'));
  key = generateRepoKeyPair('pusher');
  keyFile = join(tmp, 'id');
  await writeFile(keyFile, key.privateKey, { mode: 0o600 });
  server = await startSshGitServer({ authorizedKeys: [key.publicKey] });
});

afterAll(async () => {
  await server.close();
  await rm(tmp, { recursive: true, force: true });
});

describe('test SSH git server', () => {
  it('accepts a push (git-receive-pack) from an authorized key, visible to the next pull', async () => {
    const bare = join(tmp, 'push.git');
    await createBareRepo(bare, { 'a.txt': { content: 'a\n' } }, 'first');
    const work = join(tmp, 'push-work');
    const pulled = await fetchRepository({ pullUrl: server.url(bare), privateKey: key.privateKey, workdir: work, branch: 'master', head: 'HEAD' });

    const env = {
      PATH: process.env.PATH,
      HOME: tmp,
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_AUTHOR_NAME: 'P',
      GIT_AUTHOR_EMAIL: 'p@example.test',
      GIT_COMMITTER_NAME: 'P',
      GIT_COMMITTER_EMAIL: 'p@example.test',
      GIT_SSH_COMMAND: `ssh ${SSH_OPTIONS.join(' ')} -i ${keyFile}`,
    };
    await writeFile(join(work, 'b.txt'), 'b\n');
    await execFileAsync('git', ['add', 'b.txt'], { cwd: work, env });
    await execFileAsync('git', ['commit', '-q', '-m', 'pushed over ssh'], { cwd: work, env });
    await execFileAsync('git', ['push', '-q', server.url(bare), 'HEAD:refs/heads/master'], { cwd: work, env });

    const pushed = await revParse(bare, 'master');
    expect(pushed).not.toBe(pulled.commitId);
    expect(server.commands).toContain(`git-receive-pack '${bare}'`);
    const again = await fetchRepository({ pullUrl: server.url(bare), privateKey: key.privateKey, workdir: join(tmp, 'other'), branch: 'master', head: 'HEAD' });
    expect(again).toMatchObject({ commitId: pushed, message: 'pushed over ssh', committers: ['p@example.test'] });
  });

  it('refuses any other command, and shells', async () => {
    const result = await ssh(['git@127.0.0.1', 'id']);
    expect(result.code).not.toBe(0);
    expect(result.stdout).toBe('');
    expect(server.commands).toContain('id');

    const injection = await ssh(['git@127.0.0.1', `git-upload-pack '/tmp'; id`]);
    expect(injection.code).not.toBe(0);
    expect(injection.stdout).not.toMatch(/uid=/);

    const shell = await ssh(['-T', 'git@127.0.0.1']);
    expect(shell.code).not.toBe(0);
  });

  it('only offers public-key authentication, and only to listed keys', async () => {
    const other = generateRepoKeyPair('other');
    const otherFile = join(tmp, 'other-id');
    await writeFile(otherFile, other.privateKey, { mode: 0o600 });
    const denied = await execFileAsync(
      'ssh',
      [...SSH_OPTIONS, '-i', otherFile, '-p', String(server.port), 'git@127.0.0.1', 'git-upload-pack /tmp'],
      { env: { PATH: process.env.PATH, HOME: tmp } },
    ).catch((e: { code: number; stderr: string }) => e);
    expect(denied).toMatchObject({ code: 255, stderr: expect.stringMatching(/Permission denied \(publickey\)/) });
  });

  it('runs the real upload-pack: ls-remote lists the refs', async () => {
    const bare = join(tmp, 'ls.git');
    const commit = await createBareRepo(bare, { 'x.txt': { content: 'x\n' } }, 'x');
    const { stdout } = await execFileAsync('git', ['ls-remote', server.url(bare)], {
      env: { PATH: process.env.PATH, HOME: tmp, GIT_CONFIG_NOSYSTEM: '1', GIT_SSH_COMMAND: `ssh ${SSH_OPTIONS.join(' ')} -i ${keyFile}` },
    });
    expect(stdout).toContain(`${commit}\trefs/heads/master`);
  });
});

describe('publicKeyFingerprint', () => {
  it('agrees with ssh-keygen -lf', async () => {
    const pubFile = join(tmp, 'fp.pub');
    await writeFile(pubFile, `${key.publicKey}\n`);
    const { stdout } = await execFileAsync('ssh-keygen', ['-l', '-E', 'sha256', '-f', pubFile]);
    expect(stdout.split(' ')[1]).toBe(publicKeyFingerprint(key.publicKey));
  });
});
