/**
 * The postCommitStatus activity against real local HTTP(S) servers and a real database. Each
 * server plays a provider: it checks the request the way that provider's status API
 * documents it (method, path, auth header, JSON body and its state names) and answers as it
 * would (201, Bitbucket Server 204, or 401/404/422 for a request it would refuse). Then: a 5xx is retried, a 4xx is
 * not, each attempt is one log row, and the token appears in no row, error or log line.
 *
 * Each activity run is one attempt under Temporal's retry policy: the tests run attempt 1, 2,
 * ... as a worker would (runAttempts).
 */
import { ApplicationFailure } from '@temporalio/common';
import { createCommitStatusActivity } from '../../src/activities/commitStatus';
import { FAILURE_TYPES } from '../../src/activities/failures';
import type { CommitStatusInput } from '../../src/core/commitStatus';
import type { Config } from '../../src/config';
import type { StatusProvider } from '../../src/core/commitStatus';
import { seal } from '../../src/crypto/sealed';
import { updateStatusSettings } from '../../src/db/commitStatuses';
import { closeDefaultAgent } from '../../src/delivery/send';
import { parseAllowList, type Cidr } from '../../src/ip/ranges';
import { runAttempts, type TestRetryPolicy } from '../support/activityContext';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { insertPostSession, postTestConfig } from '../support/postSession';
import { startHttpsReceiver, startReceiver, type ReceivedRequest, type Receiver, type Reply } from '../support/receiver';

let db: TestDatabase;
let config: Config;
let rx: Receiver;

const SHA = '89abcdef0123456789abcdef0123456789abcdef';
const TOKEN = 'tok_Sup3rS3cretStatusToken';
const REPORT = 'https://ci.example.test/1/reports/7?token=r3p0rt';
const LOOPBACK = parseAllowList('127.0.0.0/8');

/** Three attempts, 20 ms apart: the default policy's shape, shorter. */
const POLICY: TestRetryPolicy = { maximumAttempts: 3, initialInterval: 20, backoffCoefficient: 1 };

/** Where each provider's API lives on the local server, as a self-hosted instance's would. */
const BASE_PATH: Record<StatusProvider, string> = { github: '/api/v3', gitlab: '/api/v4', gitea: '/api/v1', bitbucket: '/2.0', 'bitbucket-server': '/bitbucket' };

const json = (status: number, body: unknown): Reply => ({ status, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

/**
 * A provider's status API as documented: what it takes, and how it refuses what it does not.
 * GitHub: POST /repos/{owner}/{repo}/statuses/{sha}, Bearer (or `token`) auth, body state
 * (error|failure|pending|success), target_url, description, context. GitLab: POST
 * /projects/{id}/statuses/{sha}, PRIVATE-TOKEN, state (pending|running|success|failed|canceled
 * |skipped), name or context, target_url, description, ref. Gitea: as GitHub, with `token`
 * auth and `warning` besides. Bitbucket: POST /repositories/{workspace}/{slug}/commit/{sha}
 * /statuses/build, Bearer or Basic, key, state (INPROGRESS|SUCCESSFUL|FAILED|STOPPED) and url
 * required, name, description, refname. Bitbucket Server / Data Center (7.4+): POST
 * {base}/rest/api/latest/projects/{projectKey}/repos/{slug}/commits/{sha}/builds, Bearer, key,
 * state (INPROGRESS|SUCCESSFUL|FAILED|CANCELLED|UNKNOWN) and url required, name, description,
 * ref (a full ref name), buildNumber, duration, lastUpdated, parent, testResults; fields at most
 * 255 characters, url 450; 204 No Content.
 */
function fakeProvider(provider: StatusProvider, repoPath: string, token: string): (req: ReceivedRequest) => Reply {
  const base = BASE_PATH[provider];
  const owner = repoPath;
  const shapes: Record<
    StatusProvider,
    { path: string; auth: (h: ReceivedRequest['headers']) => boolean; required: string[]; states: string[]; allowed: string[]; check?: (body: Record<string, unknown>) => string | null; created?: Reply }
  > = {
    github: {
      path: `${base}/repos/${owner}/statuses/${SHA}`,
      auth: (h) => h.authorization === `Bearer ${token}` || h.authorization === `token ${token}`,
      required: ['state'],
      states: ['error', 'failure', 'pending', 'success'],
      allowed: ['state', 'target_url', 'description', 'context'],
    },
    gitlab: {
      path: `${base}/projects/${encodeURIComponent(repoPath)}/statuses/${SHA}`,
      auth: (h) => h['private-token'] === token || h.authorization === `Bearer ${token}`,
      required: ['state'],
      states: ['pending', 'running', 'success', 'failed', 'canceled', 'skipped'],
      allowed: ['state', 'ref', 'name', 'context', 'target_url', 'description', 'coverage', 'pipeline_id'],
    },
    gitea: {
      path: `${base}/repos/${owner}/statuses/${SHA}`,
      auth: (h) => h.authorization === `token ${token}` || h.authorization === `Bearer ${token}`,
      required: ['state'],
      states: ['pending', 'success', 'error', 'failure', 'warning'],
      allowed: ['state', 'target_url', 'description', 'context'],
    },
    bitbucket: {
      path: `${base}/repositories/${owner}/commit/${SHA}/statuses/build`,
      auth: (h) => h.authorization === `Bearer ${token}`,
      required: ['key', 'state', 'url'],
      states: ['INPROGRESS', 'SUCCESSFUL', 'FAILED', 'STOPPED'],
      allowed: ['key', 'state', 'url', 'name', 'description', 'refname'],
    },
    'bitbucket-server': {
      path: `${base}/rest/api/latest/projects/${repoPath.replace('/', '/repos/')}/commits/${SHA}/builds`,
      auth: (h) => h.authorization === `Bearer ${token}`,
      required: ['key', 'state', 'url'],
      states: ['INPROGRESS', 'SUCCESSFUL', 'FAILED', 'CANCELLED', 'UNKNOWN'],
      allowed: ['key', 'state', 'url', 'name', 'description', 'ref', 'buildNumber', 'duration', 'lastUpdated', 'parent', 'testResults'],
      check: (body) => {
        for (const [k, v] of Object.entries(body)) if (typeof v === 'string' && v.length > (k === 'url' ? 450 : 255)) return `${k} is too long`;
        return body.ref === undefined || /^refs\/heads\/./.test(String(body.ref)) ? null : `ref is not a full ref name: ${String(body.ref)}`;
      },
      created: { status: 204, body: '' },
    },
  };
  const shape = shapes[provider];
  return (req) => {
    if (req.method !== 'POST') return json(405, { message: 'method not allowed' });
    if (req.path !== shape.path) return json(404, { message: `not found: ${req.path}` });
    if (!shape.auth(req.headers)) return json(401, { message: 'Bad credentials' });
    if (!String(req.headers['content-type']).startsWith('application/json')) return json(415, { message: 'expected JSON' });
    const body = req.json as Record<string, unknown> | undefined;
    if (!body || typeof body !== 'object') return json(400, { message: 'Problems parsing JSON' });
    for (const k of shape.required) if (typeof body[k] !== 'string') return json(422, { message: `${k} is missing` });
    for (const k of Object.keys(body)) if (!shape.allowed.includes(k)) return json(422, { message: `unknown field ${k}` });
    if (!shape.states.includes(body.state as string)) return json(422, { message: `state is invalid: ${String(body.state)}` });
    const problem = shape.check?.(body);
    if (problem) return json(400, { message: problem });
    return shape.created ?? json(201, { id: 1, state: body.state });
  };
}

interface Setup {
  sessionId: number;
  repoId: number;
}

async function repoWith(provider: StatusProvider, opts: { repo?: string; apiUrl?: string | null; token?: string | null; sealWith?: Buffer } = {}): Promise<Setup> {
  const s = await insertPostSession(db.pool, config.secretKey);
  const token = opts.token === undefined ? TOKEN : opts.token;
  await updateStatusSettings(db.pool, s.repoId, {
    status_provider: provider,
    status_api_url: opts.apiUrl === undefined ? `http://127.0.0.1:${rx.port}${BASE_PATH[provider]}` : opts.apiUrl,
    status_repo: opts.repo ?? 'acme/app',
    status_token_sealed: token === null ? null : seal(opts.sealWith ?? config.secretKey, token),
  });
  return { sessionId: s.sessionId, repoId: s.repoId };
}

const input = (sessionId: number, over: Partial<CommitStatusInput> = {}): CommitStatusInput => ({
  sessionId,
  commitId: SHA,
  phase: 'running',
  context: 'sluice/default',
  description: `#${sessionId} running`,
  targetUrl: REPORT,
  ref: 'master',
  ...over,
});

const activity = (allow: readonly Cidr[] = LOOPBACK) => createCommitStatusActivity({ pool: db.pool, secretKey: config.secretKey, allow, timeoutMs: 2_000, maxRetryAfterMs: 5_000 });

async function rows(sessionId: number) {
  const { rows } = await db.pool.query(
    'SELECT provider, commit_id, context, state, url, attempt, status_code, outcome, error FROM commit_status_attempts WHERE session_id = $1 ORDER BY id',
    [sessionId],
  );
  return rows as Array<{ provider: string; commit_id: string; context: string; state: string; url: string; attempt: number; status_code: number | null; outcome: string; error: string | null }>;
}

/** Every column of every attempt row of the session, as text. */
async function everythingStored(sessionId: number): Promise<string> {
  const { rows } = await db.pool.query('SELECT row_to_json(a)::text AS r FROM commit_status_attempts a WHERE session_id = $1', [sessionId]);
  return rows.map((r: { r: string }) => r.r).join('\n');
}

async function failureOf(p: Promise<unknown>): Promise<ApplicationFailure> {
  try {
    await p;
  } catch (err) {
    if (err instanceof ApplicationFailure) return err;
    throw err;
  }
  throw new Error('expected the activity to fail');
}

beforeAll(async () => {
  db = await createTestDatabase();
  config = postTestConfig(db.url, { webhookAllow: LOOPBACK });
});

afterAll(async () => {
  await closeDefaultAgent();
  await db.drop();
});

beforeEach(async () => {
  rx = await startReceiver();
});

afterEach(async () => {
  await rx.close();
});

describe('each provider gets its documented request', () => {
  it.each<[StatusProvider, string, Record<string, unknown>]>([
    ['github', 'acme/app', { state: 'pending', target_url: REPORT, context: 'sluice/default' }],
    ['gitlab', 'acme/platform/app', { state: 'running', name: 'sluice/default', target_url: REPORT, ref: 'master' }],
    ['gitea', 'acme/app', { state: 'pending', target_url: REPORT, context: 'sluice/default' }],
    ['bitbucket', 'acme/app', { key: 'sluice/default', state: 'INPROGRESS', name: 'sluice/default', url: REPORT, refname: 'master' }],
    ['bitbucket-server', 'PLAT/app', { key: 'sluice/default', state: 'INPROGRESS', name: 'sluice/default', url: REPORT, ref: 'refs/heads/master' }],
  ])('%s: running, then the outcome, each accepted and logged', async (provider, repo, expected) => {
    rx.respondWith(fakeProvider(provider, repo, TOKEN));
    const s = await repoWith(provider, { repo });
    const run = activity();

    const first = await runAttempts(() => run(input(s.sessionId)), POLICY);
    expect(first.result.posted).toBe(true);
    expect(first.attempts).toBe(1);
    const second = await runAttempts(() => run(input(s.sessionId, { phase: 'failed', description: `#${s.sessionId} failed: 1 of 2 test files failed` })), POLICY);
    expect(second.result.posted).toBe(true);

    expect(rx.requests).toHaveLength(2);
    const [req, final] = rx.requests;
    expect(req!.json).toMatchObject({ ...expected, description: `#${s.sessionId} running` });
    expect(req!.headers['user-agent']).toBe('Sluice-Status/1');
    expect((final!.json as { state: string }).state).toBe({ github: 'failure', gitlab: 'failed', gitea: 'failure', bitbucket: 'FAILED', 'bitbucket-server': 'FAILED' }[provider]);

    const created = provider === 'bitbucket-server' ? 204 : 201;
    const logged = await rows(s.sessionId);
    expect(logged).toEqual([
      expect.objectContaining({ provider, commit_id: SHA, context: 'sluice/default', attempt: 1, status_code: created, outcome: 'delivered', error: null }),
      expect.objectContaining({ provider, attempt: 1, status_code: created, outcome: 'delivered' }),
    ]);
    expect(logged[0]!.url).toBe(`http://127.0.0.1:${rx.port}${req!.path}`);
    expect(logged.map((r) => r.state)).toEqual([(expected as { state: string }).state, (final!.json as { state: string }).state]);
  });

  it('Bitbucket Server: a stop is CANCELLED, a pull request build has no ref, a personal repository is ~USER/slug', async () => {
    rx.respondWith(fakeProvider('bitbucket-server', '~JDOE/app', TOKEN));
    const s = await repoWith('bitbucket-server', { repo: '~JDOE/app' });
    const run = await runAttempts(() => activity()(input(s.sessionId, { phase: 'stopped', ref: null, description: `#${s.sessionId} stopped by alice` })), POLICY);
    expect(run.result.posted).toBe(true);
    expect(rx.requests[0]!.path).toBe(`/bitbucket/rest/api/latest/projects/~JDOE/repos/app/commits/${SHA}/builds`);
    expect(rx.requests[0]!.json).toEqual({ key: 'sluice/default', state: 'CANCELLED', name: 'sluice/default', url: REPORT, description: `#${s.sessionId} stopped by alice` });
    expect(await rows(s.sessionId)).toEqual([expect.objectContaining({ provider: 'bitbucket-server', state: 'CANCELLED', status_code: 204, outcome: 'delivered' })]);
  });

  it('GitHub sends its API version and media type', async () => {
    rx.respondWith(fakeProvider('github', 'acme/app', TOKEN));
    const s = await repoWith('github');
    await runAttempts(() => activity()(input(s.sessionId)), POLICY);
    expect(rx.requests[0]!.headers).toMatchObject({ accept: 'application/vnd.github+json', 'x-github-api-version': '2022-11-28' });
  });
});

describe('retries', () => {
  it('a 5xx is retried, and the attempt that gets through ends it', async () => {
    const provider = fakeProvider('github', 'acme/app', TOKEN);
    let n = 0;
    rx.respondWith((req) => (++n <= 2 ? { status: 502, body: 'bad gateway' } : provider(req)));
    const s = await repoWith('github');

    const run = await runAttempts(() => activity()(input(s.sessionId)), POLICY);
    expect(run.attempts).toBe(3);
    expect(run.result.posted).toBe(true);
    expect(run.failures.map((f) => (f as ApplicationFailure).type)).toEqual([FAILURE_TYPES.commitStatusRetrying, FAILURE_TYPES.commitStatusRetrying]);
    expect(run.failures.every((f) => !(f as ApplicationFailure).nonRetryable)).toBe(true);
    expect((await rows(s.sessionId)).map((r) => [r.attempt, r.status_code, r.outcome, r.error])).toEqual([
      [1, 502, 'retrying', 'HTTP 502: bad gateway'],
      [2, 502, 'retrying', 'HTTP 502: bad gateway'],
      [3, 201, 'delivered', null],
    ]);
  });

  it('a 5xx on the last attempt is given up', async () => {
    rx.respondWith(() => ({ status: 503, body: 'down' }));
    const s = await repoWith('gitlab', { repo: 'acme/app' });
    const failure = await failureOf(runAttempts(() => activity()(input(s.sessionId)), POLICY));
    expect(failure.type).toBe(FAILURE_TYPES.commitStatusGaveUp);
    expect(failure.nonRetryable).toBe(true);
    expect((await rows(s.sessionId)).map((r) => r.outcome)).toEqual(['retrying', 'retrying', 'gave_up']);
  });

  it('a 4xx is not retried: dropped at once', async () => {
    rx.respondWith(fakeProvider('github', 'acme/app', TOKEN));
    const s = await repoWith('github', { repo: 'acme/other' }); // the fake answers 404 for another repository
    const failure = await failureOf(runAttempts(() => activity()(input(s.sessionId)), POLICY));
    expect(failure.type).toBe(FAILURE_TYPES.commitStatusDropped);
    expect(failure.nonRetryable).toBe(true);
    expect(rx.requests).toHaveLength(1);
    expect(await rows(s.sessionId)).toEqual([expect.objectContaining({ attempt: 1, status_code: 404, outcome: 'dropped', error: expect.stringMatching(/^HTTP 404: /) })]);
  });

  it("GitHub's rate limit (403 with Retry-After) is retried after the wait it asks for", async () => {
    const provider = fakeProvider('github', 'acme/app', TOKEN);
    let n = 0;
    rx.respondWith((req) => (++n === 1 ? { status: 403, headers: { 'retry-after': '2' }, body: '{"message":"You have exceeded a secondary rate limit"}' } : provider(req)));
    const s = await repoWith('github');
    const run = await runAttempts(() => activity()(input(s.sessionId)), POLICY, { maxWaitMs: 50 });
    expect(run.attempts).toBe(2);
    expect(run.delays).toEqual([2_000]);
    expect((await rows(s.sessionId)).map((r) => [r.status_code, r.outcome])).toEqual([
      [403, 'retrying'],
      [201, 'delivered'],
    ]);
  });

  it("GitLab's 'Cannot transition status' after a lost answer counts as posted", async () => {
    rx.respondWith(() => json(400, { message: 'Cannot transition status via :run from :running' }));
    const s = await repoWith('gitlab', { repo: 'acme/app' });
    const run = await runAttempts(() => activity()(input(s.sessionId)), POLICY);
    expect(run.result.posted).toBe(true);
    expect(await rows(s.sessionId)).toEqual([expect.objectContaining({ status_code: 400, outcome: 'delivered', error: null })]);
  });
});

describe('the token stays secret', () => {
  it('is in no row, error or log line, even when the provider echoes it back', async () => {
    // A provider that repeats what it was sent, credentials included, in its refusal.
    rx.respondWith((req) => json(401, { message: 'Bad credentials', got: { authorization: req.headers.authorization, 'private-token': req.headers['private-token'] } }));
    for (const provider of ['github', 'gitlab', 'gitea', 'bitbucket', 'bitbucket-server'] as const) {
      const s = await repoWith(provider);
      const failure = await failureOf(runAttempts(() => activity()(input(s.sessionId)), POLICY));
      expect(failure.type).toBe(FAILURE_TYPES.commitStatusDropped);
      expect(failure.message).not.toContain(TOKEN);
      const stored = await everythingStored(s.sessionId);
      expect(stored).toContain('Bad credentials');
      expect(stored).toContain('[redacted]');
      expect(stored).not.toContain(TOKEN);
    }
    // The provider did get it (in a header): the test would prove nothing otherwise.
    expect(rx.requests.some((r) => JSON.stringify(r.headers).includes(TOKEN))).toBe(true);
    expect(rx.requests.every((r) => !r.path.includes(TOKEN) && !r.body.includes(TOKEN))).toBe(true);
  });

  it('user:secret sent as Basic is in no row or error either, not even as the base64 the header carries', async () => {
    const secret = 'jdoe:Sup3rS3cretPersonalToken';
    const basic = Buffer.from(secret).toString('base64');
    rx.respondWith((req) => json(401, { message: 'Authentication failed', got: req.headers.authorization }));
    for (const provider of ['bitbucket', 'bitbucket-server'] as const) {
      const s = await repoWith(provider, { token: secret });
      const failure = await failureOf(runAttempts(() => activity()(input(s.sessionId)), POLICY));
      expect(failure.type).toBe(FAILURE_TYPES.commitStatusDropped);
      const stored = await everythingStored(s.sessionId);
      expect(stored).toContain('Authentication failed');
      for (const text of [stored, failure.message]) {
        expect(text).not.toContain(basic);
        expect(text).not.toContain('Sup3rS3cretPersonalToken');
      }
    }
    expect(rx.requests.every((r) => r.headers.authorization === `Basic ${basic}`)).toBe(true);
  });

  it('a token sealed under another key is not sent: dropped, saying why', async () => {
    rx.respondWith(fakeProvider('github', 'acme/app', TOKEN));
    const s = await repoWith('github', { sealWith: Buffer.alloc(32, 7) });
    const failure = await failureOf(runAttempts(() => activity()(input(s.sessionId)), POLICY));
    expect(failure.type).toBe(FAILURE_TYPES.commitStatusDropped);
    expect(rx.requests).toHaveLength(0);
    expect(await rows(s.sessionId)).toEqual([expect.objectContaining({ outcome: 'dropped', error: expect.stringContaining('cannot unseal the status token') })]);
  });
});

describe('the outgoing-webhook guards apply', () => {
  it('loopback is refused unless SLUICE_WEBHOOK_ALLOW opens it', async () => {
    rx.respondWith(fakeProvider('github', 'acme/app', TOKEN));
    const s = await repoWith('github');
    const failure = await failureOf(runAttempts(() => activity([])(input(s.sessionId)), POLICY));
    expect(failure.type).toBe(FAILURE_TYPES.commitStatusDropped);
    expect(rx.requests).toHaveLength(0);
    expect(await rows(s.sessionId)).toEqual([expect.objectContaining({ outcome: 'dropped', error: expect.stringMatching(/^blocked: /) })]);
  });

  it('an HTTPS API whose certificate does not verify is dropped, not retried', async () => {
    const tls = await startHttpsReceiver();
    try {
      tls.respondWith(fakeProvider('github', 'acme/app', TOKEN));
      const s = await repoWith('github', { apiUrl: `https://127.0.0.1:${tls.port}/api/v3` });
      const failure = await failureOf(runAttempts(() => activity()(input(s.sessionId)), POLICY));
      expect(failure.type).toBe(FAILURE_TYPES.commitStatusDropped);
      expect(tls.requests).toHaveLength(0);
      expect(await rows(s.sessionId)).toEqual([expect.objectContaining({ attempt: 1, outcome: 'dropped', error: expect.stringMatching(/certificate/i) })]);
    } finally {
      await tls.close();
    }
  });
});

describe('without settings', () => {
  it('posts nothing and logs nothing when the repository has no token (any more)', async () => {
    const s = await repoWith('github', { token: null });
    const run = await runAttempts(() => activity()(input(s.sessionId)), POLICY);
    expect(run.result.posted).toBe(false);
    expect(rx.requests).toHaveLength(0);
    expect(await rows(s.sessionId)).toEqual([]);
  });
});
