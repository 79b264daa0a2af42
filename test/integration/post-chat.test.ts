/**
 * postChat against a real HTTP receiver and a real database: the Slack-compatible body, the
 * SSRF guard, no redirects, bounded retries, a deadline, and that a failure is recorded and
 * returned (never thrown), with the URL's secret path kept out of it.
 *
 * Each activity run is one attempt under Temporal's retry policy: the tests run attempt 1, 2,
 * ... as a worker would (runAttempts), each in an activity context whose info.attempt says
 * which, with the policy's maximumAttempts in info.retryPolicy.
 */
import { ApplicationFailure } from '@temporalio/common';
import { createPostActivities } from '../../src/activities/post/activities';
import { FAILURE_TYPES } from '../../src/activities/failures';
import { closeDefaultAgent } from '../../src/delivery/send';
import { parseAllowList } from '../../src/ip/ranges';
import type { BuildSummary } from '../../src/activities/types';
import type { Config } from '../../src/config';
import { emptyCounts } from '../../src/core/counts';
import { runActivity, runAttempts, type TestRetryPolicy } from '../support/activityContext';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { insertPostSession, postBuildSteps, postTestConfig } from '../support/postSession';
import { startReceiver, type Receiver } from '../support/receiver';

let db: TestDatabase;
let config: Config;
let rx: Receiver;

/** Slack's incoming-webhook URLs carry their token in the path. */
const SECRET_PATH = '/services/T000/B000/XXXXsecretXXXX';

/** Three attempts, 20 ms apart: the shape of the default policy, shorter. */
const POLICY: TestRetryPolicy = { maximumAttempts: 3, initialInterval: 20, backoffCoefficient: 1 };

/** postChat as a worker runs it: attempts until one returns (or throws for good). */
const activities = (overrides: Partial<Config> = {}, chatTimeoutMs = 2_000) => {
  const a = createPostActivities({ config: { ...config, ...overrides }, pool: db.pool, chatTimeoutMs });
  return {
    postChat: async (input: Parameters<typeof a.postChat>[0]) => (await runAttempts(() => a.postChat(input), POLICY)).result,
    attempts: (input: Parameters<typeof a.postChat>[0], opts: { maxWaitMs?: number } = {}) => runAttempts(() => a.postChat(input), POLICY, opts),
    raw: a,
  };
};

function summary(sessionId: number, overrides: Partial<BuildSummary> = {}): BuildSummary {
  return {
    session: sessionId,
    repo: { orgName: 'acme', name: 'app' },
    branch: 'master',
    commitId: '0123456789abcdef0123456789abcdef01234567',
    status: 'failed',
    reason: null,
    counts: { ...emptyCounts(), passed: 1, failed: 1 },
    url: `https://ci.example.test/1/reports/${sessionId}`,
    profileName: 'default',
    ...overrides,
  };
}

const hookUrl = () => `http://127.0.0.1:${rx.port}${SECRET_PATH}`;
const origin = () => `http://127.0.0.1:${rx.port}`;

beforeAll(async () => {
  db = await createTestDatabase();
  config = postTestConfig(db.url, { webhookAllow: parseAllowList('127.0.0.0/8') });
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

describe('postChat', () => {
  it("posts the summary to the repository's chat URL as Slack-compatible JSON, and records it", async () => {
    const s = await insertPostSession(db.pool, config.secretKey, { chatUrl: hookUrl() });
    await db.pool.query(
      `INSERT INTO test_results (session_id, path, status, exit_code, duration_ms) VALUES
         ($1, 'test/a_test.sh', 'passed', 0, 10), ($1, 'test/b_test.sh', 'failed', 1, 20)`,
      [s.sessionId],
    );

    const result = await activities().postChat({ sessionId: s.sessionId, summary: summary(s.sessionId) });

    expect(result).toEqual({ posted: true, detail: `posted to ${origin()} (HTTP 200)` });
    expect(rx.requests).toHaveLength(1);
    const req = rx.requests[0]!;
    expect(req.method).toBe('POST');
    expect(req.path).toBe(SECRET_PATH);
    expect(req.headers['content-type']).toBe('application/json');
    expect(req.headers['user-agent']).toBe('Sluice-Chat/1');
    const body = req.json as { text: string; blocks: { type: string; text?: { text: string } }[] };
    expect(body.text).toBe(
      `:x: acme/app @ master #${s.sessionId} failed: 1 passed, 1 failed, 0 errors, 0 skipped (2 test files), commit 0123456789ab (<https://ci.example.test/1/reports/${s.sessionId}|report>)`,
    );
    expect(body.blocks.map((b) => b.type)).toEqual(['section', 'section', 'section']);
    expect(body.blocks[2]!.text!.text).toBe('*Failing*\n• test/b_test.sh (failed)');
    expect(await postBuildSteps(db.pool, s.sessionId)).toEqual([{ step: 'chat', ok: true, detail: result.detail }]);
  });

  it('takes chatUrl when given; without one and without a repository chat URL does nothing', async () => {
    const s = await insertPostSession(db.pool, config.secretKey, { chatUrl: null });
    expect(await activities().postChat({ sessionId: s.sessionId, summary: summary(s.sessionId) })).toEqual({
      posted: false,
      detail: 'no chat URL configured',
    });
    expect(await postBuildSteps(db.pool, s.sessionId)).toEqual([]);

    const r = await activities().postChat({ sessionId: s.sessionId, chatUrl: hookUrl(), summary: summary(s.sessionId, { status: 'passed' }) });
    expect(r.posted).toBe(true);
    expect((rx.requests[0]!.json as { text: string }).text).toMatch(/^:white_check_mark: /);
  });

  it('the SSRF guard applies: loopback is refused unless SLUICE_WEBHOOK_ALLOW opens it', async () => {
    const s = await insertPostSession(db.pool, config.secretKey, { chatUrl: hookUrl() });
    const result = await activities({ webhookAllow: [] }).postChat({ sessionId: s.sessionId, summary: summary(s.sessionId) });
    expect(result.posted).toBe(false);
    expect(result.detail).toMatch(new RegExp(`^could not post to ${origin()}: blocked: .*loopback.*\\(1 attempt\\)$`));
    expect(rx.requests).toHaveLength(0);
    expect(await postBuildSteps(db.pool, s.sessionId)).toEqual([{ step: 'chat', ok: false, detail: result.detail }]);
  });

  it('does not follow redirects', async () => {
    rx.respondWith(() => ({ status: 302, headers: { location: 'http://127.0.0.1:1/elsewhere' } }));
    const s = await insertPostSession(db.pool, config.secretKey, { chatUrl: hookUrl() });
    const result = await activities().postChat({ sessionId: s.sessionId, summary: summary(s.sessionId) });
    expect(result).toEqual({ posted: false, detail: `could not post to ${origin()}: HTTP 302 (1 attempt)` });
    expect(rx.requests).toHaveLength(1);
  });

  it('retries a chat service that is briefly down', async () => {
    let n = 0;
    rx.respondWith(() => (++n < 3 ? { status: 503, body: 'busy' } : { status: 200, body: 'ok' }));
    const s = await insertPostSession(db.pool, config.secretKey, { chatUrl: hookUrl() });
    const run = await activities().attempts({ sessionId: s.sessionId, summary: summary(s.sessionId) });
    const result = run.result;
    expect(result).toEqual({ posted: true, detail: `posted to ${origin()} (HTTP 200)` });
    expect(rx.requests).toHaveLength(3);
    expect(await postBuildSteps(db.pool, s.sessionId)).toEqual([{ step: 'chat', ok: true, detail: result.detail }]);
    // Attempts 1 and 2 left the next one to Temporal: a retryable failure each, logged.
    expect(run.attempts).toBe(3);
    expect(run.failures).toHaveLength(2);
    for (const [i, f] of run.failures.entries()) {
      expect(f).toBeInstanceOf(ApplicationFailure);
      expect(f).toMatchObject({ type: FAILURE_TYPES.chatRetrying, nonRetryable: false });
      expect((f as Error).message).toBe(`chat attempt ${i + 1} of 3 failed, to be retried: could not post to ${origin()}: HTTP 503: busy`);
    }
    expect(run.delays).toEqual([20, 20]);
    expect(run.logs.filter((l) => l.message.startsWith('chat attempt'))).toHaveLength(2);
  });

  it('one attempt at a time: only the last one the policy allows records a failure', async () => {
    rx.respondWith(() => ({ status: 500, body: 'down' }));
    const s = await insertPostSession(db.pool, config.secretKey, { chatUrl: hookUrl() });
    const { raw } = activities();
    const input = { sessionId: s.sessionId, summary: summary(s.sessionId) };
    const retryPolicy = { maximumAttempts: 3, initialInterval: 2_000, backoffCoefficient: 2.5, maximumInterval: 5_000 };

    for (const attempt of [1, 2]) {
      const err = await runActivity(() => raw.postChat(input), { attempt, retryPolicy }).result.catch((e: unknown) => e);
      expect(err).toMatchObject({ type: FAILURE_TYPES.chatRetrying, nonRetryable: false });
      // The policy's backoff decides the wait: no nextRetryDelay of our own.
      expect((err as ApplicationFailure).nextRetryDelay).toBeUndefined();
      expect(await postBuildSteps(db.pool, s.sessionId)).toEqual([]);
    }
    const run = runActivity(() => raw.postChat(input), { attempt: 3, retryPolicy });
    const result = await run.result;
    expect(result).toEqual({ posted: false, detail: `could not post to ${origin()}: HTTP 500: down (3 attempts)` });
    expect(await postBuildSteps(db.pool, s.sessionId)).toEqual([{ step: 'chat', ok: false, detail: result.detail }]);
    expect(run.logs()).toEqual([expect.objectContaining({ level: 'warn', message: `chat failed: ${result.detail}` })]);
  });

  it("a 429's Retry-After sets the next wait, up to 30 s", async () => {
    let n = 0;
    rx.respondWith(() => (++n === 1 ? { status: 429, headers: { 'retry-after': '1' } } : n === 2 ? { status: 503, headers: { 'retry-after': '120' } } : { status: 200 }));
    const s = await insertPostSession(db.pool, config.secretKey, { chatUrl: hookUrl() });
    const run = await activities().attempts({ sessionId: s.sessionId, summary: summary(s.sessionId) }, { maxWaitMs: 50 });
    expect(run.result.posted).toBe(true);
    expect(run.delays).toEqual([1_000, 30_000]);
    expect(run.failures.map((f) => (f as ApplicationFailure).nextRetryDelay)).toEqual([1_000, 30_000]);
  });

  it('gives up after a few attempts, returns and records the failure, and leaves the build alone', async () => {
    rx.respondWith(() => ({ status: 500, body: 'down' }));
    const s = await insertPostSession(db.pool, config.secretKey, { chatUrl: hookUrl() });
    await db.pool.query(`UPDATE sessions SET status = 'passed' WHERE id = $1`, [s.sessionId]);

    const result = await activities().postChat({ sessionId: s.sessionId, summary: summary(s.sessionId, { status: 'passed' }) });

    expect(result).toEqual({ posted: false, detail: `could not post to ${origin()}: HTTP 500: down (3 attempts)` });
    expect(rx.requests).toHaveLength(3);
    expect(await postBuildSteps(db.pool, s.sessionId)).toEqual([{ step: 'chat', ok: false, detail: result.detail }]);
    const { rows } = await db.pool.query<{ status: string }>('SELECT status FROM sessions WHERE id = $1', [s.sessionId]);
    expect(rows[0]!.status).toBe('passed');
  });

  it('a 4xx is final, and the secret part of the URL never shows, even when the service echoes it', async () => {
    rx.respondWith((req) => ({ status: 404, body: `no_service: ${req.path}` }));
    const s = await insertPostSession(db.pool, config.secretKey, { chatUrl: hookUrl() });
    const result = await activities().postChat({ sessionId: s.sessionId, summary: summary(s.sessionId) });
    expect(result.posted).toBe(false);
    expect(result.detail).toBe(`could not post to ${origin()}: HTTP 404: no_service: [redacted] (1 attempt)`);
    const [row] = await postBuildSteps(db.pool, s.sessionId);
    expect(row!.detail).not.toContain('XXXXsecretXXXX');
    expect(rx.requests).toHaveLength(1);
  });

  it('a chat service that never answers meets the deadline', async () => {
    rx.respondWith(() => new Promise(() => undefined));
    const s = await insertPostSession(db.pool, config.secretKey, { chatUrl: hookUrl() });
    const started = Date.now();
    const result = await activities({}, 300).postChat({ sessionId: s.sessionId, summary: summary(s.sessionId) });
    expect(result.posted).toBe(false);
    expect(result.detail).toMatch(new RegExp(`^could not post to ${origin()}: timeout after 300 ms.*\\(3 attempts\\)$`));
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('a chat URL that is not http(s)', async () => {
    const s = await insertPostSession(db.pool, config.secretKey, { chatUrl: 'ftp://chat.example.test/hook' });
    const result = await activities().postChat({ sessionId: s.sessionId, summary: summary(s.sessionId) });
    expect(result).toEqual({ posted: false, detail: 'the chat URL is not an http(s) URL' });
    expect(await postBuildSteps(db.pool, s.sessionId)).toEqual([{ step: 'chat', ok: false, detail: result.detail }]);
  });
});
