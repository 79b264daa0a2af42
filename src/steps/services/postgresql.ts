/**
 * The `postgresql` service: per worker, a database and a role that owns it, on the runner's
 * PostgreSQL server (SLUICE_SERVICE_POSTGRESQL_URL: a superuser, or a role with CREATEDB and
 * CREATEROLE). The role logs in with a random password and is nothing more: NOSUPERUSER,
 * NOCREATEDB, NOCREATEROLE, NOREPLICATION, NOBYPASSRLS. CONNECT on each database made here is
 * revoked from PUBLIC, so no worker's role can connect to another worker's database.
 *
 * These statements administer the service's server, never Sluice's own database (whose SQL is
 * in src/db): each goes through `run` below.
 */
import { Client, escapeIdentifier, escapeLiteral } from 'pg';
import { UNREACHABLE, type MadeService, type ServiceDriver } from './driver';

const CONNECT_TIMEOUT_MS = 10_000;
const STATEMENT_TIMEOUT_MS = 60_000;

/** One short-lived admin connection for `work`, closed after it whatever happens. */
async function withAdmin<T>(adminUrl: string, work: (client: Client) => Promise<T>, connectTimeoutMs = CONNECT_TIMEOUT_MS): Promise<T> {
  const client = new Client({
    connectionString: adminUrl,
    connectionTimeoutMillis: connectTimeoutMs,
    query_timeout: STATEMENT_TIMEOUT_MS,
    statement_timeout: STATEMENT_TIMEOUT_MS,
    lock_timeout: STATEMENT_TIMEOUT_MS,
    application_name: 'sluice-services',
  });
  client.on('error', () => undefined); // a connection lost between statements fails the statement; no unhandled event
  try {
    await client.connect();
  } catch (err) {
    await client.end().catch(() => undefined);
    // A server that answered with an SQLSTATE (wrong password, no such database) was reached.
    const answered = /^[0-9A-Z]{5}$/.test(String((err as { code?: unknown }).code));
    if (answered) throw new Error(`its admin URL cannot log in: ${(err as Error).message}`, { cause: err });
    throw Object.assign(new Error(`cannot connect: ${(err as Error).message}`, { cause: err }), { code: UNREACHABLE });
  }
  try {
    return await work(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Runs one statement on the service's server (not on Sluice's database). */
async function run(client: Client, sql: string, values?: unknown[]): Promise<Record<string, unknown>[]> {
  // eslint-disable-next-line no-restricted-syntax -- administers the service's server builds use, not Sluice's database
  const result = await client.query(sql, values);
  return result.rows as Record<string, unknown>[];
}

/** Drops `name`'s database and role: its sessions ended first, so nothing holds them. */
async function dropOne(client: Client, name: string): Promise<void> {
  // Needs a superuser (or pg_signal_backend); without, DROP DATABASE ... WITH (FORCE) still ends the database's own sessions.
  await run(client, 'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1 OR datname = $1', [name]).catch(() => undefined);
  await run(client, `DROP DATABASE IF EXISTS ${escapeIdentifier(name)} WITH (FORCE)`);
  await run(client, `DROP ROLE IF EXISTS ${escapeIdentifier(name)}`);
}

function serverOf(adminUrl: string): { host: string; port: string; sslmode?: string } {
  const u = new URL(adminUrl);
  const host = (u.hostname.replace(/^\[(.*)\]$/, '$1') || u.searchParams.get('host')) ?? 'localhost';
  return { host, port: u.port || '5432', sslmode: u.searchParams.get('sslmode') ?? undefined };
}

export const postgresqlDriver: ServiceDriver = {
  async make(adminUrl, name, password): Promise<MadeService> {
    await withAdmin(adminUrl, async (client) => {
      await dropOne(client, name); // a lane run again: what its first run made goes first
      const role = escapeIdentifier(name);
      await run(
        client,
        `CREATE ROLE ${role} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS INHERIT PASSWORD ${escapeLiteral(password)}`,
      );
      await run(client, `CREATE DATABASE ${role} OWNER ${role}`);
      await run(client, `REVOKE CONNECT, TEMPORARY ON DATABASE ${role} FROM PUBLIC`);
    });
    const { host, port, sslmode } = serverOf(adminUrl);
    const hostInUrl = host.includes(':') ? `[${host}]` : host.startsWith('/') ? encodeURIComponent(host) : host;
    const url = `postgres://${name}:${encodeURIComponent(password)}@${hostInUrl}:${port}/${name}${sslmode ? `?sslmode=${encodeURIComponent(sslmode)}` : ''}`;
    const env: Record<string, string> = {
      DATABASE_URL: url,
      PGHOST: host,
      PGPORT: port,
      PGUSER: name,
      PGPASSWORD: password,
      PGDATABASE: name,
    };
    if (sslmode) env.PGSSLMODE = sslmode;
    return { env, drop: () => withAdmin(adminUrl, (client) => dropOne(client, name)) };
  },

  async list(adminUrl, prefix) {
    return withAdmin(adminUrl, async (client) => {
      const rows = await run(
        client,
        `SELECT datname AS name FROM pg_database WHERE left(datname, length($1)) = $1
         UNION SELECT rolname FROM pg_roles WHERE left(rolname, length($1)) = $1`,
        [prefix],
      );
      return rows.map((r) => String(r.name));
    });
  },

  async drop(adminUrl, names) {
    if (names.length === 0) return;
    await withAdmin(adminUrl, async (client) => {
      for (const name of names) await dropOne(client, name);
    });
  },

  async check(adminUrl, timeoutMs) {
    return withAdmin(
      adminUrl,
      async (client) => {
        const [me] = await run(client, 'SELECT rolsuper, rolcreatedb, rolcreaterole FROM pg_roles WHERE rolname = current_user');
        if (!me?.rolsuper && !(me?.rolcreatedb && me?.rolcreaterole)) throw new Error('its user may not create databases and roles');
        const { host, port } = serverOf(adminUrl);
        return `${host}:${port}`;
      },
      timeoutMs,
    );
  },
};
