/**
 * The history bench's databases (issue 39, part 1): a year of a busy installation, made once and
 * kept between bench runs, and a new installation of the same shape to measure beside it.
 *
 * Organizations, repositories, suites and webhooks go through the app layer (real keys, sealed
 * with the bench's own secret key); the history goes in as plain SQL, `INSERT … SELECT` over
 * `generate_series`, session by session in id order (so every index grows at its right edge),
 * with foreign-key triggers off (`session_replication_role = replica`) because every id is made
 * here and known to exist. Every figure is derived from the session id by integer hashing, so two
 * seeds of one shape hold the same rows.
 *
 * The shape of a year: SESSIONS builds over 366 days across 20 organizations × 10 repositories,
 * each with suites for `master` and 4 feature branches; per build FILES file results (1 in 9
 * builds fails one file, 1 file in 400 flaky), CASES JUnit cases, a JUnit file, 3 webhook
 * deliveries (received, start, stop), a commit-status attempt; 1 trigger in 10 skipped (no
 * session); an audit row per 20 builds.
 */
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { createOrg } from '../../src/app/orgs';
import { createRepo } from '../../src/app/repos';
import { createSuite } from '../../src/app/suites';
import { createWebhook } from '../../src/app/webhooks';
import type { Config } from '../../src/config';
import { migrate } from '../../src/db/migrate';
import { createPool, type Pool } from '../../src/db/pool';
import { TEST_PG_SERVER } from '../../test/support/db';

/** Bump when the seeded rows change shape: a kept database of another version is seeded again. */
export const SEED_VERSION = 2;

export const ORGS = 20;
export const REPOS_PER_ORG = 10;
export const BRANCHES = ['master', 'feature-1', 'feature-2', 'feature-3', 'feature-4'];
export const FILES = 20;
export const CASES = 50;
export const DAYS = 366;

/** The year: one million builds. */
export const YEAR_SESSIONS = 1_000_000;

/** What the bench keeps of a seeded database (its table `bench_seed`). */
export interface Seeded {
  name: string;
  url: string;
  sessions: number;
  /** The secret key its repositories' keys are sealed with (a bench-only key). */
  secretKey: Buffer;
  seededAt: Date;
  seconds: number;
}

const admin = async <T>(f: (c: Client) => Promise<T>): Promise<T> => {
  const c = new Client({ connectionString: `${TEST_PG_SERVER}/postgres` });
  await c.connect();
  try {
    return await f(c);
  } finally {
    await c.end();
  }
};

/** The kept database `name` when it holds a current seed of `sessions` builds; undefined otherwise. */
async function kept(name: string, sessions: number): Promise<Seeded | undefined> {
  const exists = await admin((c) => c.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]));
  if (exists.rowCount === 0) return undefined;
  const url = `${TEST_PG_SERVER}/${name}`;
  const c = new Client({ connectionString: url });
  await c.connect();
  try {
    const { rows } = await c.query<{ version: number; sessions: string; secret_key: string; seeded_at: Date; seconds: number; complete: boolean }>(
      'SELECT version, sessions, secret_key, seeded_at, seconds, complete FROM bench_seed',
    );
    const row = rows[0];
    if (!row || row.version !== SEED_VERSION || Number(row.sessions) !== sessions || !row.complete) return undefined;
    return { name, url, sessions, secretKey: Buffer.from(row.secret_key, 'base64'), seededAt: row.seeded_at, seconds: row.seconds };
  } catch {
    return undefined;
  } finally {
    await c.end();
  }
}

/**
 * The database `name` seeded with `sessions` builds: the kept one when its seed is current
 * (migrated to this checkout's schema: later migrations run over the history, as they would in
 * production), otherwise dropped and seeded anew.
 */
export async function seededDatabase(name: string, sessions: number, log: (line: string) => void): Promise<Seeded> {
  const found = await kept(name, sessions);
  if (found) {
    const pool = createPool(found.url, 2);
    try {
      await migrate(pool);
    } finally {
      await pool.end();
    }
    log(`history: reusing ${name} (${sessions.toLocaleString('en')} builds, seeded ${found.seededAt.toISOString()} in ${found.seconds.toFixed(0)} s)`);
    return found;
  }
  await admin(async (c) => {
    await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await c.query(`CREATE DATABASE ${name}`);
  });
  const url = `${TEST_PG_SERVER}/${name}`;
  const secretKey = randomBytes(32);
  const started = Date.now();
  const pool = createPool(url, 2);
  try {
    await migrate(pool);
    await pool.query(`CREATE TABLE bench_seed (version int NOT NULL, sessions bigint NOT NULL, secret_key text NOT NULL,
      seeded_at timestamptz NOT NULL DEFAULT now(), seconds double precision NOT NULL DEFAULT 0, complete boolean NOT NULL DEFAULT false)`);
    await pool.query('INSERT INTO bench_seed (version, sessions, secret_key) VALUES ($1, $2, $3)', [SEED_VERSION, sessions, secretKey.toString('base64')]);
    await seedSetup(pool, secretKey);
    await seedHistory(pool, sessions, log);
    const seconds = (Date.now() - started) / 1000;
    await pool.query('UPDATE bench_seed SET complete = true, seconds = $1', [seconds]);
    log(`history: seeded ${name} with ${sessions.toLocaleString('en')} builds in ${seconds.toFixed(0)} s`);
    return { name, url, sessions, secretKey, seededAt: new Date(started), seconds };
  } finally {
    await pool.end();
  }
}

/** A copy of a seeded database to run against (the bench adds triggers and deletes a day): `CREATE DATABASE … TEMPLATE`. */
export async function copyOf(seeded: Seeded, name: string): Promise<Seeded> {
  await admin(async (c) => {
    await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    // FILE_COPY: copies the files (after a checkpoint) instead of writing 20 GB through the WAL.
    await c.query(`CREATE DATABASE ${name} TEMPLATE ${seeded.name} STRATEGY FILE_COPY`);
  });
  return { ...seeded, name, url: `${TEST_PG_SERVER}/${name}` };
}

export async function dropDatabase(name: string): Promise<void> {
  await admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
}

/** Organizations, repositories (each with its own key and SSH key pair), suites and webhooks, through the app layer. */
async function seedSetup(pool: Pool, secretKey: Buffer): Promise<void> {
  const config = { secretKey, baseUrl: 'http://127.0.0.1', webhookAllow: [] } as unknown as Config;
  for (let o = 0; o < ORGS; o++) {
    const org = await createOrg(pool, { name: `org${o}`, email: `builds@org${o}.test` });
    await createWebhook({ pool, config }, org, { url: `http://127.0.0.1:9/org${o}` });
    for (let r = 0; r < REPOS_PER_ORG; r++) {
      const repo = await createRepo({ pool, config }, org, { name: `repo${r}`, scm: 'git', pull_url: `ssh://git@127.0.0.1:9/org${o}/repo${r}.git` });
      for (const branch of BRANCHES) await createSuite(pool, repo, { branch, test_pattern: 'spec/**/*_spec.rb', workers: 4 });
    }
  }
}

/**
 * Session s's dice, from PostgreSQL's integer hash (so that a repository's builds, `s % 200`,
 * do not all share one outcome): its status (< 88 passed, < 97 failed, < 99 error, else
 * stopped), the file a failed build fails, and whether its file `f` (0 … FILES − 1) flaked (failed, then passed).
 */
const ROLL = 'abs(hashint8(s)) % 100';
const FAILING_FILE = `(abs(hashint8(-s)) % ${FILES})`;
const flaky = (f: string) => `(abs(hashint8(s * ${FILES} + ${f})) % 400 = 0 AND NOT (${ROLL} BETWEEN 88 AND 96 AND ${f} = ${FAILING_FILE}))`;

/** Rows a statement writes at most (builds per chunk × rows per build), so progress shows and no statement runs for long. */
const CHUNK = 50_000;

/**
 * The history, chunk by chunk. `$1`, `$2`: the chunk's first and last session id; `$3` the
 * number of sessions (N). Session s is received at `start + (s / N) × 366 days`; its repository
 * is `s % 200`, its suite one of its repository's 5 by `(s / 200) % 10` (6 in 10 on master).
 */
const HISTORY: { table: string; sql: string }[] = [
  {
    table: 'ci_events',
    sql: `INSERT INTO ci_events (id, guid, repo_id, provider, decision, reason, trigger, received_at)
      SELECT s, md5('event' || s)::uuid, r.id, 'github', 'build', NULL,
             jsonb_build_object('branch', b.name, 'commit', md5('commit' || s) || left(md5('c' || s), 8), 'force', false),
             t.at
        FROM generate_series($1::bigint, $2::bigint) s
        CROSS JOIN LATERAL (SELECT now() - interval '${DAYS} days' + (s::float8 / $3) * interval '${DAYS} days' AS at) t
        JOIN bench_repos r ON r.n = s % ${ORGS * REPOS_PER_ORG}
        JOIN bench_branches b ON b.n = CASE WHEN (s / ${ORGS * REPOS_PER_ORG}) % 10 < 6 THEN 0 ELSE (s / ${ORGS * REPOS_PER_ORG}) % 10 - 5 END`,
  },
  {
    table: 'ci_events (skipped)',
    sql: `INSERT INTO ci_events (id, guid, repo_id, provider, decision, reason, trigger, received_at)
      SELECT $3 + s / 10, md5('skip' || s)::uuid, r.id, 'github', 'skip', 'branch is not built',
             jsonb_build_object('branch', 'wip-' || (s % 7), 'commit', md5('skip' || s) || left(md5('k' || s), 8)),
             now() - interval '${DAYS} days' + (s::float8 / $3) * interval '${DAYS} days'
        FROM generate_series($1::bigint, $2::bigint) s
        JOIN bench_repos r ON r.n = s % ${ORGS * REPOS_PER_ORG}
       WHERE s % 10 = 0`,
  },
  {
    table: 'sessions',
    sql: `INSERT INTO sessions (id, ci_event_id, suite_id, status, reason, branch, ref, head, commit_id, committers, counts, workers, timing,
                                created_at, updated_at, first_failure, report_token)
      SELECT s, s, su.id, st.status, CASE st.status WHEN 'error' THEN 'a worker was lost' WHEN 'stopped' THEN 'stopped by a newer build' END,
             b.name, 'refs/heads/' || b.name, md5('commit' || s) || left(md5('c' || s), 8), md5('commit' || s) || left(md5('c' || s), 8),
             jsonb_build_array('dev' || (s % 37) || '@org.test'),
             CASE st.status WHEN 'failed' THEN jsonb_build_object('passed', ${FILES - 1}, 'failed', 1, 'error', 0, 'skipped', 0)
                            ELSE jsonb_build_object('passed', ${FILES}, 'failed', 0, 'error', 0, 'skipped', 0) END,
             4,
             jsonb_build_object('queued_ms', 800 + s % 4000, 'setup_ms', 20000 + s % 30000, 'tests_ms', 180000 + (s * 7) % 240000, 'total_ms', 240000 + (s * 7) % 240000),
             t.at, t.at + interval '4 minutes' + ((s * 7) % 240) * interval '1 second',
             CASE WHEN st.status = 'failed' THEN 'spec/models/model_' || ${FAILING_FILE} || '_spec.rb' END,
             md5('report' || s)
        FROM generate_series($1::bigint, $2::bigint) s
        CROSS JOIN LATERAL (SELECT now() - interval '${DAYS} days' + (s::float8 / $3) * interval '${DAYS} days' AS at) t
        CROSS JOIN LATERAL (SELECT CASE WHEN ${ROLL} < 88 THEN 'passed' WHEN ${ROLL} < 97 THEN 'failed'
                                        WHEN ${ROLL} < 99 THEN 'error' ELSE 'stopped' END AS status) st
        JOIN bench_branches b ON b.n = CASE WHEN (s / ${ORGS * REPOS_PER_ORG}) % 10 < 6 THEN 0 ELSE (s / ${ORGS * REPOS_PER_ORG}) % 10 - 5 END
        JOIN bench_suites su ON su.repo_n = s % ${ORGS * REPOS_PER_ORG} AND su.branch_n = b.n`,
  },
  {
    table: 'test_results',
    sql: `INSERT INTO test_results (session_id, path, status, exit_code, duration_ms, output, finished_at, runner, attempts, flaky, started_at)
      SELECT s, 'spec/models/model_' || f || '_spec.rb',
             CASE WHEN ${ROLL} BETWEEN 88 AND 96 AND f = ${FAILING_FILE} THEN 'failed' ELSE 'passed' END,
             CASE WHEN ${ROLL} BETWEEN 88 AND 96 AND f = ${FAILING_FILE} THEN 1 ELSE 0 END,
             500 + (s * 13 + f * 101) % 30000,
             CASE WHEN ${ROLL} BETWEEN 88 AND 96 AND f = ${FAILING_FILE}
                  THEN 'Failures:\n  1) Model' || f || ' validates presence\n     expected true, got false\n     # ./spec/models/model_' || f || '_spec.rb:12' ELSE '' END,
             t.at + interval '1 minute', 'runner-' || (s + f) % 8,
             CASE WHEN ${flaky('f')} THEN 2 ELSE 1 END, ${flaky('f')},
             t.at + interval '30 seconds'
        FROM generate_series($1::bigint, $2::bigint) s
        CROSS JOIN LATERAL (SELECT now() - interval '${DAYS} days' + (s::float8 / $3) * interval '${DAYS} days' AS at) t
        CROSS JOIN generate_series(0, ${FILES - 1}) f
       ORDER BY s, f`,
  },
  {
    table: 'test_cases',
    sql: `INSERT INTO test_cases (session_id, file, classname, name, status, time, message, lane, test_file, failure_file, failure_line, flaky)
      SELECT s, 'reports/rspec-' || (k % 4) || '.xml', 'Model' || (k % ${FILES}), 'validates rule ' || (k / ${FILES}) || ' of model ' || (k % ${FILES}),
             CASE WHEN failed THEN 'failed' ELSE 'passed' END, ((s * 13 + k * 7) % 2000) / 1000.0,
             CASE WHEN failed THEN 'expected true, got false' END, k % 4,
             'spec/models/model_' || (k % ${FILES}) || '_spec.rb',
             CASE WHEN failed THEN 'spec/models/model_' || (k % ${FILES}) || '_spec.rb' END, CASE WHEN failed THEN 12 END,
             ${flaky('k')} AND k < ${FILES}
        FROM generate_series($1::bigint, $2::bigint) s
        CROSS JOIN generate_series(0, ${CASES - 1}) k
        CROSS JOIN LATERAL (SELECT ${ROLL} BETWEEN 88 AND 96 AND k = ${FAILING_FILE} AS failed) x
       ORDER BY s, k`,
  },
  {
    table: 'junit_files',
    sql: `INSERT INTO junit_files (session_id, file, cases, lane)
      SELECT s, 'reports/rspec-' || l || '.xml', (${CASES} - l + 3) / 4, l
        FROM generate_series($1::bigint, $2::bigint) s CROSS JOIN generate_series(0, 3) l`,
  },
  {
    table: 'deliveries',
    sql: `INSERT INTO deliveries (webhook_id, session_id, event, xid, attempt, status_code, outcome, duration_ms, request_body, payload, created_at, origin, url)
      SELECT w.id, s, e.event, md5('xid' || s || e.event), 1, 200, 'delivered', 20 + (s % 200), p.body::text, p.body,
             now() - interval '${DAYS} days' + (s::float8 / $3) * interval '${DAYS} days' + e.after, 'event', w.url
        FROM generate_series($1::bigint, $2::bigint) s
        JOIN bench_repos r ON r.n = s % ${ORGS * REPOS_PER_ORG}
        JOIN webhooks w ON w.org_id = r.org_id
        CROSS JOIN (VALUES ('received', interval '0'), ('start', interval '5 seconds'), ('stop', interval '5 minutes')) e(event, after)
        CROSS JOIN LATERAL (SELECT jsonb_build_object('event', e.event, 'session', s, 'status', 'passed', 'branch', 'master',
             'repository', jsonb_build_object('name', r.name, 'org', r.org_name), 'commit_id', md5('commit' || s),
             'counts', jsonb_build_object('passed', ${FILES}, 'failed', 0, 'error', 0, 'skipped', 0),
             'report_url', 'http://127.0.0.1/builds/' || s) AS body) p
       ORDER BY s`,
  },
  {
    table: 'commit_status_attempts',
    sql: `INSERT INTO commit_status_attempts (session_id, repo_id, provider, commit_id, context, state, url, attempt, status_code, outcome, duration_ms, created_at)
      SELECT s, r.id, 'github', md5('commit' || s) || left(md5('c' || s), 8), 'sluice/default', 'success',
             'http://127.0.0.1/builds/' || s, 1, 201, 'delivered', 80 + s % 300,
             now() - interval '${DAYS} days' + (s::float8 / $3) * interval '${DAYS} days' + interval '5 minutes'
        FROM generate_series($1::bigint, $2::bigint) s
        JOIN bench_repos r ON r.n = s % ${ORGS * REPOS_PER_ORG}`,
  },
  {
    table: 'audit_log',
    sql: `INSERT INTO audit_log (at, actor, ip, org_id, action, target, details)
      SELECT now() - interval '${DAYS} days' + (s::float8 / $3) * interval '${DAYS} days', 'admin', '127.0.0.1', r.org_id,
             'suite.update', 'suite ' || s % 1000, jsonb_build_object('workers', 4)
        FROM generate_series($1::bigint, $2::bigint) s
        JOIN bench_repos r ON r.n = s % ${ORGS * REPOS_PER_ORG}
       WHERE s % 20 = 0`,
  },
];

async function seedHistory(pool: Pool, sessions: number, log: (line: string) => void): Promise<void> {
  // Numbered lists of what seedSetup made, for the SQL above to join on (tables, not temporary
  // ones: the pool's connections share them).
  await pool.query(`CREATE TABLE bench_repos AS
      SELECT (row_number() OVER (ORDER BY r.id) - 1)::int AS n, r.id, r.org_id, r.name, o.name AS org_name FROM repos r JOIN orgs o ON o.id = r.org_id`);
  await pool.query(`CREATE TABLE bench_branches AS SELECT (ord - 1)::int AS n, name FROM unnest($1::text[]) WITH ORDINALITY AS b(name, ord)`, [BRANCHES]);
  await pool.query(`CREATE TABLE bench_suites AS
      SELECT su.id, r.n AS repo_n, b.n AS branch_n FROM suites su JOIN bench_repos r ON r.id = su.repo_id JOIN bench_branches b ON b.name = su.branch`);
  const client = await pool.connect();
  try {
    await client.query("SET session_replication_role = 'replica'");
    await client.query('SET synchronous_commit = off');
    for (let first = 1; first <= sessions; first += CHUNK) {
      const last = Math.min(sessions, first + CHUNK - 1);
      const t0 = Date.now();
      for (const step of HISTORY) await client.query(step.sql, step.sql.includes('$3') ? [first, last, sessions] : [first, last]);
      log(`history: seeded builds ${first.toLocaleString('en')}–${last.toLocaleString('en')} of ${sessions.toLocaleString('en')} (${((Date.now() - t0) / 1000).toFixed(0)} s)`);
    }
    await client.query("SET session_replication_role = 'origin'");
    for (const seq of ['ci_events_id_seq', 'sessions_id_seq']) {
      const table = seq.replace(/_id_seq$/, '');
      await client.query(`SELECT setval('${seq}', (SELECT max(id) FROM ${table}))`);
    }
  } finally {
    client.release();
  }
  await pool.query('DROP TABLE bench_repos, bench_branches, bench_suites');
  log('history: VACUUM ANALYZE');
  await pool.query('VACUUM ANALYZE');
}
