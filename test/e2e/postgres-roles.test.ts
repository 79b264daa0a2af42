/**
 * PostgreSQL away under the roles as separate processes (dist/: the API, a worker and a runner;
 * issue 26), against a PostgreSQL server of this file's own: roles started while it is away come
 * up and wait for it (the API answering 503 with Retry-After, /healthz naming `postgresql`), and
 * take builds once it is there; stopped again mid-build with triggers arriving, the triggers are
 * accepted, and once it is back every one ends with `stop`, the running build with its true
 * result, and no role has exited.
 */
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { callAdmin } from '../support/adminApi';
import { startPrivatePostgres, type PrivatePostgres } from '../support/privatePostgres';
import { buildDist, expectStillRunning, sluiceEnv, startRole, stopAllProcesses, waitForHealthy, withRoleOutput, type RoleProcess } from '../support/processes';
import { startReceiver, type Receiver } from '../support/receiver';
import { startSshGitServer, type SshGitServer } from '../support/sshGitServer';
import { heldBuildRepo } from '../support/heldBuild';
import { eventually } from '../support/wait';
import { expectEachEventOnce, type Payload } from '../support/world';

let pg: PrivatePostgres;
let ssh: SshGitServer;
let receiver: Receiver;
let tmp: string;

beforeAll(async () => {
  [pg, ssh, receiver] = await Promise.all([startPrivatePostgres(), startSshGitServer({ authorizedKeys: [] }), startReceiver(), buildDist()]);
  tmp = await mkdtemp(path.join(os.tmpdir(), 'sluice-pg-roles-'));
}, 240_000);

afterAll(async () => {
  await stopAllProcesses();
  await Promise.allSettled([ssh?.close(), receiver?.close()]);
  await pg?.remove();
  await rm(tmp, { recursive: true, force: true });
});

const eventsOf = (session: number) => receiver.requests.map((r) => r.json as Payload).filter((p) => p?.session === session);
const stopped = (session: number) => eventsOf(session).some((e) => e.event === 'stop');

it('roles started without PostgreSQL wait for it, and ride out its outage mid-build with triggers arriving', async () => {
  await pg.stop();
  const shared = path.join(tmp, 'shared');
  // As root, a runner runs builds as its unprivileged build user: it must reach and write there.
  await chmod(tmp, 0o711);
  await mkdir(shared, { mode: 0o1777 });
  await chmod(shared, 0o1777);
  const env = await sluiceEnv({
    databaseUrl: pg.url,
    temporalAddress: process.env.SLUICE_TEST_TEMPORAL_ADDRESS!,
    // The test talks to its build through files of its own: no sandbox's private /tmp.
    env: { SLUICE_WEBHOOK_ALLOW: '127.0.0.0/8', SLUICE_SANDBOX: 'none' },
  });
  const roles: RoleProcess[] = [startRole('api', env), startRole('worker', env), startRole('runner', env)];
  await withRoleOutput(roles, async () => {
    const base = env.SLUICE_BASE_URL!;

    // Up without it: /healthz names it, a trigger is refused with a time to try again.
    const health = await eventually('/healthz to answer', async () => {
      const res = await fetch(`${base}/healthz`).catch(() => null);
      return res ? { status: res.status, body: (await res.json()) as { missing?: string[] } } : undefined;
    }, 60_000);
    expect(health).toMatchObject({ status: 503, body: { missing: expect.arrayContaining(['postgresql']) } });
    const early = await fetch(`${base}/1/builds/any-key`, { method: 'POST' });
    expect(early.status).toBe(503);
    expect(early.headers.get('retry-after')).toBe('5');

    await pg.start();
    await waitForHealthy(base, 120_000);
    const admin = <T = Record<string, unknown>>(method: string, p: string, body?: unknown) => callAdmin<T>(base, env.SLUICE_ADMIN_TOKEN!, method, p, body);
    const held = await heldBuildRepo({ admin, ssh, receiverUrl: receiver.url, bare: path.join(tmp, 'app.git'), shared, org: 'acme', name: 'app' });
    const trigger = async () => {
      const res = await held.trigger();
      expect(res.status).toBe(200);
      return ((await res.json()) as { guid: string }).guid;
    };
    const sessionOf = async (guid: string) =>
      eventually(`the session of ${guid}`, async () => (await (await fetch(`${base}/ci_events/${guid}/guid`)).json() as { sessions?: { session: number }[] }).sessions?.[0]?.session, 120_000);

    const first = await sessionOf(await trigger());
    await held.untilRunning();

    await pg.stop();
    const guids: string[] = [];
    try {
      for (let i = 0; i < 3; i++) guids.push(await trigger());
      await writeFile(held.release, '');
      // The build's end waits for the database: it cannot record it meanwhile.
      await new Promise((resolve) => setTimeout(resolve, 3_000)); // the outage's length, as the 15 s
      expect(stopped(first)).toBe(false);
    } finally {
      await pg.start();
    }

    await eventually(`session ${first}'s stop`, async () => stopped(first), 120_000);
    expect(eventsOf(first).find((e) => e.event === 'stop')).toMatchObject({ status: 'passed', counts: { passed: 1 } });
    for (const guid of guids) {
      const session = await sessionOf(guid);
      await eventually(`session ${session}'s stop`, async () => stopped(session), 180_000);
      expectEachEventOnce(receiver, session);
    }
    await expectStillRunning(roles);
  });
}, 600_000);
