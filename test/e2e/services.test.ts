/**
 * Services a build asks for (issue 21), end to end on this machine's real PostgreSQL, MariaDB
 * and Redis: two workers of one build at once, each with a database of its own that the other
 * cannot open, made before `worker_setup` and gone after the build; a service the runner does
 * not have ends the build in `error`, naming it.
 */
import { createConnection } from 'mysql2/promise';
import { Client } from 'pg';
import { reportPath } from '../support/reports';
import { script, World } from '../support/world';

const ADMINS = {
  postgresql: 'postgres://postgres@127.0.0.1:5432/postgres',
  mysql: 'mysql://root@127.0.0.1:3306',
  redis: 'redis://127.0.0.1:6379',
};

type Hook = { name: string; worker: number | null; status: string; output_tail: string };

describe('services: postgresql, mysql and redis, one of each per worker', () => {
  let w: World;
  beforeAll(async () => {
    // As a runner with nothing configured runs them: each worker's tests in bubblewrap, as the build user.
    w = await World.start({ services: ADMINS, isolation: 'default' });
  });
  afterAll(() => w?.stop());

  it('gives each of two workers its own databases, which the other cannot open, and drops them after', async () => {
    // worker_setup fills each worker's databases with its own number; each test shows what its worker's hold.
    const setup = [
      'psql -v ON_ERROR_STOP=1 -qAt -c "create table mine (w int); insert into mine values ($SLUICE_WORKER_ID)"',
      'mysql -u"$MYSQL_USER" "$MYSQL_DATABASE" -e "create table mine (w int); insert into mine values ($SLUICE_WORKER_ID)"',
      'redis-cli -u "$REDIS_URL" set mine "$SLUICE_WORKER_ID" >/dev/null',
      'echo "pg=$PGDATABASE mysql=$MYSQL_DATABASE redis=${REDIS_URL##*/} url=$DATABASE_URL"',
    ].join(' && ');
    const probe = script(
      [
        'set -e',
        'echo "worker $SLUICE_WORKER_ID"',
        'echo "pg rows $(psql -qAt -c "select string_agg(w::text, \',\') from mine")"',
        'echo "mysql rows $(mysql -u"$MYSQL_USER" -N "$MYSQL_DATABASE" -e "select group_concat(w) from mine")"',
        'echo "redis $(redis-cli -u "$REDIS_URL" get mine)"',
        'echo "pg superuser $(psql -qAt -c "select rolsuper from pg_roles where rolname = current_user")"',
        // The other worker's database, by its name: refused.
        'other=$((3 - SLUICE_WORKER_ID))',
        'psql -d "${PGDATABASE%_*}_$other" -qAt -c "select 1" >/dev/null 2>&1 && echo "pg other opened" || echo "pg other refused"',
        'mysql -u"$MYSQL_USER" -N "${MYSQL_DATABASE%_*}_$other" -e "select 1" >/dev/null 2>&1 && echo "mysql other opened" || echo "mysql other refused"',
        'sleep 1',
      ].join('\n'),
    );
    const repo = await w.makeRepo(
      { 'a_test.sh': probe, 'b_test.sh': probe },
      { suite: { branch: 'master', test_pattern: '*_test.sh', workers: 2, services: ['postgresql', 'mysql', 'redis'], hooks: { worker_setup: setup } } },
    );
    const { session } = await w.build(repo);
    const stop = (await w.eventsOf(session)).at(-1)!;
    const view = (await w.session(session)) as Awaited<ReturnType<World['session']>> & { hooks: Hook[] };
    expect({ status: stop.status, reason: view.reason }).toEqual({ status: 'passed', reason: null });
    expect((stop.timing as Record<string, number>).services_setup).toBeGreaterThan(1.7e9);

    // Each worker's setup saw databases of its own.
    const made = view.hooks.filter((h) => h.name === 'worker_setup').map((h) => /pg=(\S+) mysql=(\S+) redis=(\d+) url=(\S+)/.exec(h.output_tail));
    expect(made).toHaveLength(2);
    const [one, two] = made.map((m) => m!.slice(1));
    expect(one![0]).not.toBe(two![0]);
    expect(one![1]).not.toBe(two![1]);
    expect(one![2]).not.toBe(two![2]);
    expect(one![3]).toMatch(/^postgres(ql)?:\/\/sluice_[^:]+:[^@]+@127\.0\.0\.1:5432\/sluice_/);

    // Each test saw only its own worker's rows, as no superuser, and the other's databases refused it.
    const report = (await (await fetch(`${w.sluice.url}${await reportPath(w.sluice.pool, session)}`, { headers: { accept: 'application/json' } })).json()) as {
      tests: Array<{ output: string }>;
    };
    expect(report.tests).toHaveLength(2);
    for (const test of report.tests) {
      const id = /worker (\d)/.exec(test.output)![1];
      expect(test.output).toContain(`pg rows ${id}\n`);
      expect(test.output).toContain(`mysql rows ${id}\n`);
      expect(test.output).toContain(`redis ${id}\n`);
      expect(test.output).toContain('pg superuser f');
      expect(test.output).toContain('pg other refused');
      expect(test.output).toContain('mysql other refused');
    }
    // Passwords are masked in what is stored.
    expect(one![3]).toContain(':****@');

    // After the build: every database and user made for it is gone.
    const pg = new Client({ connectionString: ADMINS.postgresql });
    await pg.connect();
    try {
      const dbs = await pg.query('SELECT datname FROM pg_database WHERE datname = ANY($1)', [[one![0], two![0]]]);
      const roles = await pg.query('SELECT rolname FROM pg_roles WHERE rolname = ANY($1)', [[one![0], two![0]]]);
      expect([...dbs.rows, ...roles.rows]).toEqual([]);
    } finally {
      await pg.end();
    }
    const my = await createConnection({ host: '127.0.0.1', port: 3306, user: 'root' });
    try {
      const [rows] = await my.query('SELECT schema_name FROM information_schema.schemata WHERE schema_name IN (?, ?)', [one![1], two![1]]);
      expect(rows).toEqual([]);
    } finally {
      await my.end();
    }
  });
});

describe('a service the runner does not have', () => {
  let w: World;
  beforeAll(async () => {
    w = await World.start({ services: { postgresql: ADMINS.postgresql }, isolation: 'default' });
  });
  afterAll(() => w?.stop());

  it('ends the build in error, naming it, before any test runs; what was made is dropped', async () => {
    const repo = await w.makeRepo({ 'a_test.sh': script('echo ran') }, { suite: { branch: 'master', test_pattern: '*_test.sh', services: ['postgresql', 'mysql'] } });
    const { session } = await w.build(repo);
    const events = await w.eventsOf(session);
    expect(events.map((e) => e.event)).toEqual(['received', 'start', 'stop']);
    const view = await w.session(session);
    expect(view.status).toBe('error');
    expect(view.reason).toMatch(/mysql/);
    expect(view.reason).toMatch(/SLUICE_SERVICE_MYSQL_URL/);
    const pg = new Client({ connectionString: ADMINS.postgresql });
    await pg.connect();
    try {
      const left = await pg.query("SELECT datname FROM pg_database WHERE datname LIKE 'sluice\\_%\\_' || $1 || '\\_%'", [String(session)]);
      expect(left.rows).toEqual([]);
    } finally {
      await pg.end();
    }
  });
});
