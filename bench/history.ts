/**
 * The history figures (issue 39, part 1): what a year of a busy installation costs each request.
 * Two Sluices side by side on the cluster's Temporal, each an API and a worker of its own: one
 * on a copy of the kept year (bench/history/seed.ts: 200 repositories, 1,000,000 builds,
 * 20,000,000 file results, 50,000,000 test cases, 3,000,000 deliveries), one on a new
 * installation of the same 200 repositories with 30,000 builds (NEW_SESSIONS). Each figure is
 * the year's beside the new installation's, from the same run (requests alternating):
 * - P1 ingest at 20 clients (triggers/s, acknowledgement p50/p99) and trigger → `received`;
 * - the builds list (`GET /api/v1/sessions`: first page, a page half a year back, a page near the
 *   oldest build, one repository's, one repository's failed builds) and the builds page;
 * - a build's view and page (newest, and from ten months back), its cases;
 * - a suite's insights (flaky and failing tests), its page, and the data layer's timing
 *   estimates and flaky list that a build asks for when it starts;
 * - retention's daily run over the year (one day's rows expire), how long its longest
 *   statement ran, and trigger acknowledgements while it runs;
 * - PostgreSQL's size per million builds.
 * Triggered builds never run (no runner polls these Sluices' queues, and their pull URLs lead
 * nowhere): only what a trigger and a page cost is measured here.
 */
import { Client, Connection } from '@temporalio/client';
import { unseal } from '../src/crypto/sealed';
import { recordedDurations } from '../src/db/testQueue';
import { listFlakyFiles } from '../src/db/flaky';
import { createPool, type Pool } from '../src/db/pool';
import type { Cluster } from '../test/support/cluster';
import { sluiceEnv, startRole, waitForHealthy, type RoleProcess } from '../test/support/processes';
import { startReceiver, type Receiver } from '../test/support/receiver';
import { eventually } from '../test/support/wait';
import type { Payload } from '../test/support/world';
import { CASES, copyOf, dropDatabase, FILES, seededDatabase, YEAR_SESSIONS, type Seeded } from './history/seed';
import { closedLoop, loopWhile, quantile } from './load';
import type { Row } from './table';

const DAY_MS = 86_400_000;

/**
 * The baseline: a new installation of the same 200 repositories with 30,000 builds, enough that
 * every page shows as much as the year's (a master suite's insights look at its last 30 builds;
 * a list page holds 50), so that the year's figures differ only by the history behind them.
 */
const NEW_SESSIONS = 30_000;

/** One Sluice of the comparison: its database, API and worker, and what the figures ask it for. */
interface Side {
  label: string;
  db: Seeded;
  pool: Pool;
  env: NodeJS.ProcessEnv;
  roles: RoleProcess[];
  receiver: Receiver;
  base: string;
  token: string;
  cookie: string;
  /** Each repository's id and trigger URL, in seed order. */
  repos: { id: number; url: string }[];
  newest: number;
  /** A build from about ten months back, and one half a year back (for `before`). */
  old: number;
  halfYear: number;
  oldest: number;
  /** A suite with history, its repository, and a build of it with a flaky file. */
  suite: { id: number; repo: number; flakyBuild: number };
  /** org3's webhook. */
  webhook: number;
}

export async function historyFigures(c: Cluster, log: (line: string) => void): Promise<Row[]> {
  const year = await seededDatabase('sluice_bench_history', YEAR_SESSIONS, log);
  const fresh = await seededDatabase('sluice_bench_history_new', NEW_SESSIONS, log);
  const size = await databaseSize(year);
  log('history: copying the year to run on (it gets triggers, and retention deletes a day)');
  const copyStarted = Date.now();
  const yearRun = await copyOf(year, 'sluice_bench_history_run');
  const freshRun = await copyOf(fresh, 'sluice_bench_history_new_run');
  log(`history: copied in ${((Date.now() - copyStarted) / 1000).toFixed(0)} s`);
  // One day's rows expire in the year: it spans 366 days up to when it was seeded.
  const retentionDays = 365 + Math.round((Date.now() - year.seededAt.getTime()) / DAY_MS);
  const connection = await Connection.connect({ address: c.temporal.address });
  const client = new Client({ connection });
  const sides: Side[] = [];
  try {
    sides.push(await startSide('30,000 builds', freshRun, c, retentionDays));
    sides.push(await startSide('a year', yearRun, c, retentionDays));
    const [n, y] = sides as [Side, Side];
    const rows: Row[] = [];
    rows.push(...(await requests(n, y, log)));
    rows.push(...(await ingest(n, y, log)));
    rows.push(...(await retention(y, client, log)));
    rows.push({
      name: 'PostgreSQL size per million builds',
      value: (size.bytes / year.sessions) * 1e6 / 2 ** 30,
      unit: 'GiB',
      baseline: null,
      note: `${(size.bytes / 2 ** 30).toFixed(1)} GiB for ${year.sessions.toLocaleString('en')} builds; largest: ${size.largest}; seeding took ${year.seconds.toFixed(0)} s`,
    });
    return rows;
  } finally {
    for (const s of sides) await stopSide(s);
    await connection.close();
    await dropDatabase(yearRun.name);
    await dropDatabase(freshRun.name);
  }
}

async function databaseSize(db: Seeded): Promise<{ bytes: number; largest: string }> {
  const pool = createPool(db.url, 1);
  try {
    const { rows } = await pool.query<{ bytes: string }>('SELECT pg_database_size(current_database()) AS bytes');
    const { rows: tables } = await pool.query<{ name: string; bytes: string }>(
      `SELECT relname AS name, pg_total_relation_size(oid) AS bytes FROM pg_class
        WHERE relkind = 'r' AND relnamespace = 'public'::regnamespace ORDER BY 2 DESC LIMIT 4`,
    );
    return {
      bytes: Number(rows[0]!.bytes),
      largest: tables.map((t) => `${t.name} ${(Number(t.bytes) / 2 ** 30).toFixed(1)} GiB`).join(', '),
    };
  } finally {
    await pool.end();
  }
}

async function startSide(label: string, db: Seeded, c: Cluster, retentionDays: number): Promise<Side> {
  const pool = createPool(db.url, 4);
  const receiver = await startReceiver();
  // Every organization's webhook goes to this side's receiver (the seed points them nowhere).
  await pool.query('UPDATE webhooks SET url = $1', [receiver.url]);
  const env = await sluiceEnv({
    databaseUrl: db.url,
    temporalAddress: c.temporal.address,
    env: {
      SLUICE_SECRET_KEY: db.secretKey.toString('base64'),
      SLUICE_WEBHOOK_ALLOW: '127.0.0.0/8',
      SLUICE_RETENTION_DAYS: String(retentionDays),
      SLUICE_DELIVERY_RETENTION_DAYS: String(retentionDays),
    },
  });
  const { SLUICE_ADMIN_TOKEN: _adminToken, ...backEnv } = env;
  const api = startRole('api', env);
  const worker = startRole('worker', backEnv);
  await Promise.all([waitForHealthy(env.SLUICE_BASE_URL!, 120_000), worker.waitForOutput(/sluice worker: serving /, 120_000)]);
  const base = env.SLUICE_BASE_URL!;
  const { rows: repos } = await pool.query<{ id: string; key_sealed: string }>('SELECT id, key_sealed FROM repos ORDER BY id');
  const ids = async (sql: string) => Number((await pool.query<{ id: string }>(sql)).rows[0]!.id);
  const flaky = await pool.query<{ session_id: string; suite_id: string; repo_id: string }>(
    `SELECT tr.session_id, s.suite_id, su.repo_id FROM test_results tr JOIN sessions s ON s.id = tr.session_id JOIN suites su ON su.id = s.suite_id
      WHERE tr.flaky AND s.branch = 'master' AND tr.session_id > (SELECT max(id) - 5000 FROM sessions) ORDER BY tr.session_id DESC LIMIT 1`,
  );
  const at = (daysAgo: number) =>
    ids(`SELECT coalesce((SELECT id FROM sessions WHERE created_at <= now() - interval '${daysAgo} days' ORDER BY created_at DESC LIMIT 1), (SELECT min(id) FROM sessions)) AS id`);
  const f = flaky.rows[0] ?? (await pool.query<{ session_id: string; suite_id: string; repo_id: string }>(
    'SELECT s.id AS session_id, s.suite_id, su.repo_id FROM sessions s JOIN suites su ON su.id = s.suite_id ORDER BY s.id DESC LIMIT 1',
  )).rows[0]!;
  return {
    label,
    db,
    pool,
    env,
    roles: [api, worker],
    receiver,
    base,
    token: env.SLUICE_ADMIN_TOKEN!,
    cookie: await signIn(base, env.SLUICE_ADMIN_TOKEN!),
    repos: repos.map((r) => ({ id: Number(r.id), url: `${base}/1/builds/${unseal(db.secretKey, r.key_sealed)}` })),
    newest: await ids('SELECT max(id) AS id FROM sessions'),
    old: await at(300),
    halfYear: await at(183),
    oldest: await ids('SELECT min(id) + 100 AS id FROM sessions'),
    suite: { id: Number(f.suite_id), repo: Number(f.repo_id), flakyBuild: Number(f.session_id) },
    webhook: await ids("SELECT w.id FROM webhooks w JOIN orgs o ON o.id = w.org_id WHERE o.name = 'org3'"),
  };
}

async function stopSide(s: Side): Promise<void> {
  await Promise.all(s.roles.map((r) => r.stop()));
  await s.receiver.close();
  await s.pool.end();
}

/** Signs in to the web pages with the admin token, as a browser would; the session cookie. */
async function signIn(base: string, token: string): Promise<string> {
  const form = await fetch(`${base}/sign-in`);
  const cookies = form.headers.getSetCookie().map((c) => c.split(';')[0]!);
  const csrf = /name="_csrf" value="([^"]+)"/.exec(await form.text())?.[1];
  if (!csrf) throw new Error('no sign-in form');
  const res = await fetch(`${base}/sign-in`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: cookies.join('; ') },
    body: new URLSearchParams({ _csrf: csrf, name: 'bench', token, next: '/' }).toString(),
  });
  if (res.status !== 303) throw new Error(`sign-in answered ${res.status}`);
  return [...cookies, ...res.headers.getSetCookie().map((c) => c.split(';')[0]!)].join('; ');
}

async function trigger(s: Side, i: number): Promise<string> {
  const repo = s.repos[i % s.repos.length]!;
  const res = await fetch(repo.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ branch: 'master', force: true }) });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`trigger answered ${res.status}: ${text}`);
  return (JSON.parse(text) as { guid: string }).guid;
}

// --- the trigger path -------------------------------------------------------------------------

async function ingest(n: Side, y: Side, log: (line: string) => void): Promise<Row[]> {
  const TOTAL = 300;
  const load = async (s: Side) => {
    const sent: { guid: string; at: number }[] = [];
    log(`history: ${TOTAL} triggers at 20 clients on ${s.label}`);
    const l = await closedLoop(TOTAL, 20, async (i) => {
      const at = Date.now();
      sent.push({ guid: await trigger(s, i), at });
    });
    return { load: l, lags: await receivedLags(s, sent) };
  };
  // Warm both (connections, prepared plans), then measure.
  await closedLoop(40, 20, (i) => trigger(n, i));
  await closedLoop(40, 20, (i) => trigger(y, i));
  const a = await load(n);
  const b = await load(y);
  const row = (name: string, unit: string, value: (x: typeof a) => number, target: number | null, better: 'lower' | 'higher' = 'lower'): Row => {
    const v = value(b);
    const base = value(a);
    const ratio = better === 'lower' ? v / base : base / v;
    return {
      name: `${name} (a year)`,
      value: v,
      unit,
      baseline: { name: n.label, value: base },
      ...(target !== null ? { target: { text: `≤ ${target} × baseline`, met: ratio <= target } } : {}),
      note: `${ratio.toFixed(2)} ×`,
    };
  };
  return [
    row('P1 ingest, 20 clients: triggers/s', '/s', (x) => x.load.rate, 1.5, 'higher'),
    row('P1 ingest, 20 clients: ack p50', 'ms', (x) => quantile(x.load.latencies, 0.5), 1.5),
    row('P1 ingest, 20 clients: ack p99', 'ms', (x) => quantile(x.load.latencies, 0.99), 1.5),
    row('trigger → `received`, 300 at 20 clients: p50', 'ms', (x) => quantile(x.lags, 0.5), 1.5),
    row('trigger → `received`, 300 at 20 clients: p99', 'ms', (x) => quantile(x.lags, 0.99), 1.5),
  ];
}

/** For each trigger sent, the time until its session's `received` reached the side's receiver. */
async function receivedLags(s: Side, sent: { guid: string; at: number }[]): Promise<number[]> {
  const sessionOf = await eventually(`the ${sent.length} triggers to be recorded`, async () => {
    const { rows } = await s.pool.query<{ guid: string; id: string }>(
      'SELECT e.guid, s.id FROM sessions s JOIN ci_events e ON e.id = s.ci_event_id WHERE e.guid = ANY($1)',
      [sent.map((x) => x.guid)],
    );
    return rows.length >= sent.length ? new Map(rows.map((r) => [r.guid, Number(r.id)])) : undefined;
  }, 300_000);
  const receivedAt = await eventually(`every \`received\` to reach the receiver`, async () => {
    const at = new Map<number, number>();
    for (const r of s.receiver.requests) {
      const p = r.json as Payload | undefined;
      if (p?.event === 'received' && !at.has(p.session)) at.set(p.session, r.at);
    }
    return sent.every((x) => at.has(sessionOf.get(x.guid)!)) ? at : undefined;
  }, 300_000);
  return sent.map((x) => receivedAt.get(sessionOf.get(x.guid)!)! - x.at);
}

// --- requests ---------------------------------------------------------------------------------

/** The medians of `times` calls of `a` and of `b`, alternating (so both see the machine alike), after two of each to warm up. */
async function medians(times: number, a: () => Promise<unknown>, b: () => Promise<unknown>): Promise<[number, number]> {
  const took: [number[], number[]] = [[], []];
  for (let i = 0; i < times + 2; i++) {
    for (const [k, call] of [a, b].entries()) {
      const t0 = performance.now();
      await call();
      if (i >= 2) took[k]!.push(performance.now() - t0);
    }
  }
  return [quantile(took[0], 0.5), quantile(took[1], 0.5)];
}

async function get(s: Side, path: string, web = false): Promise<void> {
  const res = await fetch(`${s.base}${path}`, { headers: web ? { cookie: s.cookie } : { authorization: `Bearer ${s.token}` } });
  const body = await res.text();
  if (res.status !== 200) throw new Error(`GET ${path} answered ${res.status}: ${body.slice(0, 300)}`);
}

async function requests(n: Side, y: Side, log: (line: string) => void): Promise<Row[]> {
  const figures: { name: string; of: (s: Side) => () => Promise<unknown> }[] = [
    { name: 'GET /api/v1/sessions, first page', of: (s) => () => get(s, '/api/v1/sessions') },
    { name: 'GET /api/v1/sessions, a page half a year back (`before`)', of: (s) => () => get(s, `/api/v1/sessions?before=${s.halfYear}`) },
    { name: 'GET /api/v1/sessions, the page of the oldest builds', of: (s) => () => get(s, `/api/v1/sessions?before=${s.oldest}`) },
    { name: 'GET /api/v1/sessions, one repository', of: (s) => () => get(s, `/api/v1/sessions?repo=${s.suite.repo}`) },
    { name: 'GET /api/v1/sessions, one repository’s failed builds', of: (s) => () => get(s, `/api/v1/sessions?repo=${s.suite.repo}&status=failed`) },
    { name: 'GET /api/v1/sessions, one organization', of: (s) => () => get(s, '/api/v1/sessions?org=org3') },
    { name: 'builds page', of: (s) => () => get(s, '/', true) },
    { name: 'GET /api/v1/sessions/:id, newest build', of: (s) => () => get(s, `/api/v1/sessions/${s.newest}`) },
    { name: 'GET /api/v1/sessions/:id, ten months back', of: (s) => () => get(s, `/api/v1/sessions/${s.old}`) },
    { name: 'GET /api/v1/sessions/:id/cases', of: (s) => () => get(s, `/api/v1/sessions/${s.old}/cases`) },
    { name: 'build page, newest build', of: (s) => () => get(s, `/builds/${s.newest}`, true) },
    { name: 'build page, ten months back', of: (s) => () => get(s, `/builds/${s.old}`, true) },
    { name: 'build page with a flaky file', of: (s) => () => get(s, `/builds/${s.suite.flakyBuild}`, true) },
    { name: 'a webhook’s delivery log, first page', of: (s) => () => get(s, `/api/v1/webhooks/${s.webhook}/deliveries`) },
    { name: 'an organization’s audit trail, first page', of: (s) => () => get(s, '/api/v1/orgs/org3/audit') },
    { name: 'suite insights (flaky, failing tests)', of: (s) => () => get(s, `/api/v1/repos/${s.suite.repo}/suites/${s.suite.id}/insights`) },
    { name: 'suite page', of: (s) => () => get(s, `/repos/${s.suite.repo}/suites/${s.suite.id}`, true) },
    {
      name: 'timing estimates of a suite’s files (data layer)',
      of: (s) => () => recordedDurations(s.pool, s.suite.id, 'default', Array.from({ length: FILES }, (_, f) => `spec/models/model_${f}_spec.rb`)),
    },
    { name: 'a build’s flaky files with their history (data layer)', of: (s) => () => listFlakyFiles(s.pool, s.suite.flakyBuild) },
  ];
  const rows: Row[] = [];
  for (const f of figures) {
    log(`history: ${f.name}`);
    const [base, value] = await medians(15, f.of(n), f.of(y));
    rows.push({
      name: `${f.name} (a year)`,
      value,
      unit: 'ms',
      baseline: { name: n.label, value: base },
      target: { text: '≤ 1.5 × baseline', met: value <= 1.5 * base },
      note: `${(value / base).toFixed(2)} ×, medians of 15 calls, alternating`,
    });
  }
  return rows;
}

// --- retention --------------------------------------------------------------------------------

async function retention(y: Side, client: Client, log: (line: string) => void): Promise<Row[]> {
  log(`history: retention's daily run over the year (SLUICE_RETENTION_DAYS ${y.env.SLUICE_RETENTION_DAYS}: a day expires)`);
  const before = await closedLoop(300, 20, (i) => trigger(y, i));
  // The longest statement the cleanup ran, as pg_stat_activity shows it, sampled every 50 ms.
  let longest = 0;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      const { rows } = await y.pool.query<{ ms: number }>(
        `SELECT coalesce(max(extract(epoch FROM clock_timestamp() - query_start) * 1000), 0)::float8 AS ms FROM pg_stat_activity
          WHERE datname = current_database() AND state = 'active' AND query LIKE 'DELETE FROM %'`,
      );
      longest = Math.max(longest, rows[0]!.ms);
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  const started = Date.now();
  const run = client.workflow.execute('cleanupWorkflow', { taskQueue: y.env.SLUICE_TASK_QUEUE!, workflowId: `bench-cleanup-${started}`, args: [] });
  // Triggers while it runs, 20 clients, until it ends (at most 20,000).
  let done = false;
  const during = loopWhile(20_000, 20, () => !done, (i) => trigger(y, i));
  const result = (await run) as { sessions: number; ciEvents: number; deliveries: number };
  const took = (Date.now() - started) / 1000;
  done = true;
  sampling = false;
  const answered = (await during).latencies;
  await sampler;
  return [
    {
      name: 'retention’s daily run over a year (one day expires)',
      value: took,
      unit: 's',
      baseline: null,
      target: { text: '< 5 min', met: took < 300 },
      note: `deleted ${result.sessions.toLocaleString('en')} builds (each with ${FILES} file results, ${CASES} cases and more), ${result.ciEvents.toLocaleString('en')} triggers, ${result.deliveries.toLocaleString('en')} delivery attempts`,
    },
    {
      name: 'retention: its longest statement',
      value: longest,
      unit: 'ms',
      baseline: null,
      target: { text: '< 1 s', met: longest < 1000 },
      note: 'sampled from pg_stat_activity every 50 ms',
    },
    {
      name: 'trigger ack p99 while retention runs (a year)',
      value: quantile(answered, 0.99),
      unit: 'ms',
      baseline: { name: 'before it runs', value: quantile(before.latencies, 0.99) },
      target: { text: '≤ 1.5 × before', met: quantile(answered, 0.99) <= 1.5 * quantile(before.latencies, 0.99) },
      note: `${answered.length} triggers while it ran`,
    },
  ];
}
