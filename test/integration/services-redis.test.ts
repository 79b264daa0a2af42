/**
 * The `redis` service (steps/services) against real Redis servers: the local one, and one this
 * file starts with `--databases 3` (two numbers for workers) and an admin password. Two workers
 * at once get a number and an ACL user each; the admin password never reaches them; a third
 * is refused, saying how many workers the server allows and how to raise it; release frees the
 * number (flushed) and deletes the user, and does not throw once the server has gone away.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer } from 'node:net';
import Redis from 'ioredis';
import { provisionServices, ServiceCapacityError, ServiceUnavailableError, type WorkerServices } from '../../src/steps/services';
import { eventually } from '../support/wait';

const local = { redis: 'redis://127.0.0.1:6379' };
const installation = randomBytes(4).toString('hex');
const sessionId = 1_000 + Math.floor(Math.random() * 1e6);
const made: WorkerServices[] = [];
const clients: Redis[] = [];

afterAll(async () => {
  for (const c of clients) await close(c);
  for (const m of made) await m.release();
});

function connect(url: string): Redis {
  const c = new Redis(url, { maxRetriesPerRequest: 0, retryStrategy: () => null, lazyConnect: true });
  c.on('error', () => undefined);
  clients.push(c);
  return c;
}

async function close(c: Redis): Promise<void> {
  if (c.status !== 'end') await c.quit().catch(() => c.disconnect());
}

async function adminCall(url: string, ...args: string[]): Promise<unknown> {
  const c = connect(url);
  try {
    return await c.call(args[0]!, ...args.slice(1));
  } finally {
    await close(c);
  }
}

async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return port;
}

describe('on the local server', () => {
  it('gives two workers at once a database number and an ACL user each, without admin commands', async () => {
    const provision = async (worker: number) => {
      const s = await provisionServices(local, ['redis'], { installation, sessionId, worker });
      made.push(s);
      return s;
    };
    const [one, two] = await Promise.all([provision(1), provision(2)]);
    expect(Object.keys(one.env)).toEqual(['REDIS_URL']);
    const [u1, u2] = [new URL(one.env.REDIS_URL!), new URL(two.env.REDIS_URL!)];
    expect(u1.username).toBe(`sluice_${installation}_${sessionId}_1`);
    expect(u1.password).toMatch(/^[0-9a-f]{48}$/);
    expect(u1.password).not.toBe(u2.password);
    expect(one.secrets).toEqual([u1.password]);
    expect(u1.pathname).not.toBe(u2.pathname);
    expect(Number(u1.pathname.slice(1))).toBeGreaterThanOrEqual(1); // never DB 0, where the claims are

    const a = connect(one.env.REDIS_URL!);
    const b = connect(two.env.REDIS_URL!);
    await a.set('k', 'from one');
    await b.set('k', 'from two');
    expect(await a.get('k')).toBe('from one');
    expect(await b.get('k')).toBe('from two');
    expect(await a.call('ACL', 'WHOAMI')).toBe(u1.username);
    await a.flushdb(); // allowed: test suites do it between tests
    expect(await b.get('k')).toBe('from two');
    await expect(a.call('CONFIG', 'GET', 'databases')).rejects.toThrow(/NOPERM/);
    await expect(a.call('FLUSHALL')).rejects.toThrow(/NOPERM/);
    await expect(a.call('ACL', 'LIST')).rejects.toThrow(/NOPERM/);
    await expect(a.call('SHUTDOWN')).rejects.toThrow(/NOPERM/);
  });

  it('frees the number (flushed) and deletes the user on release, and again without complaint', async () => {
    const w = await provisionServices(local, ['redis'], { installation, sessionId, worker: 3 });
    const url = new URL(w.env.REDIS_URL!);
    const n = url.pathname.slice(1);
    const c = connect(w.env.REDIS_URL!);
    await c.set('left', 'behind');
    expect(await adminCall(local.redis, 'GET', `sluice:service-db:${n}`)).toMatch(new RegExp(`^${url.username} `));
    await w.release();
    await expect(w.release()).resolves.toBeUndefined();
    expect(await adminCall(local.redis, 'GET', `sluice:service-db:${n}`)).toBeNull();
    expect(await adminCall(local.redis, 'ACL', 'USERS')).not.toContain(url.username);
    expect(await adminCall(`${local.redis}/${n}`, 'EXISTS', 'left')).toBe(0);
    await expect(adminCall(local.redis, 'AUTH', url.username, url.password)).rejects.toThrow(/WRONGPASS/);
  });
});

describe('on a server with databases=3 and an admin password', () => {
  let server: ChildProcess;
  let admin: string;
  const adminPassword = `admin-${randomBytes(12).toString('hex')}`;

  beforeAll(async () => {
    const port = await freePort();
    server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--databases', '3', '--save', '', '--appendonly', 'no', '--requirepass', adminPassword], {
      stdio: 'ignore',
    });
    admin = `redis://:${adminPassword}@127.0.0.1:${port}`;
    await eventually('the test redis-server', () => adminCall(admin, 'PING').catch(() => undefined), 10_000);
  });

  afterAll(async () => {
    if (server.exitCode === null && server.signalCode === null) {
      server.kill('SIGKILL');
      await once(server, 'exit');
    }
  });

  it('allows two workers at once, refuses a third clearly, and lets release go on once the server is gone', async () => {
    const owner = (worker: number) => ({ installation, sessionId: sessionId + 1, worker });
    const one = await provisionServices({ redis: admin }, ['redis'], owner(1));
    const two = await provisionServices({ redis: admin }, ['redis'], owner(2));
    expect([one.env.REDIS_URL, two.env.REDIS_URL].map((u) => new URL(u!).pathname).sort()).toEqual(['/1', '/2']);
    for (const w of [one, two]) expect(w.env.REDIS_URL).not.toContain(adminPassword); // its own user, not the admin's
    await connect(one.env.REDIS_URL!).set('x', '1');

    const third = provisionServices({ redis: admin }, ['redis'], owner(3));
    await expect(third).rejects.toBeInstanceOf(ServiceCapacityError);
    await expect(third).rejects.toBeInstanceOf(ServiceUnavailableError);
    const message = await third.catch((err: Error) => err.message);
    expect(message).toMatch(/redis/);
    expect(message).toMatch(/databases=3/);
    expect(message).toMatch(/2 workers at once/);
    expect(message).toMatch(/"databases" in its redis\.conf/);
    expect(message).not.toContain(adminPassword);
    // The refused worker left nothing behind: no user of its own.
    expect(await adminCall(admin, 'ACL', 'USERS')).not.toContain(`sluice_${installation}_${sessionId + 1}_3`);

    // A number freed is a number for the next worker, flushed.
    await one.release();
    const four = await provisionServices({ redis: admin }, ['redis'], owner(4));
    expect(new URL(four.env.REDIS_URL!).pathname).toBe(new URL(one.env.REDIS_URL!).pathname);
    expect(await connect(four.env.REDIS_URL!).get('x')).toBeNull();

    for (const c of clients.splice(0)) await close(c);
    server.kill('SIGKILL');
    await once(server, 'exit');
    const warn = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
    try {
      await expect(two.release()).resolves.toBeUndefined();
      await expect(four.release()).resolves.toBeUndefined();
      expect(warn).toHaveBeenCalledTimes(2);
      for (const [line] of warn.mock.calls) {
        expect(String(line)).toMatch(/redis/);
        expect(String(line)).not.toContain(adminPassword);
      }
    } finally {
      warn.mockRestore();
    }
    // And a server that is gone is a service this runner cannot reach, named, without its password.
    const gone = provisionServices({ redis: admin }, ['redis'], owner(5));
    await expect(gone).rejects.toBeInstanceOf(ServiceUnavailableError);
    const why = await gone.catch((err: Error) => err.message);
    expect(why).toMatch(/cannot reach its redis service at 127\.0\.0\.1:\d+/);
    expect(why).not.toContain(adminPassword);
  });
});
