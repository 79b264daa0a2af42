/**
 * `GET /api/v1/sessions/:id/output` (api/output.ts) over real HTTP, on a real PostgreSQL, with a
 * real process writing its live output (steps/liveOutput.ts) while the request follows it: NDJSON
 * and server-sent events, `follow` until the session is over, `after` and Last-Event-ID to
 * resume, and its refusals (no token, an unknown session, a bad parameter).
 */
import http from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { liveOutput } from '../../src/steps/liveOutput';
import { runProcess } from '../../src/steps/isolation/process';
import { startApiHarness, type ApiHarness } from '../support/apiApp';
import { insertPostSession } from '../support/postSession';
import { eventually } from '../support/wait';
import { pgBuildRecords } from '../../src/db/buildRecords';

let h: ApiHarness;
let tmp: string;

beforeAll(async () => {
  h = await startApiHarness();
  tmp = await mkdtemp(join(tmpdir(), 'sluice-api-output-'));
});
afterAll(async () => {
  await h?.close();
  await rm(tmp, { recursive: true, force: true });
});

const session = async () => (await insertPostSession(h.db.pool, h.config.secretKey)).sessionId;

/** Runs `script` as test file `path` of worker `worker`, its output live. */
async function runFile(sessionId: number, path: string, script: string, secrets: string[] = []) {
  const live = liveOutput(pgBuildRecords(h.db.pool, h.config.secretKey), sessionId, { kind: 'file', worker: 1, path, attempt: 1, run: 1 }, secrets);
  const result = await runProcess({ argv: ['/bin/sh', '-c', script], viaShell: true, cwd: tmp, env: { PATH: '/usr/bin:/bin' }, program: 'sh', dirs: { tree: tmp, home: tmp }, timeoutMs: 30_000, onOutput: live.onOutput });
  await live.end(result);
  return result;
}

/** The session over, long enough ago that following stops at once (no post_build hook to wait for). */
async function endSession(sessionId: number): Promise<void> {
  await h.db.pool.query(`UPDATE sessions SET status = 'passed', timing = jsonb_build_object('done', extract(epoch from now()) - 60) WHERE id = $1`, [sessionId]);
}

interface Stream {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** Everything received so far. */
  text(): string;
  ended: Promise<void>;
  close(): void;
}

/** A streaming GET with the admin token: what arrives is readable while the response goes on. */
function open(path: string, headers: Record<string, string> = {}): Promise<Stream> {
  return new Promise((resolve, reject) => {
    const req = http.get(new URL(path, h.url), { headers: { authorization: `Bearer ${h.config.adminToken}`, ...headers } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      const ended = new Promise<void>((done) => res.on('close', () => done()));
      resolve({ status: res.statusCode ?? 0, headers: res.headers, text: () => text, ended, close: () => req.destroy() });
    });
    req.on('error', reject);
  });
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
const ndjson = (text: string): any[] => text.split('\n').filter(Boolean).map((l) => JSON.parse(l));

describe('GET /api/v1/sessions/:id/output', () => {
  it('follows a running file as NDJSON: lines while it runs, its end, then done when the session is over', async () => {
    const id = await session();
    const stream = await open(`/api/v1/sessions/${id}/output?follow=true`);
    expect(stream.status).toBe(200);
    expect(stream.headers['content-type']).toMatch(/^application\/x-ndjson/);
    let finished = false;
    const running = runFile(id, 'test/slow_test.sh', 'for i in 1 2 3 4 5 6 7 8; do echo "line $i of slow"; sleep 0.25; done').then((r) => {
      finished = true;
      return r;
    });
    // A line arrives while the file still runs.
    await eventually('a line of the running file', async () => stream.text().includes('line 2 of slow'), 10_000);
    expect(finished).toBe(false);
    await running;
    await eventually('the end of the file', async () => ndjson(stream.text()).some((e) => e.end), 10_000);
    await endSession(id);
    await stream.ended;

    const events = ndjson(stream.text());
    expect(events.at(-1)).toEqual({ event: 'done', status: 'passed' });
    const output = events.filter((e) => e.event === 'output');
    expect(output.map((e) => e.text).join('')).toBe(Array.from({ length: 8 }, (_, i) => `line ${i + 1} of slow\n`).join(''));
    expect(output.map((e) => e.seq)).toEqual(output.map((_, i) => i + 1));
    expect(output[0].source).toEqual({ key: 'file/1/1/1/test/slow_test.sh', kind: 'file', path: 'test/slow_test.sh', worker: 1, attempt: 1, run: 1 });
    expect(output.at(-1).end).toMatchObject({ status: 'passed', exit_code: 0 });
  });

  it('as server-sent events, each with its seq as id; after= and Last-Event-ID resume; without follow it ends', async () => {
    const id = await session();
    await runFile(id, 'test/a_test.sh', 'echo "a1 s3cret-value-9"; sleep 0.4; echo a2; sleep 0.4; echo a3', ['s3cret-value-9']);
    await endSession(id);

    const all = await open(`/api/v1/sessions/${id}/output`, { accept: 'text/event-stream' });
    await all.ended;
    expect(all.headers['content-type']).toMatch(/^text\/event-stream/);
    const ids = [...all.text().matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
    expect(ids.length).toBeGreaterThanOrEqual(2);
    expect(ids).toEqual(ids.map((_, i) => i + 1));
    expect(all.text()).toContain('a1 ****');
    expect(all.text()).not.toContain('s3cret');
    expect(all.text()).toMatch(/^event: output$/m);

    const after = await open(`/api/v1/sessions/${id}/output?after=${ids[0]}`, { accept: 'text/event-stream' });
    await after.ended;
    expect([...after.text().matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]))).toEqual(ids.slice(1));
    const resumed = await open(`/api/v1/sessions/${id}/output`, { accept: 'text/event-stream', 'last-event-id': String(ids.at(-2)) });
    await resumed.ended;
    expect([...resumed.text().matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]))).toEqual(ids.slice(-1));

    // Following an ended session: what there is, then done.
    const followed = await open(`/api/v1/sessions/${id}/output?follow=1&after=${ids.at(-1)}`);
    await followed.ended;
    expect(ndjson(followed.text())).toEqual([{ event: 'done', status: 'passed' }]);
  });

  it('refuses what it cannot serve: no token 401, an unknown session 404, a bad parameter 400 naming it', async () => {
    const id = await session();
    expect((await h.request({ method: 'GET', url: `/api/v1/sessions/${id}/output` })).statusCode).toBe(401);
    const unknown = await h.admin('GET', '/api/v1/sessions/99999999/output');
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toMatchObject({ error: 'not found' });
    for (const [query, field] of [
      ['follow=yes', 'follow'],
      ['after=-1', 'after'],
      ['after=abc', 'after'],
      ['folow=true', 'folow'],
    ]) {
      const res = await h.admin('GET', `/api/v1/sessions/${id}/output?${query}`);
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ error: 'invalid request', field });
    }
    const badId = await h.request({ method: 'GET', url: `/api/v1/sessions/${id}/output`, headers: { authorization: `Bearer ${h.config.adminToken}`, 'last-event-id': 'x' } });
    expect(badId.statusCode).toBe(400);
    expect(badId.json()).toMatchObject({ field: 'Last-Event-ID' });
  });
});
