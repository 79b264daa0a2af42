/**
 * An external Temporal server stopped mid-build and started again (issue 26), under the roles
 * as separate processes (dist/: the API, a worker and a runner), as production runs them. While
 * it is away, /healthz names `temporal`, triggers answer 503 with Retry-After (nothing accepted,
 * nothing lost), and no role exits; once it is back on the same data, the roles reconnect by
 * themselves, the running build ends with its true result and triggers are accepted again.
 */
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { freePort, startDevServer, type DevServer } from '../../src/temporal/devServer';
import { callAdmin } from '../support/adminApi';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { buildDist, expectStillRunning, sluiceEnv, startRole, stopAllProcesses, waitForHealthy, withRoleOutput, type RoleProcess } from '../support/processes';
import { startReceiver, type Receiver } from '../support/receiver';
import { startSshGitServer, type SshGitServer } from '../support/sshGitServer';
import { heldBuildRepo } from '../support/heldBuild';
import { eventually } from '../support/wait';
import { expectEachEventOnce, sessionOfGuid, type Payload } from '../support/world';

let db: TestDatabase;
let ssh: SshGitServer;
let receiver: Receiver;
let tmp: string;
let temporal: DevServer | undefined;

beforeAll(async () => {
  [db, ssh, receiver] = await Promise.all([createTestDatabase('sluice_temporal_outage'), startSshGitServer({ authorizedKeys: [] }), startReceiver(), buildDist()]);
  tmp = await mkdtemp(path.join(os.tmpdir(), 'sluice-temporal-outage-'));
}, 240_000);

afterAll(async () => {
  await stopAllProcesses();
  await temporal?.stop();
  await Promise.allSettled([ssh?.close(), receiver?.close()]);
  await db?.drop();
  await rm(tmp, { recursive: true, force: true });
});

const eventsOf = (session: number) => receiver.requests.map((r) => r.json as Payload).filter((p) => p?.session === session);

it('the roles ride out an external Temporal stopped and started again: 503 meanwhile, then the build ends true and triggers are taken', async () => {
  const dataDir = path.join(tmp, 'temporal');
  const port = await freePort();
  // A server with its own data file, as an operator's would be: what it held survives its stop.
  const server = () => startDevServer({ dataDir, port, headless: true });
  const firstServer = await server();
  temporal = firstServer;
  const shared = path.join(tmp, 'shared');
  // As root, a runner runs builds as its unprivileged build user: it must reach and write there.
  await chmod(tmp, 0o711);
  await mkdir(shared, { mode: 0o1777 });
  await chmod(shared, 0o1777);
  const env = await sluiceEnv({
    databaseUrl: db.url,
    temporalAddress: temporal.address,
    // The test talks to its build through files of its own: no sandbox's private /tmp.
    env: { SLUICE_WEBHOOK_ALLOW: '127.0.0.0/8', SLUICE_SANDBOX: 'none' },
  });
  const roles: RoleProcess[] = [startRole('api', env), startRole('worker', env), startRole('runner', env)];
  await withRoleOutput(roles, async () => {
    await waitForHealthy(env.SLUICE_BASE_URL!, 120_000);
    const admin = <T = Record<string, unknown>>(method: string, p: string, body?: unknown) => callAdmin<T>(env.SLUICE_BASE_URL!, env.SLUICE_ADMIN_TOKEN!, method, p, body);

    const held = await heldBuildRepo({ admin, ssh, receiverUrl: receiver.url, bare: path.join(tmp, 'app.git'), shared, org: 'acme', name: 'app' });
    const { trigger } = held;

    const first = await trigger();
    expect(first.status).toBe(200);
    const session = await sessionOfGuid(db.pool, ((await first.json()) as { guid: string }).guid);
    await held.untilRunning();

    await firstServer.stop();
    temporal = undefined;
    await eventually('/healthz to name temporal', async () => {
      const res = await fetch(`${env.SLUICE_BASE_URL}/healthz`);
      return res.status === 503 && ((await res.json()) as { missing: string[] }).missing.includes('temporal');
    }, 30_000);
    const refused = await trigger();
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('5');

    temporal = await server();
    await waitForHealthy(env.SLUICE_BASE_URL!, 120_000);
    const again = await eventually('a trigger to be accepted again', async () => {
      const res = await trigger();
      return res.status === 200 ? ((await res.json()) as { guid: string }) : undefined;
    }, 60_000);

    await writeFile(held.release, '');
    await eventually(`session ${session}'s stop`, async () => eventsOf(session).some((e) => e.event === 'stop'), 180_000);
    expect(eventsOf(session).find((e) => e.event === 'stop')).toMatchObject({ status: 'passed', counts: { passed: 1 } });
    const later = await sessionOfGuid(db.pool, again.guid, 60_000);
    await eventually(`session ${later}'s stop`, async () => eventsOf(later).some((e) => e.event === 'stop'), 180_000);
    expect(eventsOf(later).find((e) => e.event === 'stop')).toMatchObject({ status: 'passed' });
    // Each event of each session came once (retries keep their xid).
    for (const s of [session, later]) {
      expectEachEventOnce(receiver, s);
    }
    // Nothing crashed.
    await expectStillRunning(roles);
  });
}, 600_000);
