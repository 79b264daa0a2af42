// Thousands of random and mutated payloads at every trigger path (the generic one and each
// provider's), with random content types, headers and `?branch=`, over real HTTP against a
// real PostgreSQL. Whatever arrives: the answer is one of 200/400/404/413/415/422 with a JSON
// body (or the spec's plain `DROPPED`), never a 500; nothing is stored or enqueued unless the
// answer is 200 with a guid; and every session that was queued names a branch and a commit
// git can take safely.
//
// Seeded (SLUICE_FUZZ_SEED to replay a run) and bounded in count (SLUICE_FUZZ_COUNT) and time.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import examples from '@octokit/webhooks-examples';
import { branchNameProblem } from '../../src/core/names';
import { providers } from '../../src/providers';
import { countRows, seedRepo, startApiHarness, type ApiHarness, type Response } from '../support/apiApp';

const SEED = Number(process.env.SLUICE_FUZZ_SEED ?? 20261122);
const COUNT = Number(process.env.SLUICE_FUZZ_COUNT ?? 3000);
const TIME_BUDGET_MS = 90_000;

jest.setTimeout(TIME_BUDGET_MS + 60_000);

// mulberry32: small, seeded, so a failing run replays.
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const random = rng(SEED);
const chance = (p: number) => random() < p;
const int = (n: number) => Math.floor(random() * n);
const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)]!;

// ---- seeds: real payloads of every provider, and generic ones ----

type Seed = { headers: Record<string, string>; body: unknown };

const FIXTURES = join(__dirname, '../fixtures/providers');

const EVENT_HEADERS: Record<string, { header?: string; events: string[]; of: (fixture: string) => string | undefined }> = {
  github: { header: 'x-github-event', events: ['push', 'create', 'delete', 'pull_request', 'ping', 'issues', ''], of: () => undefined },
  gitlab: {
    header: 'x-gitlab-event',
    events: ['Push Hook', 'Tag Push Hook', 'Merge Request Hook', 'System Hook', 'Note Hook'],
    of: (f) => (f.startsWith('tag-push') ? 'Tag Push Hook' : f.startsWith('push') ? 'Push Hook' : 'Merge Request Hook'),
  },
  bitbucket: {
    header: 'x-event-key',
    events: ['repo:push', 'pullrequest:created', 'pullrequest:updated', 'pullrequest:fulfilled', 'pullrequest:rejected', 'repo:fork', 'repo:refs_changed'],
    of: (f) => (f.startsWith('repo-push') ? 'repo:push' : `pullrequest:${f.split('-')[1]}`),
  },
  stash: {
    header: 'x-event-key',
    events: ['repo:refs_changed', 'pr:opened', 'pr:from_ref_updated', 'pr:merged', 'pr:declined', 'diagnostics:ping', 'pr:comment:added'],
    of: (f) =>
      f.startsWith('repo-refs-changed')
        ? 'repo:refs_changed'
        : f === 'diagnostics-ping'
          ? 'diagnostics:ping'
          : f.startsWith('legacy')
            ? undefined
            : `pr:${f.slice(3).replace(/-/g, '_')}`,
  },
  gitea: {
    header: 'x-gitea-event',
    events: ['push', 'create', 'delete', 'pull_request', 'issues'],
    of: (f) => (f.startsWith('push') ? 'push' : f.startsWith('create') ? 'create' : f.startsWith('delete') ? 'delete' : 'pull_request'),
  },
  gogs: {
    header: 'x-gogs-event',
    events: ['push', 'create', 'delete', 'pull_request', 'release'],
    of: (f) => (f.startsWith('push') ? 'push' : f.startsWith('create') ? 'create' : f.startsWith('delete') ? 'delete' : 'pull_request'),
  },
  gerrit: { events: [], of: () => undefined },
};

function providerSeeds(provider: string): Seed[] {
  const meta = EVENT_HEADERS[provider]!;
  if (provider === 'github') {
    return examples
      .filter((d) => ['push', 'create', 'delete', 'pull_request', 'ping'].includes(d.name))
      .flatMap((d) => (d.examples as unknown[]).map((body) => ({ headers: { 'x-github-event': d.name }, body })));
  }
  const dir = join(FIXTURES, provider);
  return readdirSync(dir).map((file) => {
    const name = file.replace(/\.json$/, '');
    const event = meta.of(name);
    return { headers: meta.header && event ? { [meta.header]: event } : {}, body: JSON.parse(readFileSync(join(dir, file), 'utf8')) as unknown };
  });
}

const GENERIC_SEEDS: Seed[] = [
  {},
  { branch: 'master' },
  { source: 'sluice', op: 'push', force: true, queue_position: 'head', scm: 'git', head: 'abc123', branch: 'dev', ref: 'refs/pull/1/head' },
  { branch: 'main', profile_name: 'nightly', refspec: ['+refs/pull/*:refs/remotes/pr/*'], env: { A: 'b' }, queue: 'q1' },
  { branch: 'dev', changeset: { kind: 'github', id: '42', url: 'https://example.com/pr/42' } },
  { source: 'sluice', op: 'push', force: false, branch: 'default', ref: 'default' },
].map((body) => ({ headers: {}, body }));

const PATHS = ['builds', ...Object.keys(providers)];
const SEEDS: Record<string, Seed[]> = Object.fromEntries(PATHS.map((p) => [p, p === 'builds' ? GENERIC_SEEDS : providerSeeds(p)]));

// ---- mutations ----

const NASTY_STRINGS = [
  '',
  ' ',
  '-x',
  '--upload-pack=touch /tmp/pwned',
  'a..b',
  'refs/heads/../../etc',
  'refs/heads/a\u0000b',
  'a\u0001b',
  '\ud800',
  'x\udc00y',
  '\u202e',
  'refs/tags/',
  'refs/heads/',
  'refs/heads/master',
  'refs/tags/v1',
  'master',
  'dev',
  '0000000000000000000000000000000000000000',
  'deadbeefdeadbeefdeadbeefdeadbeefdeadbeef',
  'constructor',
  '__proto__',
  'javascript:alert(1)',
  '[no ci]',
  '@wip',
  'é'.repeat(200),
  'x'.repeat(300),
  'x'.repeat(70_000),
];

function nastyValue(depth = 0): unknown {
  switch (int(9)) {
    case 0:
      return null;
    case 1:
      return pick([0, -1, 1.5, 1e308, Number.MAX_SAFE_INTEGER]);
    case 2:
      return chance(0.5);
    case 3:
    case 4:
      return pick(NASTY_STRINGS);
    case 5:
      return randomString(int(40));
    case 6:
      return depth > 3 ? [] : Array.from({ length: int(4) }, () => nastyValue(depth + 1));
    case 7:
      return depth > 3 ? {} : Object.fromEntries(Array.from({ length: int(4) }, () => [pick(['ref', 'branch', 'type', 'action', '__proto__', randomString(5)]), nastyValue(depth + 1)]));
    default:
      return undefined;
  }
}

function randomString(n: number): string {
  let s = '';
  for (let i = 0; i < n; i++) {
    const r = random();
    s += r < 0.6 ? String.fromCharCode(0x20 + int(95)) : r < 0.8 ? String.fromCharCode(int(0x20)) : String.fromCharCode(int(0xffff));
  }
  return s;
}

function mutate(value: unknown, rate: number, depth = 0): unknown {
  if (chance(rate / 4)) return nastyValue();
  if (Array.isArray(value)) {
    const out = value.map((v) => mutate(v, rate, depth + 1));
    if (chance(rate)) out.push(nastyValue());
    if (chance(rate)) out.splice(int(out.length + 1), 1);
    return out;
  }
  if (typeof value === 'object' && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      if (chance(rate / 2)) continue;
      out[k] = depth > 12 ? v : mutate(v, rate, depth + 1);
    }
    if (chance(rate)) out[pick(['ref', 'branch', 'head', 'after', 'type', 'action', 'payload', 'object_kind', 'changes', 'refChanges'])] = nastyValue();
    return out;
  }
  if (typeof value === 'string' && chance(rate)) return pick([value + pick(['..', '\n', ' ', '~', '.lock', '@{', '/', '\u0000']), pick(NASTY_STRINGS)]);
  if (typeof value === 'number' && chance(rate)) return String(value);
  return value;
}

// ---- requests ----

const CONTENT_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'application/vnd.sluice+json',
  'application/x-www-form-urlencoded',
  'text/plain',
  'application/octet-stream',
  'multipart/form-data; boundary=x',
  'x/y;;;=',
  'APPLICATION/JSON',
  undefined,
];

interface Sent {
  path: string;
  headers: Record<string, string>;
  body: string | Buffer | undefined;
  /** Whether this request could, at best, be accepted: a real key and path. */
  keyed: boolean;
}

function makeRequest(key: string): Sent {
  const roll = random();
  const path = roll < 0.03 ? pick(['nosuch', 'Builds', 'constructor', 'build', '__proto__']) : pick(PATHS);
  const keyed = path === 'builds' || Object.hasOwn(providers, path);
  const badKey = chance(0.04);
  const usedKey = badKey ? pick(['x', key.slice(0, -1), `${key}x`, 'k'.repeat(64)]) : key;

  const seeds = Object.hasOwn(SEEDS, path) ? SEEDS[path]! : GENERIC_SEEDS;
  const seed = pick(seeds);
  const headers: Record<string, string> = { ...seed.headers };
  const meta = Object.hasOwn(EVENT_HEADERS, path) ? EVENT_HEADERS[path] : undefined;
  if (meta?.header && chance(0.15)) headers[meta.header] = chance(0.8) && meta.events.length > 0 ? pick(meta.events) : randomString(12).replace(/[^\x21-\x7e]/g, 'x');
  if (chance(0.05)) headers['x-github-event'] = pick(['push', 'ping', 'pull_request']);

  let body: string | Buffer | undefined;
  let contentType: string | undefined = 'application/json';
  const kind = random();
  if (kind < 0.55) {
    body = JSON.stringify(mutate(structuredClone(seed.body), pick([0, 0.01, 0.05, 0.2])));
  } else if (kind < 0.65) {
    // Form: a provider's `payload=<json>` or the generic form fields.
    const fields = new URLSearchParams();
    if (chance(0.5)) fields.set('payload', JSON.stringify(mutate(structuredClone(seed.body), 0.05)));
    for (let i = int(4); i > 0; i--) fields.append(pick(['branch', 'head', 'force', 'payload', randomString(3)]), String(nastyValue() ?? ''));
    body = fields.toString();
    contentType = 'application/x-www-form-urlencoded';
  } else if (kind < 0.75) {
    body = Buffer.from(Array.from({ length: int(600) }, () => int(256)));
  } else if (kind < 0.85) {
    body = JSON.stringify(nastyValue());
  } else if (kind < 0.9) {
    body = chance(0.5) ? undefined : '';
  } else if (kind < 0.995) {
    const text = JSON.stringify(seed.body);
    const cut = int(text.length);
    body = chance(0.5) ? text.slice(0, cut) : text.slice(0, cut) + randomString(3) + text.slice(cut);
  } else {
    body = JSON.stringify({ branch: 'master', junk: 'x'.repeat(1024 * 1024 + int(1000)) });
  }
  if (chance(0.25)) contentType = pick(CONTENT_TYPES);
  if (contentType !== undefined) headers['content-type'] = contentType;

  let query = '';
  if (chance(0.2)) {
    const b = pick(['master', 'dev', 'a..b', '-x', '%00', '%FF%FE', 'x'.repeat(300), 'refs%2Fheads%2Fdev', '', encodeURIComponent('\u202e')]);
    query = chance(0.1) ? `?branch=${b}&branch=dev` : `?branch=${b}`;
  }
  return { path: `/1/${path}/${usedKey}${query}`, headers, body, keyed: keyed && !badKey };
}

// ---- the run ----

let h: ApiHarness;
let key: string;

beforeAll(async () => {
  h = await startApiHarness();
  const seeded = await seedRepo(h, { branches: ['master', 'main', 'dev', 'default', 'feature', 'changes', 'simple-tag'] });
  key = seeded.repo.key;
});
afterAll(() => h?.close());

const ALLOWED = new Set([200, 400, 404, 413, 415, 422]);

function check(sent: Sent, res: Response): 'built' | 'skipped' | 'ignored' | 'refused' {
  const where = `seed ${SEED}: POST ${sent.path.replace(key, '<KEY>')} ${JSON.stringify(sent.headers)} ${String(sent.body).slice(0, 300)}`;
  if (!ALLOWED.has(res.statusCode)) throw new Error(`${where}\n→ ${res.statusCode} ${res.body.slice(0, 500)}`);
  if (res.statusCode === 422 && res.body === 'DROPPED') return 'refused';
  let json: Record<string, unknown>;
  try {
    json = JSON.parse(res.body) as Record<string, unknown>;
  } catch {
    throw new Error(`${where}\n→ ${res.statusCode} not JSON: ${res.body.slice(0, 200)}`);
  }
  if (res.statusCode === 200) {
    if (!sent.keyed) throw new Error(`${where}\n→ accepted on a bad key or path`);
    if (typeof json.ignored === 'string') {
      expect(json).toEqual({ status: 0, ignored: expect.any(String) });
      return 'ignored';
    }
    expect(json).toEqual({ status: 0, guid: expect.any(String), status_uri: expect.stringContaining(String(json.guid)) });
    return 'built';
  }
  if (typeof json.error !== 'string' || typeof json.message !== 'string') throw new Error(`${where}\n→ ${res.statusCode} without error/message: ${res.body.slice(0, 200)}`);
  return 'refused';
}

it(`answers every one of ${COUNT} random and mutated triggers with a 4xx or an acceptance, never a 500, never a build of bad input`, async () => {
  const started = Date.now();
  const tally: Record<string, number> = {};
  const statuses: Record<number, number> = {};
  let sent = 0;
  for (; sent < COUNT && Date.now() - started < TIME_BUDGET_MS; sent++) {
    const req = makeRequest(key);
    const [eventsBefore, enqueuedBefore] = [await countRows(h, 'ci_events'), h.enqueued.length];
    const res = await h.request({ method: 'POST', url: req.path, headers: req.headers, payload: req.body });
    const outcome = check(req, res);
    statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1;
    const newEvents = (await countRows(h, 'ci_events')) - eventsBefore;
    const newEnqueued = h.enqueued.length - enqueuedBefore;
    if (outcome === 'built') {
      expect(newEvents).toBe(1);
      const guid = (res.json() as { guid: string }).guid;
      const { rows } = await h.db.pool.query<{ n: number; decision: string }>(
        'SELECT e.decision, (SELECT count(*)::int FROM sessions s WHERE s.ci_event_id = e.id) AS n FROM ci_events e WHERE e.guid = $1',
        [guid],
      );
      expect(newEnqueued).toBe(rows[0]!.n);
      if (rows[0]!.decision === 'skip') expect(newEnqueued).toBe(0);
      tally[rows[0]!.decision] = (tally[rows[0]!.decision] ?? 0) + 1;
    } else {
      if (newEvents !== 0 || newEnqueued !== 0) {
        throw new Error(`seed ${SEED}: ${req.path.replace(key, '<KEY>')} answered ${res.statusCode} yet stored ${newEvents} events, enqueued ${newEnqueued}`);
      }
      tally[outcome] = (tally[outcome] ?? 0) + 1;
    }
  }

  // Every queued session names a branch and a commit git can take.
  const { rows } = await h.db.pool.query<{ branch: string; head: string; ref: string | null }>('SELECT branch, head, ref FROM sessions');
  for (const s of rows) {
    expect(branchNameProblem(s.branch)).toBeUndefined();
    // eslint-disable-next-line no-control-regex
    for (const v of [s.head, s.ref ?? 'x']) expect(v).toMatch(/^[^-\s\u0000-\u001f\u007f][^\s\u0000-\u001f\u007f]{0,254}$/);
  }
  // The run reached every outcome, so it exercised more than the front door.
  console.log(`triggers fuzz: seed ${SEED}, ${sent} requests in ${Date.now() - started} ms; statuses ${JSON.stringify(statuses)}; ${JSON.stringify(tally)}`);
  expect(sent).toBeGreaterThanOrEqual(Math.min(COUNT, 1000));
  for (const s of [200, 400, 404, 422]) expect(statuses[s]).toBeGreaterThan(0);
  expect(tally.build).toBeGreaterThan(0);
  expect(tally.skip).toBeGreaterThan(0);
});
