/**
 * The runner API's boundaries (api/routes/runnerApi.ts), against a real API and PostgreSQL: a
 * runner token reads and writes the records and blobs of the build whose job it runs and of no
 * other; secrets only as far as the build may have them; a job of another token is not its;
 * a revoked token is refused everything, and the jobs it was running fail at once. The
 * management side: runner tokens are made, listed and revoked with clear errors.
 */
import { mkdtemp, readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { seal } from '../../src/crypto/sealed';
import { insertJob, jobState } from '../../src/db/runnerJobs';
import { startApiHarness, type ApiHarness } from '../support/apiApp';
import { insertPostSession, type PostSession } from '../support/postSession';

let h: ApiHarness;
let a: PostSession;
let b: PostSession;
let store: string;

beforeAll(async () => {
  store = await mkdtemp(path.join(os.tmpdir(), 'sluice-runner-api-store-'));
  h = await startApiHarness({ config: { store: { kind: 'dir', dir: store } } });
  a = await insertPostSession(h.db.pool, h.config.secretKey);
  b = await insertPostSession(h.db.pool, h.config.secretKey);
  await h.db.pool.query('INSERT INTO repo_secrets (repo_id, name, value_sealed) VALUES ($1, $2, $3)', [a.repoId, 'DEPLOY_KEY', seal(h.config.secretKey, 'deploy-123')]);
});
afterAll(async () => {
  await h?.close();
});

async function token(name: string, org?: number): Promise<{ id: number; token: string }> {
  const res = await h.admin('POST', '/api/v1/runner-tokens', { name, ...(org === undefined ? {} : { org }) });
  expect(res.statusCode).toBe(201);
  return res.json() as { id: number; token: string };
}

const runner = (t: string) => ({
  call: (method: string, url: string, body?: unknown) =>
    fetch(`${h.url}/api/v1/runner${url}`, {
      method,
      headers: { authorization: `Bearer ${t}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    }),
  records: (job: number, method: string, args: unknown[]) =>
    fetch(`${h.url}/api/v1/runner/jobs/${job}/records/${method}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t}`, 'content-type': 'application/json' },
      body: JSON.stringify({ args }),
    }),
});

/** Queues a job of `session` (as the worker's gateway does) and has `t`'s runner take it. */
async function takenJob(t: string, session: PostSession, input: Record<string, unknown> = {}): Promise<number> {
  await insertJob(h.db.pool, { queue: 'q1', kind: 'runLane', activityId: `a${Math.random()}`, runId: 'run-1', attempt: 1, workflowId: `wf-${session.sessionId}`, sessionId: session.sessionId, input: { tree: { sessionId: session.sessionId }, ...input } }, 10_000);
  const res = await runner(t).call('POST', '/jobs/next', { runner: 'host-1', version: 'test', queues: ['q1'], wait_ms: 0 });
  expect(res.status).toBe(200);
  return ((await res.json()) as { job: { id: number } }).job.id;
}

describe('runner tokens in the management API', () => {
  it('refuses a bad name, a taken name and an unknown organization, naming the field', async () => {
    const bad = await h.admin('POST', '/api/v1/runner-tokens', { name: 'no spaces' });
    expect([bad.statusCode, bad.json().field]).toEqual([400, 'name']);
    await token('taken');
    const taken = await h.admin('POST', '/api/v1/runner-tokens', { name: 'taken' });
    expect([taken.statusCode, taken.json().field]).toEqual([409, 'name']);
    const org = await h.admin('POST', '/api/v1/runner-tokens', { name: 'orphan', org: 'no-such-org' });
    expect([org.statusCode, org.json().field]).toEqual([400, 'org']);
    expect((await h.admin('DELETE', '/api/v1/runner-tokens/999999')).statusCode).toBe(404);
  });

  it('never answers a runner call to the admin token, nor a management call to a runner token', async () => {
    const t = await token('edge-x');
    expect((await runner(h.config.adminToken).call('POST', '/jobs/next', { runner: 'x', version: '1', queues: ['q1'], wait_ms: 0 })).status).toBe(401);
    expect((await fetch(`${h.url}/api/v1/runner-tokens`, { headers: { authorization: `Bearer ${t.token}` } })).status).toBe(401);
  });
});

describe('a job’s runner', () => {
  let t: { id: number; token: string };
  let job: number;
  beforeAll(async () => {
    t = await token('edge-1');
    job = await takenJob(t.token, a);
  });

  it("reads its build's checkout key, and no other build's", async () => {
    const mine = await runner(t.token).records(job, 'pullSource', [a.repoId]);
    expect(mine.status).toBe(200);
    expect(((await mine.json()) as { value: { privateKey: string } }).value.privateKey).toContain('PRIVATE KEY');
    const theirs = await runner(t.token).records(job, 'pullSource', [b.repoId]);
    expect(theirs.status).toBe(403);
    expect(await theirs.text()).not.toContain('PRIVATE KEY');
  });

  it("writes its build's records and no other build's", async () => {
    expect((await runner(t.token).records(job, 'queueProgress', [a.sessionId])).status).toBe(200);
    expect((await runner(t.token).records(job, 'queueProgress', [b.sessionId])).status).toBe(403);
    expect((await runner(t.token).records(job, 'startBatch', [{ sessionId: b.sessionId, lane: 0, runner: 'host-1', files: 1 }])).status).toBe(403);
    const { rows } = await h.db.pool.query<{ id: number }>("INSERT INTO test_batches (session_id, lane, runner, files, status) VALUES ($1, 0, 'other', 1, 'running') RETURNING id::int AS id", [b.sessionId]);
    expect((await runner(t.token).records(job, 'finishBatch', [rows[0]!.id, { status: 'passed', exitCode: 0, durationMs: 1, output: 'forged', note: null }])).status).toBe(403);
    expect((await runner(t.token).records(job, 'noSuchCall', [])).status).toBe(404);
  });

  it('records a dependency map only for a job the workflow made a mapping run of (a push to the default branch)', async () => {
    const deps = { reads: ['lib/a.js', 'test/a.js'], lists: [], probes: [] };
    const commit = 'c'.repeat(40);
    // This job's build was not told to map (a pull request's, say): it may neither start nor write one.
    expect((await runner(t.token).records(job, 'startMap', [a.sessionId, commit, 'default', 10])).status).toBe(403);
    expect((await runner(t.token).records(job, 'recordFileDeps', [a.sessionId, 'test/a.js', deps])).status).toBe(403);
    const listing = await takenJob(t.token, a, { affected: { mayMap: true } });
    expect(await (await runner(t.token).records(listing, 'startMap', [a.sessionId, commit, 'default', 10])).json()).toEqual({ value: true });
    expect((await runner(t.token).records(listing, 'startMap', [b.sessionId, commit, 'default', 10])).status).toBe(403);
    const tracing = await takenJob(t.token, a, { trace: true });
    expect((await runner(t.token).records(tracing, 'recordFileDeps', [a.sessionId, 'test/a.js', deps])).status).toBe(200);
    expect((await runner(t.token).records(tracing, 'recordFileDeps', [b.sessionId, 'test/a.js', deps])).status).toBe(403);
    // Any job of the build reads the maps of its own repository.
    expect(await (await runner(t.token).records(job, 'loadMap', [a.sessionId, a.sessionId])).json()).toEqual({ value: { commit, files: [{ path: 'test/a.js', ...deps }] } });
    expect((await runner(t.token).records(job, 'loadMap', [b.sessionId, a.sessionId])).status).toBe(403);
  });

  it('gets no secrets for a build the trust rules deny them, and its own for one they allow', async () => {
    const denied = await runner(t.token).records(job, 'buildSecrets', [a.repoId]);
    expect(((await denied.json()) as { value: unknown }).value).toEqual({ values: {}, unreadable: [] });
    const trusted = await takenJob(t.token, a, { secrets: true });
    const allowed = await runner(t.token).records(trusted, 'buildSecrets', [a.repoId]);
    expect(((await allowed.json()) as { value: unknown }).value).toEqual({ values: { DEPLOY_KEY: 'deploy-123' }, unreadable: [] });
  });

  it("stores and reads its build's blobs, and no other build's", async () => {
    // A push to master: it may save master's cache entry.
    const saving = await takenJob(t.token, a, { cache: { readScopes: ['master'], writeScope: 'master' } });
    const put = (key: string, on = saving) =>
      fetch(`${h.url}/api/v1/runner/jobs/${on}/blobs/${key}`, { method: 'PUT', headers: { authorization: `Bearer ${t.token}`, 'content-type': 'application/octet-stream' }, body: 'entry bytes' });
    expect((await put(`caches/${a.repoId}/x.tgz`)).status).toBe(204);
    expect(await readFile(path.join(store, 'caches', String(a.repoId), 'x.tgz'), 'utf8')).toBe('entry bytes');
    expect((await put(`caches/${b.repoId}/x.tgz`)).status).toBe(403);
    expect((await put(`artifacts/${b.sessionId}/1/1`)).status).toBe(403);
    // An artifact it did not reserve.
    expect((await put(`artifacts/${a.sessionId}/1/999999`)).status).toBe(403);
    // Encoded, so that the client does not resolve it away: the API sees caches/<repo>/../../etc/passwd.
    expect((await put(`caches/${a.repoId}/..%2F..%2Fetc%2Fpasswd`)).status).toBe(400);
    const got = await fetch(`${h.url}/api/v1/runner/jobs/${saving}/blobs/caches/${a.repoId}/x.tgz`, { headers: { authorization: `Bearer ${t.token}` } });
    expect(await got.text()).toBe('entry bytes');

    // An entry names the blob now: nobody may replace it, and a build that may not save (a pull request's) writes nothing.
    const entry = await runner(t.token).records(saving, 'insertEntry', [{ repoId: a.repoId, scope: 'master', key: 'k1', family: 'f', size: 11, storeKey: `caches/${a.repoId}/x.tgz` }]);
    expect(entry.status).toBe(200);
    expect((await put(`caches/${a.repoId}/x.tgz`)).status).toBe(403);
    expect((await put(`caches/${a.repoId}/y.tgz`, job)).status).toBe(403);
  });

  it('saves cache entries only in its own write scope, and reads only the scopes it may', async () => {
    const saving = await takenJob(t.token, a, { cache: { readScopes: ['feature', 'master'], writeScope: 'feature' } });
    const entry = (scope: string, storeKey = `caches/${a.repoId}/z.tgz`) => ({ repoId: a.repoId, scope, key: 'k2', family: 'f', size: 1, storeKey });
    // A feature branch's build may not write master's entries (cache poisoning), nor name another repository's blob.
    expect((await runner(t.token).records(saving, 'insertEntry', [entry('master')])).status).toBe(403);
    expect((await runner(t.token).records(saving, 'insertEntry', [entry('feature', `caches/${b.repoId}/z.tgz`)])).status).toBe(403);
    expect((await runner(t.token).records(saving, 'insertEntry', [entry('feature')])).status).toBe(200);
    expect((await runner(t.token).records(saving, 'findExactEntry', [a.repoId, ['feature', 'master'], 'k1'])).status).toBe(200);
    expect((await runner(t.token).records(saving, 'findExactEntry', [a.repoId, ['release'], 'k1'])).status).toBe(403);
    // One that may not save may not evict either.
    expect((await runner(t.token).records(job, 'evictEntries', [a.repoId, 0, 1])).status).toBe(403);
  });

  it('hears which of its own builds ended, and nothing of the others (whose trees it must leave alone)', async () => {
    await h.db.pool.query("UPDATE sessions SET status = 'passed' WHERE id = ANY($1)", [[a.sessionId, b.sessionId]]);
    const res = await runner(t.token).call('POST', '/ended-sessions', { ids: [a.sessionId, b.sessionId, 999999] });
    expect(await res.json()).toEqual({ ended: [a.sessionId] });
    await h.db.pool.query("UPDATE sessions SET status = 'running' WHERE id = ANY($1)", [[a.sessionId, b.sessionId]]);
  });

  it("is not another token's", async () => {
    const other = await token('edge-2');
    expect((await runner(other.token).records(job, 'queueProgress', [a.sessionId])).status).toBe(404);
    expect((await runner(other.token).call('POST', `/jobs/${job}/heartbeat`, {})).status).toBe(404);
  });

  it('is refused everything once its token is revoked, and its running jobs fail at once', async () => {
    expect(await jobState(h.db.pool, job)).toMatchObject({ state: 'running' });
    expect((await h.admin('DELETE', `/api/v1/runner-tokens/${t.id}`)).statusCode).toBe(204);
    expect((await runner(t.token).records(job, 'queueProgress', [a.sessionId])).status).toBe(401);
    expect((await runner(t.token).call('POST', '/jobs/next', { runner: 'host-1', version: 'test', queues: ['q1'], wait_ms: 0 })).status).toBe(401);
    expect(await jobState(h.db.pool, job)).toMatchObject({ state: 'failed', output: { error: { message: "its runner's token was revoked", retryable: true } } });
    const listed = (await h.admin('GET', '/api/v1/runner-tokens')).json() as { runner_tokens: Array<{ id: number; revoked_at: string | null }> };
    expect(listed.runner_tokens.find((x) => x.id === t.id)!.revoked_at).toEqual(expect.any(String));
  });
});
