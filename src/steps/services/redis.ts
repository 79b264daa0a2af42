/**
 * The `redis` service: per worker, a database number of its own on the runner's Redis server
 * (SLUICE_SERVICE_REDIS_URL), and, where the server has ACLs (Redis 6+), a user of its own.
 *
 * - Numbers 1..(databases-1) are for workers (`CONFIG GET databases`; 16 by default, so 15
 *   workers at once); DB 0 holds Sluice's claims, `sluice:service-db:<n>` = `<name> <token>`,
 *   each taken with SET NX PX and renewed while its worker lives, so a crashed runner's numbers
 *   come free within CLAIM_TTL_MS. A number is flushed when claimed and when released. When
 *   every number is taken, the worker is refused, saying how many workers at once the server
 *   allows and how to raise it (`databases` in redis.conf).
 * - The ACL user (`<name>`, random password) may run anything but admin commands (`-@admin`:
 *   CONFIG, ACL, SHUTDOWN, MONITOR, DEBUG, ...), FLUSHALL and SWAPDB, which reach other workers'
 *   numbers. Redis cannot tie a user to a database number: a build that SELECTs another number
 *   can still read and write it. Its credentials are in REDIS_URL, so the admin URL's never reach
 *   build code; a server without ACLs is used only when its admin URL has no password.
 */
import { randomBytes } from 'node:crypto';
import Redis from 'ioredis';
import { FULL, UNREACHABLE, type MadeService, type ServiceDriver } from './driver';

const CONNECT_TIMEOUT_MS = 10_000;
const COMMAND_TIMEOUT_MS = 30_000;
/** A claim outlives its worker's last renewal by this much at most. */
export const CLAIM_TTL_MS = 60_000;
const RENEW_EVERY_MS = 15_000;
const CLAIM_KEY = 'sluice:service-db:';

/** Takes the first free number of 1..ARGV[3]-1 for ARGV[1] (ttl ARGV[2] ms) and flushes it; 0 when all are taken. */
const CLAIM = `
for i = 1, tonumber(ARGV[3]) - 1 do
  if redis.call('SET', ARGV[4] .. i, ARGV[1], 'NX', 'PX', ARGV[2]) then
    redis.call('SELECT', i)
    redis.call('FLUSHDB')
    return i
  end
end
return 0`;
/** Frees number ARGV[2] (flushing it) if KEYS[1] still holds claim ARGV[1]. */
const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('SELECT', tonumber(ARGV[2]))
  redis.call('FLUSHDB')
  return 1
end
return 0`;
/** Extends claim ARGV[1] on KEYS[1] by ARGV[2] ms if it is still ours. */
const RENEW = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0`;

function serverOf(adminUrl: string) {
  const u = new URL(adminUrl);
  return {
    tls: u.protocol === 'rediss:',
    host: u.hostname.replace(/^\[(.*)\]$/, '$1') || '127.0.0.1',
    port: Number(u.port || 6379),
    username: decodeURIComponent(u.username) || undefined,
    password: decodeURIComponent(u.password) || undefined,
  };
}

/** One short-lived admin connection (on DB 0) for `work`, closed after it whatever happens. */
async function withAdmin<T>(adminUrl: string, work: (redis: Redis) => Promise<T>, connectTimeoutMs = CONNECT_TIMEOUT_MS): Promise<T> {
  const { tls, host, port, username, password } = serverOf(adminUrl);
  const redis = new Redis({
    host,
    port,
    username,
    password,
    db: 0,
    tls: tls ? {} : undefined,
    lazyConnect: true,
    connectTimeout: connectTimeoutMs,
    commandTimeout: COMMAND_TIMEOUT_MS,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null, // one try: a dead server fails the operation, it is not retried forever
    enableOfflineQueue: false,
  });
  let lastError: Error | undefined;
  redis.on('error', (err: Error) => (lastError = err)); // reported by the failing command; no unhandled event
  try {
    await redis.connect();
  } catch (err) {
    close(redis);
    // ioredis rejects with "Connection is closed." and emits what closed it.
    const cause = lastError ?? (err as Error);
    const why = cause.message || 'connection closed';
    // A server that answered (WRONGPASS, NOAUTH) was reached.
    if (cause.name === 'ReplyError') throw new Error(`its admin URL cannot log in: ${why}`, { cause: err });
    throw Object.assign(new Error(`cannot connect: ${why}`, { cause: err }), { code: UNREACHABLE });
  }
  try {
    return await work(redis);
  } finally {
    if (redis.status !== 'end') await redis.quit().catch(() => close(redis));
  }
}

/** Drops a connection at once (a closed one is left alone: ioredis would wait 2 s on its socket). */
function close(redis: Redis): void {
  if (redis.status !== 'end') redis.disconnect();
}

/** How many numbers the server has (`databases`), 0 and ours included. */
async function databases(redis: Redis): Promise<number> {
  let reply: unknown;
  try {
    reply = await redis.call('CONFIG', 'GET', 'databases');
  } catch (err) {
    throw new Error(`CONFIG GET databases failed (${(err as Error).message}): the admin URL's user needs it to know how many database numbers there are`, {
      cause: err,
    });
  }
  const n = Array.isArray(reply) ? Number(reply[1]) : NaN;
  if (!Number.isInteger(n) || n < 1) throw new Error(`CONFIG GET databases answered ${JSON.stringify(reply)}`);
  return n;
}

/** Whether the server has ACLs (Redis 6+). */
async function hasAcl(redis: Redis): Promise<boolean> {
  try {
    await redis.call('ACL', 'WHOAMI');
    return true;
  } catch (err) {
    if (/unknown command/i.test((err as Error).message)) return false;
    throw err;
  }
}

/** Every claim, by number: [number, value] for each number that has one. */
async function claims(redis: Redis, count: number): Promise<[number, string][]> {
  if (count < 2) return [];
  const numbers = Array.from({ length: count - 1 }, (_, i) => i + 1);
  const values = await redis.mget(numbers.map((n) => CLAIM_KEY + n));
  return numbers.flatMap((n, i) => (values[i] ? [[n, values[i]] as [number, string]] : []));
}

const ownerOf = (claim: string) => claim.split(' ')[0]!;

/** Frees the numbers `names` hold and deletes their ACL users. */
async function dropNames(redis: Redis, names: ReadonlySet<string>): Promise<void> {
  const count = await databases(redis);
  for (const [n, value] of await claims(redis, count)) {
    if (names.has(ownerOf(value))) await redis.eval(RELEASE, 1, CLAIM_KEY + n, value, String(n));
  }
  if (names.size > 0 && (await hasAcl(redis))) await redis.call('ACL', 'DELUSER', ...names); // also ends their connections
}

export const redisDriver: ServiceDriver = {
  async make(adminUrl, name, password): Promise<MadeService> {
    const claim = `${name} ${randomBytes(8).toString('hex')}`;
    const { tls, host, port, password: adminPassword } = serverOf(adminUrl);
    const { n, acl } = await withAdmin(adminUrl, async (redis) => {
      await dropNames(redis, new Set([name])); // a lane run again: what its first run held goes first
      const count = await databases(redis);
      const acl = await hasAcl(redis);
      if (!acl && adminPassword) {
        throw new Error('this server has no ACLs (Redis 6 or later has them), so a worker could only log in with the admin password, which builds never get');
      }
      const n = Number(await redis.eval(CLAIM, 0, claim, String(CLAIM_TTL_MS), String(count), CLAIM_KEY));
      if (n === 0) {
        throw Object.assign(
          new Error(
            `every database number is taken: this server has databases=${count} (DB 0 is Sluice's), so ${count - 1} workers at once can have redis; raise "databases" in its redis.conf for more`,
          ),
          { code: FULL },
        );
      }
      if (acl) {
        await redis.call('ACL', 'SETUSER', name, 'reset', 'on', `>${password}`, '~*', '&*', '+@all', '-@admin', '-flushall', '-swapdb');
      }
      return { n, acl };
    });

    let renewer: NodeJS.Timeout | undefined = setInterval(() => {
      withAdmin(adminUrl, (redis) => redis.eval(RENEW, 1, CLAIM_KEY + n, claim, String(CLAIM_TTL_MS)))
        .then((kept) => {
          if (Number(kept) === 0 && renewer) console.warn(`sluice: ${name} lost its claim on redis database ${n} (it expired)`);
        })
        .catch((err: unknown) => console.warn(`sluice: renewing ${name}'s claim on redis database ${n} failed: ${(err as Error).message}`));
    }, RENEW_EVERY_MS);
    renewer.unref();

    const auth = acl ? `${name}:${encodeURIComponent(password)}@` : '';
    const hostInUrl = host.includes(':') ? `[${host}]` : host;
    return {
      env: { REDIS_URL: `${tls ? 'rediss' : 'redis'}://${auth}${hostInUrl}:${port}/${n}` },
      async drop() {
        clearInterval(renewer);
        renewer = undefined;
        await withAdmin(adminUrl, async (redis) => {
          if (acl) await redis.call('ACL', 'DELUSER', name);
          await redis.eval(RELEASE, 1, CLAIM_KEY + n, claim, String(n));
        });
      },
    };
  },

  async list(adminUrl, prefix) {
    return withAdmin(adminUrl, async (redis) => {
      const owners = (await claims(redis, await databases(redis))).map(([, value]) => ownerOf(value));
      const users = (await hasAcl(redis)) ? ((await redis.call('ACL', 'USERS')) as string[]) : [];
      return [...new Set([...owners, ...users])].filter((name) => name.startsWith(prefix));
    });
  },

  async drop(adminUrl, names) {
    if (names.length === 0) return;
    await withAdmin(adminUrl, (redis) => dropNames(redis, new Set(names)));
  },

  async check(adminUrl, timeoutMs) {
    return withAdmin(
      adminUrl,
      async (redis) => {
        const count = await databases(redis);
        const acl = await hasAcl(redis);
        if (!acl && serverOf(adminUrl).password) throw new Error('no ACLs (Redis 6+), and builds never get the admin password');
        const { host, port } = serverOf(adminUrl);
        return `${host}:${port}, ${Math.max(0, count - 1)} workers at once (databases=${count})`;
      },
      timeoutMs,
    );
  },
};
