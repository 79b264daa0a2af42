/**
 * Per-worker services (issue 21): each worker of a build that asks for `postgresql`, `mysql`
 * (MySQL or MariaDB) or `redis` gets a database and a user of its own, with a random password,
 * on the runner's servers (SLUICE_SERVICE_*_URL), made before its worker_setup hook and dropped
 * after the build whatever its end.
 *
 * - Names say whose they are: `sluice_<installation>_<session>_<worker>` (database, role or user,
 *   Redis ACL user), at most 32 characters (MySQL's limit on user names; PostgreSQL's is 63), so
 *   a runner that comes back after a crash drops what ended sessions left (`sweepServices`), and
 *   a lane run again for the same worker drops its leftovers before making them anew.
 * - The admin URLs never reach build code: not in the env a worker gets, not in an error (every
 *   message here is scrubbed of their passwords, and of the workers' too).
 * - Admin connections are short-lived (one per operation, closed after it) and bounded in time
 *   (connect and statement time-outs, and a deadline over each whole operation), so a dead
 *   server fails a build with a message instead of hanging it.
 */
import { randomBytes } from 'node:crypto';
import type { ServiceAdmins } from '../../config';
import type { ServiceName } from '../../core/buildSetup';
import { FULL, UNREACHABLE, type ServiceDriver } from './driver';
import { mysqlDriver } from './mysql';
import { postgresqlDriver } from './postgresql';
import { redisDriver } from './redis';

export type { ServiceName } from '../../core/buildSetup';

/** Whose services these are. */
export interface ServiceOwner {
  /** This installation's 8-hex id (src/db/installation.ts). */
  installation: string;
  sessionId: number;
  /** 1..N. */
  worker: number;
}

export interface WorkerServices {
  /** The variables the worker's hooks and tests get. */
  env: Record<string, string>;
  /** Values to mask in stored output (the passwords). */
  secrets: string[];
  /** Drops what was made (database, role/user, Redis keys); safe to call twice; never throws for a server that went away (log and go on). */
  release(): Promise<void>;
}

/** A service this runner does not have (no admin URL), cannot reach, or has no room on. */
export class ServiceUnavailableError extends Error {
  override readonly name = 'ServiceUnavailableError';
}

/** Every Redis database number builds may use is taken: the server allows no more workers at once. */
export class ServiceCapacityError extends ServiceUnavailableError {}

/** What one service's module does on its server (postgresql.ts, mysql.ts, redis.ts). */
export { FULL, UNREACHABLE, type MadeService, type ServiceDriver } from './driver';

const DRIVERS: Record<ServiceName, ServiceDriver> = { postgresql: postgresqlDriver, mysql: mysqlDriver, redis: redisDriver };
const ENV_NAMES: Record<ServiceName, string> = {
  postgresql: 'SLUICE_SERVICE_POSTGRESQL_URL',
  mysql: 'SLUICE_SERVICE_MYSQL_URL',
  redis: 'SLUICE_SERVICE_REDIS_URL',
};

/** A bound on each whole operation on a service's server, over the clients' own time-outs. */
export const SERVICE_DEADLINE_MS = 120_000;
/** MySQL's limit on a user name (MariaDB allows 80; PostgreSQL's identifiers 63 bytes). */
const MAX_NAME = 32;
const NAME = /^sluice_([0-9a-f]{8})_(\d+)_(\d+)$/;

/** The name of a worker's database and user on every service's server. */
export function serviceName(owner: ServiceOwner): string {
  if (!/^[0-9a-f]{8}$/.test(owner.installation)) throw new Error(`not an installation id: ${JSON.stringify(owner.installation)}`);
  if (!Number.isSafeInteger(owner.sessionId) || owner.sessionId < 1) throw new Error(`not a session id: ${owner.sessionId}`);
  if (!Number.isSafeInteger(owner.worker) || owner.worker < 1) throw new Error(`not a worker number: ${owner.worker}`);
  const name = `sluice_${owner.installation}_${owner.sessionId}_${owner.worker}`;
  if (name.length > MAX_NAME) throw new Error(`session ${owner.sessionId}, worker ${owner.worker}: its service name ${name} is longer than MySQL's ${MAX_NAME} characters`);
  return name;
}

/** Whose a name is, or undefined for a name that is not a worker's of this installation. */
export function parseServiceName(name: string, installation: string): { sessionId: number; worker: number } | undefined {
  const m = NAME.exec(name);
  if (!m || m[1] !== installation) return undefined;
  return { sessionId: Number(m[2]), worker: Number(m[3]) };
}

/** Makes each service the worker asks for; on any failure drops what it made and throws (ServiceUnavailableError when a service is missing or unreachable). */
export async function provisionServices(admins: ServiceAdmins, names: readonly ServiceName[], owner: ServiceOwner): Promise<WorkerServices> {
  const wanted = [...new Set(names)];
  for (const service of wanted) {
    if (!DRIVERS[service]) throw new ServiceUnavailableError(`there is no service called ${JSON.stringify(service)} (postgresql, mysql, redis)`);
    if (!admins[service]) throw new ServiceUnavailableError(`this runner has no ${service} service (${ENV_NAMES[service]})`);
  }
  if (wanted.length === 0) return { env: {}, secrets: [], release: async () => undefined };
  const name = serviceName(owner);
  const made = await Promise.allSettled(
    wanted.map(async (service) => {
      const password = randomBytes(24).toString('hex');
      const adminUrl = admins[service]!;
      try {
        const m = await withDeadline(DRIVERS[service].make(adminUrl, name, password), `making ${name}`);
        return { service, password, made: m };
      } catch (err) {
        // Whatever got made before the failure (a role without its database, a claim) goes too.
        await withDeadline(DRIVERS[service].drop(adminUrl, [name]), `dropping ${name}`).catch(() => undefined);
        throw failure(service, adminUrl, err, [password]);
      }
    }),
  );
  const ok = made.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  const release = once(async () => {
    await Promise.all(
      ok.map(async ({ service, password, made: m }) => {
        try {
          await withDeadline(m.drop(), `dropping ${name}`);
        } catch (err) {
          console.warn(`sluice: could not drop the ${service} service of session ${owner.sessionId}, worker ${owner.worker} (the sweep will): ${failure(service, admins[service]!, err, [password]).message}`);
        }
      }),
    );
  });
  const failed = made.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) {
    await release();
    throw failed.reason;
  }
  return {
    env: Object.assign({}, ...ok.map((o) => o.made.env)) as Record<string, string>,
    secrets: ok.map((o) => o.password),
    release,
  };
}

/**
 * Drops databases/roles/users left by sessions that have ended (a runner that crashed): `ended`
 * says which of the given session ids have ended. Returns how many workers' leftovers went (one
 * a service a worker). Every service is swept even when one fails; then it throws, saying which.
 */
export async function sweepServices(
  admins: ServiceAdmins,
  installation: string,
  ended: (sessionIds: number[]) => Promise<number[]>,
): Promise<number> {
  const prefix = `sluice_${installation}_`;
  let dropped = 0;
  const errors: string[] = [];
  for (const service of Object.keys(DRIVERS) as ServiceName[]) {
    const adminUrl = admins[service];
    if (!adminUrl) continue;
    try {
      const names = (await withDeadline(DRIVERS[service].list(adminUrl, prefix), 'listing leftovers')).filter((n) => parseServiceName(n, installation));
      if (names.length === 0) continue;
      const sessions = [...new Set(names.map((n) => parseServiceName(n, installation)!.sessionId))];
      const gone = new Set(await ended(sessions));
      const drop = [...new Set(names)].filter((n) => gone.has(parseServiceName(n, installation)!.sessionId));
      if (drop.length === 0) continue;
      await withDeadline(DRIVERS[service].drop(adminUrl, drop), 'dropping leftovers');
      dropped += drop.length;
    } catch (err) {
      errors.push(failure(service, adminUrl, err, []).message);
    }
  }
  if (errors.length > 0) throw new Error(`sweeping services: ${errors.join('; ')}`);
  return dropped;
}

export interface ServiceCheck {
  service: ServiceName;
  ok: boolean;
  /** Where it is and what it allows, or why it cannot be used; never a password. */
  detail: string;
}

/** Asks each server of `admins` whether builds could have it (`npm start` uses what answers). */
export async function checkServices(admins: ServiceAdmins, timeoutMs = 3_000): Promise<ServiceCheck[]> {
  const services = (Object.keys(DRIVERS) as ServiceName[]).filter((s) => admins[s]);
  return Promise.all(
    services.map(async (service) => {
      const adminUrl = admins[service]!;
      try {
        return { service, ok: true, detail: await withDeadline(DRIVERS[service].check(adminUrl, timeoutMs), 'checking', timeoutMs * 2) };
      } catch (err) {
        return { service, ok: false, detail: scrub(errorMessage(err), secretsOf(adminUrl)) };
      }
    }),
  );
}

/** host:port of a service URL, for messages (never its credentials). */
export function serverOf(adminUrl: string, defaultPort: number): string {
  try {
    const u = new URL(adminUrl);
    return `${u.hostname || u.searchParams.get('host') || 'localhost'}:${u.port || defaultPort}`;
  } catch {
    return '(an unreadable URL)';
  }
}

const DEFAULT_PORTS: Record<ServiceName, number> = { postgresql: 5432, mysql: 3306, redis: 6379 };

/** The error a caller sees: the service named, its server's address, no password. */
function failure(service: ServiceName, adminUrl: string, err: unknown, more: string[]): Error {
  const message = scrub(errorMessage(err), [...secretsOf(adminUrl), ...more]);
  if (err instanceof ServiceUnavailableError) return new (err.constructor as typeof ServiceUnavailableError)(scrub(err.message, [...secretsOf(adminUrl), ...more]));
  const code = (err as { code?: unknown } | null)?.code;
  if (code === FULL) return new ServiceCapacityError(`this runner's ${service} service at ${serverOf(adminUrl, DEFAULT_PORTS[service])} is full: ${message}`);
  if (code === UNREACHABLE) {
    return new ServiceUnavailableError(`this runner cannot reach its ${service} service at ${serverOf(adminUrl, DEFAULT_PORTS[service])}: ${message}`);
  }
  return new Error(`${service} service at ${serverOf(adminUrl, DEFAULT_PORTS[service])}: ${message}`);
}

function errorMessage(err: unknown): string {
  if (err instanceof AggregateError && err.errors.length > 0) return err.errors.map(errorMessage).join('; ');
  return err instanceof Error ? err.message || String(err.constructor.name) : String(err);
}

/** The admin URL and its password (as written and decoded): what no message may show. */
function secretsOf(adminUrl: string): string[] {
  const out = [adminUrl];
  try {
    const u = new URL(adminUrl);
    if (u.password) out.push(u.password, decodeURIComponent(u.password));
    const p = u.searchParams.get('password');
    if (p) out.push(p);
  } catch {
    // not a URL: the whole string is already in the list
  }
  return out;
}

/** Replaces every secret in `text` with `***`. */
export function scrub(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of [...secrets].filter((v) => v.length > 0).sort((a, b) => b.length - a.length)) out = out.split(s).join('***');
  return out;
}

/** Rejects (as unreachable) when `work` has not settled within `ms`; `work` goes on, bounded by its clients' own time-outs. */
function withDeadline<T>(work: Promise<T>, what: string, ms = SERVICE_DEADLINE_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(Object.assign(new Error(`${what}: no answer within ${Math.round(ms / 1000)} s`), { code: UNREACHABLE })),
      ms,
    );
    timer.unref();
  });
  work.catch(() => undefined); // a late failure after the deadline is nobody's
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer));
}

function once(fn: () => Promise<void>): () => Promise<void> {
  let done: Promise<void> | undefined;
  return () => (done ??= fn());
}
