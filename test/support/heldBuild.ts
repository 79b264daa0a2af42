/**
 * A repository whose one test file holds its build open until the test lets it go: it touches
 * `running`, then waits for `release` to exist. Set up through the management API (an
 * organization whose webhook goes to the receiver, the repository served by the SSH git server,
 * a suite for master), for the outage tests, which kill a part of Sluice while that test runs.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { createBareRepo } from './gitRepo';
import type { SshGitServer } from './sshGitServer';
import { eventually } from './wait';
import { script } from './world';

/** The management API as a test calls it (adminApi.ts's callAdmin, bound to an installation). */
export type AdminCall = <T = Record<string, unknown>>(method: string, path: string, body?: unknown) => Promise<T>;

export interface HeldBuildRepo {
  repo: { id: number; webhook_url: string };
  /** Exists once the held test runs. */
  running: string;
  /** Create it to let the held test end (it passes). */
  release: string;
  /** A push to master, forced: the raw answer. */
  trigger(): Promise<Response>;
  /** Waits until the held test runs. */
  untilRunning(): Promise<void>;
}

export async function heldBuildRepo(opts: {
  admin: AdminCall;
  ssh: SshGitServer;
  receiverUrl: string;
  /** Where the bare repository goes. */
  bare: string;
  /** A directory the build user can write, for `running` and `release`. */
  shared: string;
  org: string;
  name: string;
}): Promise<HeldBuildRepo> {
  const { admin, ssh } = opts;
  const running = path.join(opts.shared, 'running');
  const release = path.join(opts.shared, 'release');
  await createBareRepo(opts.bare, { 'test/wait_test.sh': script(`touch ${running}\nwhile [ ! -e ${release} ]; do sleep 0.1; done\necho released`) }, 'first');
  const org = await admin<{ id: number }>('POST', '/api/v1/orgs', { name: opts.org, email: 'builds@acme.test' });
  await admin('POST', `/api/v1/orgs/${org.id}/webhooks`, { url: opts.receiverUrl });
  const repo = await admin<{ id: number; webhook_url: string; ssh_public_key: string }>('POST', `/api/v1/orgs/${org.id}/repos`, {
    name: opts.name,
    scm: 'git',
    pull_url: ssh.url(opts.bare),
  });
  ssh.setAuthorizedKeys([repo.ssh_public_key]);
  await admin('POST', `/api/v1/repos/${repo.id}/suites`, { branch: 'master', test_pattern: 'test/*_test.sh' });
  return {
    repo,
    running,
    release,
    trigger: () => fetch(repo.webhook_url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ branch: 'master', force: true }) }),
    untilRunning: async () => {
      await eventually('the test to run', async () => (await readFile(running).catch(() => null)) !== null, 120_000);
    },
  };
}
