/**
 * The `mysql` service (MySQL or MariaDB): per worker, a database and a user `'<name>'@'%'` with
 * a random password and every privilege on that database only, on the runner's server
 * (SLUICE_SERVICE_MYSQL_URL: a user with CREATE USER, and ALL with GRANT OPTION on the
 * databases it makes; PROCESS and CONNECTION ADMIN let it end a dropped user's connections).
 *
 * These statements administer the service's server, never Sluice's own database (whose SQL is
 * in src/db): each goes through `run` below.
 */
import { createConnection, type Connection } from 'mysql2/promise';
import { UNREACHABLE, type MadeService, type ServiceDriver } from './driver';

const CONNECT_TIMEOUT_MS = 10_000;
const STATEMENT_TIMEOUT_MS = 60_000;

function serverOf(adminUrl: string) {
  const u = new URL(adminUrl);
  return {
    host: u.hostname.replace(/^\[(.*)\]$/, '$1') || 'localhost',
    port: Number(u.port || 3306),
    user: decodeURIComponent(u.username) || 'root',
    password: decodeURIComponent(u.password),
    ssl: u.searchParams.get('ssl') === 'true' || u.searchParams.has('ssl-mode') ? {} : undefined,
  };
}

/** One short-lived admin connection for `work`, closed after it whatever happens. */
async function withAdmin<T>(adminUrl: string, work: (conn: Connection) => Promise<T>, connectTimeoutMs = CONNECT_TIMEOUT_MS): Promise<T> {
  const { host, port, user, password, ssl } = serverOf(adminUrl);
  let conn: Connection;
  try {
    conn = await createConnection({ host, port, user, password, ssl, connectTimeout: connectTimeoutMs, multipleStatements: false });
  } catch (err) {
    const why = (err as Error).message || String((err as { code?: unknown }).code);
    // A server that answered with an SQL state (access denied) was reached.
    if ((err as { sqlState?: unknown }).sqlState) throw new Error(`its admin URL cannot log in: ${why}`, { cause: err });
    throw Object.assign(new Error(`cannot connect: ${why}`, { cause: err }), { code: UNREACHABLE });
  }
  conn.on('error', () => undefined); // a connection lost between statements fails the statement; no unhandled event
  try {
    return await work(conn);
  } finally {
    await conn.end().catch(() => conn.destroy());
  }
}

/** Runs one statement on the service's server (not on Sluice's database); `?` placeholders are escaped by the client. */
async function run(conn: Connection, sql: string, values: unknown[] = []): Promise<Record<string, unknown>[]> {
  // eslint-disable-next-line no-restricted-syntax -- administers the service's server builds use, not Sluice's database
  const [rows] = await conn.query({ sql, values, timeout: STATEMENT_TIMEOUT_MS });
  return Array.isArray(rows) ? (rows as Record<string, unknown>[]) : [];
}

/** `name` as a database in GRANT, where `_` and `%` are wildcards unless escaped. */
const grantDatabase = (name: string) => `\`${name.replace(/[_%]/g, '\\$&')}\``;

/** Drops `name`'s database and user, its connections ended first (a dropped user's sessions would go on). */
async function dropOne(conn: Connection, name: string): Promise<void> {
  const threads = await run(conn, 'SELECT ID AS id FROM information_schema.PROCESSLIST WHERE USER = ?', [name]);
  for (const t of threads) await run(conn, 'KILL CONNECTION ?', [Number(t.id)]).catch(() => undefined); // gone meanwhile
  await run(conn, `DROP DATABASE IF EXISTS \`${name}\``);
  await run(conn, `DROP USER IF EXISTS ?@'%'`, [name]);
}

export const mysqlDriver: ServiceDriver = {
  async make(adminUrl, name, password): Promise<MadeService> {
    await withAdmin(adminUrl, async (conn) => {
      await dropOne(conn, name); // a lane run again: what its first run made goes first
      await run(conn, `CREATE DATABASE \`${name}\``);
      await run(conn, `CREATE USER ?@'%' IDENTIFIED BY ?`, [name, password]);
      await run(conn, `GRANT ALL PRIVILEGES ON ${grantDatabase(name)}.* TO ?@'%'`, [name]);
    });
    const { host, port } = serverOf(adminUrl);
    const hostInUrl = host.includes(':') ? `[${host}]` : host;
    return {
      env: {
        MYSQL_URL: `mysql://${name}:${encodeURIComponent(password)}@${hostInUrl}:${port}/${name}`,
        MYSQL_HOST: host,
        MYSQL_TCP_PORT: String(port),
        MYSQL_USER: name,
        MYSQL_PWD: password,
        MYSQL_DATABASE: name,
      },
      drop: () => withAdmin(adminUrl, (conn) => dropOne(conn, name)),
    };
  },

  async list(adminUrl, prefix) {
    return withAdmin(adminUrl, async (conn) => {
      const users = await run(conn, 'SELECT User AS name FROM mysql.user WHERE LEFT(User, CHAR_LENGTH(?)) = ?', [prefix, prefix]);
      const dbs = await run(conn, 'SELECT SCHEMA_NAME AS name FROM information_schema.SCHEMATA WHERE LEFT(SCHEMA_NAME, CHAR_LENGTH(?)) = ?', [prefix, prefix]);
      return [...new Set([...users, ...dbs].map((r) => String(r.name)))];
    });
  },

  async drop(adminUrl, names) {
    if (names.length === 0) return;
    await withAdmin(adminUrl, async (conn) => {
      for (const name of names) await dropOne(conn, name);
    });
  },

  async check(adminUrl, timeoutMs) {
    return withAdmin(
      adminUrl,
      async (conn) => {
        const [row] = await run(conn, 'SELECT VERSION() AS version');
        const { host, port } = serverOf(adminUrl);
        return `${host}:${port} (${String(row?.version ?? '?')})`;
      },
      timeoutMs,
    );
  },
};
