/**
 * `npm start` killed with SIGKILL in the middle of a build, its Temporal dev server with it,
 * then started again on the same data directory and database, as a user whose machine lost
 * power would: every build it had accepted finishes with its true result and sends `stop`, and
 * the test that was running when it died did not outlive it. Then `npm start` alone killed, its
 * dev server left running: the next start stops that server and takes its place. Then only its
 * Temporal dev server killed mid-build: npm start starts it again (issue 26). Real processes,
 * killed for real.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { createBareRepo } from '../support/gitRepo';
import { freePort } from '../../src/temporal/devServer';
import { REPO_ROOT } from '../support/processes';
import { heldBuildRepo } from '../support/heldBuild';
import { eventually } from '../support/wait';
import { startReceiver, type Receiver } from '../support/receiver';
import { startSshGitServer, type SshGitServer } from '../support/sshGitServer';
import { expectEachEventOnce, script, sessionOfGuid, type Payload } from '../support/world';
import { isAlive } from '../support/pids';
import { callAdmin } from '../support/adminApi';
import { removeDir } from '../support/removeDir';

let db: TestDatabase;
let ssh: SshGitServer;
let receiver: Receiver;
let tmp: string;
let env: NodeJS.ProcessEnv;
const started: ChildProcess[] = [];

beforeAll(async () => {
  [db, ssh, receiver] = await Promise.all([createTestDatabase('sluice_restart'), startSshGitServer({ authorizedKeys: [] }), startReceiver()]);
  tmp = await mkdtemp(path.join(os.tmpdir(), 'sluice-restart-'));
  // Where the build user writes what it tells this test (as root, npm start runs builds as it).
  await chmod(tmp, 0o711);
  await mkdir(path.join(tmp, 'shared'), { mode: 0o1777 });
  await chmod(path.join(tmp, 'shared'), 0o1777);
  const [port, temporalPort, uiPort] = [await freePort(), await freePort(), await freePort()];
  env = {
    ...process.env,
    DATABASE_URL: db.url,
    SLUICE_DATA_DIR: path.join(tmp, 'data'),
    SLUICE_WORKSPACE_DIR: path.join(tmp, 'workspaces'),
    PORT: String(port),
    SLUICE_TEMPORAL_PORT: String(temporalPort),
    SLUICE_TEMPORAL_UI_PORT: String(uiPort),
    // The slow test tells this test its pid and its runs through files of this test's (below):
    // without bubblewrap, whose PID namespace and private /tmp would hide both. As root, npm
    // start still runs builds as its own unprivileged user. npm-start.test.ts tries the default.
    SLUICE_SANDBOX: 'none',
  };
  for (const name of ['TEMPORAL_ADDRESS', 'SLUICE_ADMIN_TOKEN', 'SLUICE_SECRET_KEY']) delete env[name];
}, 60_000);

afterAll(async () => {
  for (const child of started) killTree(child);
  await Promise.allSettled([ssh?.close(), receiver?.close()]);
  await db?.drop();
  await removeDir(tmp);
});

/** What each `npm start` printed. */
const printed = new WeakMap<ChildProcess, () => string>();

/** `npm start`, in a process group of its own; resolves once it says it is running. */
async function npmStart(): Promise<ChildProcess> {
  const child = spawn('npm', ['start'], { cwd: REPO_ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  started.push(child);
  let out = '';
  for (const s of [child.stdout!, child.stderr!]) s.on('data', (d: Buffer) => (out += d.toString()));
  printed.set(child, () => out);
  await eventually('npm start to be running', async () => {
    if (child.exitCode !== null) throw new Error(`npm start exited:\n${out.slice(-3000)}`);
    return out.includes('Sluice is running.');
  }, 180_000);
  return child;
}

/** SIGKILL to npm start's process group, which leaves its Temporal dev server (a group of its own). */
function killGroup(child: ChildProcess): void {
  try {
    process.kill(-child.pid!, 'SIGKILL');
  } catch {
    // already gone
  }
}

/** SIGKILL to npm start's process group, and to its Temporal dev server. */
async function killTree(child: ChildProcess): Promise<void> {
  killGroup(child);
  for (const pid of await devServerPids()) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

/** The Temporal dev servers of this test's data directory. */
async function devServerPids(): Promise<number[]> {
  const marker = path.join(env.SLUICE_DATA_DIR!, 'temporal.db');
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    if (cmdline.includes(marker)) pids.push(Number(entry));
  }
  return pids;
}


async function admin<T = Record<string, unknown>>(method: string, p: string, body?: unknown): Promise<T> {
  const token = (await readFile(path.join(env.SLUICE_DATA_DIR!, 'admin.token'), 'utf8')).trim();
  return callAdmin<T>(`http://127.0.0.1:${env.PORT}`, token, method, p, body);
}

const eventsOf = (session: number) => receiver.requests.map((r) => r.json as Payload).filter((p) => p?.session === session);

it('npm start killed with SIGKILL mid-build and started again finishes every build it accepted', async () => {
  const first = await npmStart();
  // It gives builds this machine's PostgreSQL, MariaDB and Redis, which answer here (.ci/run starts them).
  for (const service of ['postgresql', 'mysql', 'redis']) expect(printed.get(first)!()).toMatch(new RegExp(`${service}\\s+the local server`));
  const slowPid = path.join(tmp, 'shared', 'slow.pid');
  const runs = path.join(tmp, 'shared', 'runs.log');
  const bare = path.join(tmp, 'app.git');
  await createBareRepo(
    bare,
    {
      // Its first run records itself and hangs until the machine "loses power"; after, it passes.
      'test/slow_test.sh': script(`echo slow >> ${runs}\nif [ ! -e ${slowPid} ]; then echo $$ > ${slowPid}.tmp; mv ${slowPid}.tmp ${slowPid}; sleep 600; fi`),
      'test/quick_test.sh': script(`echo quick >> ${runs}`),
    },
    'first',
  );
  const org = await admin<{ id: number }>('POST', '/api/v1/orgs', { name: 'acme', email: 'builds@acme.test' });
  await admin('POST', `/api/v1/orgs/${org.id}/webhooks`, { url: receiver.url });
  const repo = await admin<{ id: number; webhook_url: string; ssh_public_key: string }>('POST', `/api/v1/orgs/${org.id}/repos`, {
    name: 'app',
    scm: 'git',
    pull_url: ssh.url(bare),
  });
  ssh.setAuthorizedKeys([repo.ssh_public_key]);
  await admin('POST', `/api/v1/repos/${repo.id}/suites`, { branch: 'master', test_pattern: 'test/*_test.sh', workers: 2 });

  // One build running, two queued behind it.
  const sessions: number[] = [];
  for (let i = 0; i < 3; i += 1) {
    const res = await fetch(repo.webhook_url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ branch: 'master', force: true }) });
    expect(res.status).toBe(200);
    sessions.push(await sessionOfGuid(db.pool, ((await res.json()) as { guid: string }).guid));
  }
  const testPid = Number(await eventually('the slow test to run', async () => (await readFile(slowPid, 'utf8').catch(() => '')).match(/^(\d+)\n$/)?.[1]));
  expect(await devServerPids()).toHaveLength(1);

  await killTree(first);
  await eventually('the test that was running to be gone', async () => !isAlive(testPid), 15_000);
  await eventually('the dev server to be gone', async () => (await devServerPids()).length === 0, 15_000);

  const second = await npmStart();
  for (const session of sessions) {
    await eventually(`session ${session}'s stop`, async () => eventsOf(session).some((e) => e.event === 'stop'), 180_000);
  }
  const [a, b, c] = sessions.map((s) => eventsOf(s).find((e) => e.event === 'stop')!);
  // The interrupted build's true result: both files passed, each counted once.
  expect(a).toMatchObject({ status: 'passed', counts: { passed: 2, failed: 0, error: 0, notstarted: 0, started: 0 } });
  expect(b).toMatchObject({ status: 'passed' });
  expect(c).toMatchObject({ status: 'passed' });
  const { rows } = await db.pool.query<{ id: string; status: string }>('SELECT id, status FROM sessions WHERE id = ANY($1) ORDER BY id', [sessions]);
  expect(rows.map((r) => r.status)).toEqual(['passed', 'passed', 'passed']);

  // npm start alone killed: its dev server runs on, holding the ports; the next start stops it
  // (it is this data directory's) and comes up in its place.
  const [leftServer] = await devServerPids();
  killGroup(second);
  await eventually('npm start to be gone', async () => !isAlive(second.pid!), 15_000);
  expect(isAlive(leftServer!)).toBe(true);
  await npmStart();
  expect(isAlive(leftServer!)).toBe(false);
  expect(await devServerPids()).toHaveLength(1);
  const again = await fetch(repo.webhook_url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ branch: 'master', force: true }) });
  const session = await sessionOfGuid(db.pool, ((await again.json()) as { guid: string }).guid);
  await eventually(`session ${session}'s stop`, async () => eventsOf(session).some((e) => e.event === 'stop'), 180_000);
  expect(eventsOf(session).find((e) => e.event === 'stop')).toMatchObject({ status: 'passed' });
}, 600_000);

it('npm start starts its Temporal dev server again when it dies mid-build: the build ends true, every accepted trigger ends with stop, no event twice', async () => {
  for (const child of started.splice(0)) await killTree(child);
  await eventually('earlier dev servers to be gone', async () => (await devServerPids()).length === 0, 15_000);
  const dev = await npmStart();
  // The test runs until this test lets it go, so Temporal dies while it runs.
  const held = await heldBuildRepo({ admin, ssh, receiverUrl: receiver.url, bare: path.join(tmp, 'outage.git'), shared: path.join(tmp, 'shared'), org: 'outage', name: 'outage' });
  const { trigger } = held;

  const first = await trigger();
  expect(first.status).toBe(200);
  const session = await sessionOfGuid(db.pool, ((await first.json()) as { guid: string }).guid);
  await held.untilRunning();

  const [server] = await devServerPids();
  process.kill(server!, 'SIGKILL');
  await eventually('the dev server to be gone', async () => !isAlive(server!), 15_000);
  // Triggers meanwhile: each is accepted (200) or refused with 503 for the caller to retry, never lost once accepted.
  const guids: string[] = [];
  const answers: number[] = [];
  for (let i = 0; i < 5; i++) {
    const res = await trigger();
    answers.push(res.status);
    if (res.status === 200) guids.push(((await res.json()) as { guid: string }).guid);
    else expect(res.status).toBe(503);
  }
  await eventually('npm start to start its dev server again', async () => printed.get(dev)!().includes('Temporal dev server running again'), 60_000);
  expect(await devServerPids()).toHaveLength(1);
  expect(printed.get(dev)!()).toMatch(/Temporal dev server exited \(SIGKILL\); starting it again on the same data/);
  // Once it is back, triggers are accepted again.
  await eventually('a trigger to be accepted again', async () => {
    const res = await trigger();
    if (res.status === 200) guids.push(((await res.json()) as { guid: string }).guid);
    return res.status === 200;
  }, 60_000);

  await writeFile(held.release, '');
  await eventually(`session ${session}'s stop`, async () => eventsOf(session).some((e) => e.event === 'stop'), 180_000);
  expect(eventsOf(session).find((e) => e.event === 'stop')).toMatchObject({ status: 'passed', counts: { passed: 1 } });
  const all = [session];
  for (const guid of guids) {
    const s = await sessionOfGuid(db.pool, guid, 120_000);
    all.push(s);
    await eventually(`session ${s}'s stop`, async () => eventsOf(s).some((e) => e.event === 'stop'), 180_000);
  }
  // Once each: an event of a session reached the receiver under one xid (retries keep it);
  // at least received and stop of each.
  for (const session of all) expect(expectEachEventOnce(receiver, session)).toBeGreaterThanOrEqual(2);
}, 600_000);
