/**
 * `npm start` with nothing configured, as a new user runs it, against the hostile test file
 * (test/support/hostile.ts; issue 23: safe without configuration): the real all-in-one process
 * (`node dist/dev.js`, what `npm start` runs after `npm run build`), once as root and once as a
 * normal user, each with a data directory of its own and the e2e Temporal server
 * (TEMPORAL_ADDRESS, so that it does not start a second one). The build finds no secret of
 * Sluice's in any process's environment or command line, in its own environment or in the data
 * directory, no process of the runner's, and nothing it started outlives it.
 */
import { chown, mkdtemp, readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { callAdmin } from '../support/adminApi';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { createBareRepo } from '../support/gitRepo';
import { daemonMarkerName, expectSandboxed, hostileFiles } from '../support/hostile';
import { bwrapWorks } from '../support/pids';
import { buildDist, startRole, type RoleProcess } from '../support/processes';
import { reportPath } from '../support/reports';
import { freePort } from '../support/sluice';
import { startSshGitServer, type SshGitServer } from '../support/sshGitServer';
import { eventually } from '../support/wait';
import { sessionOfGuid } from '../support/world';
import { removeDir } from '../support/removeDir';

const root = process.getuid?.() === 0;
const sandboxed = bwrapWorks();
// As root, both users can be tried (the normal user is nobody); as a normal user, that one.
if (!sandboxed) console.warn('npm-start.test.ts skipped: bubblewrap does not work here, and npm start without it warns instead (test/integration/runner-isolation.test.ts)');
const USERS: [string, { uid: number; gid: number } | undefined][] = root ? [['root', undefined], ['a normal user (nobody)', { uid: 65534, gid: 65534 }]] : [['this user', undefined]];

(sandboxed ? describe.each(USERS) : describe.skip.each(USERS))('npm start as %s, nothing configured', (_who, as) => {
  let db: TestDatabase;
  let ssh: SshGitServer;
  let tmp: string;
  let dataDir: string;
  let dev: RoleProcess;
  let url: string;

  beforeAll(async () => {
    await buildDist();
    [db, ssh] = await Promise.all([createTestDatabase('sluice_npmstart'), startSshGitServer({ authorizedKeys: [] })]);
    tmp = await mkdtemp(path.join(os.tmpdir(), 'sluice-npmstart-'));
    // What `npm start` makes its own: the data directory (and HOME) and the checkouts.
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'sluice-npmstart-data-'));
    const workspaces = await mkdtemp(path.join(os.tmpdir(), 'sluice-npmstart-ws-'));
    if (as) for (const dir of [dataDir, workspaces]) await chown(dir, as.uid, as.gid);
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    dev = startRole(
      'dev',
      {
        HOME: dataDir,
        SLUICE_DATA_DIR: dataDir,
        SLUICE_WORKSPACE_DIR: workspaces,
        DATABASE_URL: db.url,
        TEMPORAL_ADDRESS: process.env.SLUICE_TEST_TEMPORAL_ADDRESS!,
        PORT: String(port),
        // Queues of its own on the shared Temporal server: it takes no other test's work.
        SLUICE_TASK_QUEUE: `sluice-${path.basename(tmp)}`,
        SLUICE_BUILD_QUEUE: `sluice-build-${path.basename(tmp)}`,
      },
      as,
    );
    await dev.waitForOutput(/Sluice is running\./, 120_000);
  });

  afterAll(async () => {
    await dev?.stop();
    await ssh?.close();
    await db?.drop();
    for (const dir of [tmp, dataDir]) if (dir) await removeDir(dir);
  });

  it('runs a hostile test file that finds no secret, no process of the runner, and leaves nothing behind', async () => {
    expect(dev.output()).not.toMatch(/NOT isolated/);
    const adminToken = (await readFile(path.join(dataDir, 'admin.token'), 'utf8')).trim();
    const secretKey = (await readFile(path.join(dataDir, 'secret.key'), 'utf8')).trim();
    const admin = <T>(method: string, p: string, body?: unknown) => callAdmin<T>(url, adminToken, method, p, body);

    const daemonMarker = daemonMarkerName();
    const bare = path.join(tmp, 'app.git');
    await createBareRepo(
      bare,
      hostileFiles({ daemonMarker, apiPort: Number(new URL(url).port), runner: { pid: dev.pid, cmdline: 'dev.js' }, secrets: [db.url, secretKey, adminToken], dataDir }),
      'first commit',
    );
    const org = await admin<{ id: number }>('POST', '/api/v1/orgs', { name: 'acme', email: 'builds@acme.test' });
    const repo = await admin<{ id: number; webhook_url: string; ssh_public_key: string }>('POST', `/api/v1/orgs/${org.id}/repos`, { name: 'app', scm: 'git', pull_url: ssh.url(bare) });
    ssh.setAuthorizedKeys([repo.ssh_public_key]);
    await admin('POST', `/api/v1/repos/${repo.id}/suites`, { branch: 'master', test_pattern: '*_test.sh' });
    await admin('PUT', `/api/v1/repos/${repo.id}/secrets/API_TOKEN`, { value: 'sk_live_npm_start_0123' });

    const res = await fetch(repo.webhook_url, { method: 'POST' });
    expect(res.status).toBe(200);
    const session = await sessionOfGuid(db.pool, ((await res.json()) as { guid: string }).guid);
    const view = await eventually(
      'the build to end',
      async () => {
        const s = await admin<{ status: string }>('GET', `/api/v1/sessions/${session}`);
        return ['passed', 'failed', 'error', 'stopped'].includes(s.status) ? s : false;
      },
      120_000,
    );
    expect(view.status).toBe('passed');
    const report = (await (await fetch(`${url}${await reportPath(db.pool, session)}`, { headers: { accept: 'application/json' } })).json()) as { tests: { output: string }[] };
    const output = report.tests[0]!.output;

    // Never root: as root, npm start runs builds as its own unprivileged user.
    expect(output).not.toContain('uid=0\n');
    await expectSandboxed(output, daemonMarker);
  });
});
