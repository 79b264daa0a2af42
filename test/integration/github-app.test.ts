/**
 * Sluice as a GitHub App (issue 38) through the API, against a fake GitHub held to its
 * documentation (test/support/fakeGitHubApp.ts; `problems` must stay empty), laid out as a GitHub
 * Enterprise Server (API under `/api/v3`): the manifest flow and its signed state, installations
 * followed by their events, a repository activated with a token GitHub scopes to it, pushes
 * through the app's one webhook (a forged one refused), a checkout over HTTP with a read-only
 * installation token for that one repository, check runs with annotations in batches of 50, and
 * deactivating.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { checkoutTokens } from '../../src/app/githubApps';
import { insertJob } from '../../src/db/runnerJobs';
import { attemptStatus } from '../../src/delivery/postStatus';
import { parseAllowList } from '../../src/ip/ranges';
import { fetchRepository } from '../../src/steps/checkout/git';
import { startFakeGitHubApp, type FakeGitHubApp } from '../support/fakeGitHubApp';
import { createBareRepo, pushCommit } from '../support/gitRepo';
import { startApiHarness, type ApiHarness } from '../support/apiApp';
import { eventually } from '../support/wait';

let h: ApiHarness;
let github: FakeGitHubApp;
let tmp: string;
let bare: string;
const org = 'ghapp';
let appId: number;
let repo: { id: number; pull_url: string };

beforeAll(async () => {
  tmp = await mkdtemp(path.join(tmpdir(), 'sluice-ghapp-'));
  bare = path.join(tmp, 'shop.git');
  await createBareRepo(bare, { 'test/a_test.sh': { content: 'exit 0\n' } }, 'first');
  h = await startApiHarness({ config: { webhookAllow: parseAllowList('127.0.0.0/8') } });
  github = await startFakeGitHubApp({
    repos: [
      { id: 501, fullName: 'acme/shop', defaultBranch: 'master', bare },
      { id: 502, fullName: 'acme/site', defaultBranch: 'main' },
      { id: 503, fullName: 'acme/docs', defaultBranch: 'main' },
    ],
    via: (url) => url.replace(h.config.baseUrl, h.url),
  });
  expect((await h.admin('POST', '/api/v1/orgs', { name: org, email: 'ci@example.com' })).statusCode).toBe(201);
  expect((await h.admin('POST', '/api/v1/orgs', { name: 'other', email: 'ci@example.com' })).statusCode).toBe(201);
});
afterAll(async () => {
  await h?.close();
  await github?.close();
  await rm(tmp, { recursive: true, force: true });
});
afterEach(() => expect(github.problems).toEqual([]));

const CLI = path.join(__dirname, '..', '..', 'src', 'cli', 'main.ts');

/** The CLI as its own process. */
function sluice(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', CLI, ...args], { env: { PATH: process.env.PATH, HOME: '/nonexistent', SLUICE_URL: h.url, SLUICE_TOKEN: h.config.adminToken }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

/** What a browser does with the manifest form: posts it, and follows GitHub's redirect back (not followed here: its URL is the answer). */
async function postManifest(form: { form_url: string; manifest: unknown }): Promise<URL> {
  const res = await fetch(form.form_url, { method: 'POST', body: new URLSearchParams({ manifest: JSON.stringify(form.manifest) }), redirect: 'manual' });
  expect(res.status).toBe(302);
  return new URL(res.headers.get('location')!);
}

describe('a GitHub App made with the manifest flow', () => {
  it('gives a manifest asking for what it needs, and keeps the app GitHub makes from it', async () => {
    const started = await h.admin('POST', `/api/v1/orgs/${org}/github-apps/manifest`, { web_url: github.webUrl, owner: 'acme' });
    expect(started.statusCode).toBe(200);
    const form = started.json();
    expect(form.form_url).toMatch(new RegExp(`^${github.webUrl}/organizations/acme/settings/apps/new\\?state=`));
    expect(form.manifest).toMatchObject({
      name: `Sluice ${org}`,
      public: false,
      hook_attributes: { url: expect.stringMatching(new RegExp(`^${h.config.baseUrl}/api/v1/github-apps/hooks/[A-Za-z0-9_-]+$`)) },
      redirect_url: `${h.config.baseUrl}/orgs/${org}/github-apps/created`,
      default_permissions: { contents: 'read', metadata: 'read', checks: 'write', pull_requests: 'read' },
      default_events: ['push', 'pull_request', 'create', 'delete'],
    });
    const back = await postManifest(form);
    const code = back.searchParams.get('code')!;
    const state = back.searchParams.get('state')!;
    expect(state).toBe(form.state);

    // A state tampered with, or another organization's, is refused before GitHub is asked.
    const forged = await h.admin('POST', `/api/v1/orgs/${org}/github-apps`, { code, state: `${state.split('.')[0]}.AAAA` });
    expect([forged.statusCode, forged.json().field]).toEqual([400, 'state']);
    const elsewhere = await h.admin('POST', `/api/v1/orgs/other/github-apps`, { code, state });
    expect([elsewhere.statusCode, elsewhere.json().field]).toEqual([400, 'state']);

    const made = await h.admin('POST', `/api/v1/orgs/${org}/github-apps`, { code, state });
    expect(made.statusCode).toBe(201);
    expect(made.json()).toMatchObject({ app_id: 4242, web_url: github.webUrl, api_url: `${github.webUrl}/api/v3`, slug: `sluice-${org}`, install_url: `${github.webUrl}/apps/sluice-${org}/installations/new`, hook_url: form.manifest.hook_attributes.url });
    appId = made.json().id;
    // Nothing secret is shown: not the key, not the webhook secret.
    expect(made.body).not.toContain(github.app()!.webhookSecret);
    expect(made.body).not.toContain('PRIVATE KEY');
    // GitHub's code is good once.
    const again = await h.admin('POST', `/api/v1/orgs/${org}/github-apps`, { code, state });
    expect([again.statusCode, again.json().field]).toEqual([400, 'code']);
  });

  it('follows installations and their repositories through the app’s webhook; a forged delivery is refused', async () => {
    const { installationId, status } = await github.install('acme', [501, 502]);
    expect(status).toBe(200);
    expect(await github.addRepos(installationId, [503])).toBe(200);
    const detail = (await h.admin('GET', `/api/v1/orgs/${org}/github-apps/${appId}`)).json();
    expect(detail.installations).toEqual([expect.objectContaining({ installation_id: installationId, account: 'acme', suspended: false })]);
    expect(detail.repositories.map((r: { full_name: string }) => r.full_name)).toEqual(['acme/docs', 'acme/shop', 'acme/site']);

    expect(await github.push(501, { ref: 'refs/heads/master', before: '1'.repeat(40), after: '2'.repeat(40) }, { secret: 'a guess' })).toBe(401);
    // The app's page reads GitHub's own log of its last delivery.
    expect((await h.admin('GET', `/api/v1/orgs/${org}/github-apps/${appId}`)).json()).toMatchObject({ site_last_delivery: { status: 401, ok: false, event: 'push' }, site_error: null });
  });

  it('activates a repository GitHub says the app may read: pulled over HTTPS, no deploy key or hook of its own', async () => {
    const res = await h.admin('POST', `/api/v1/orgs/${org}/github-apps/${appId}/repos`, { site_repo_id: 501 });
    expect(res.statusCode).toBe(201);
    repo = res.json();
    expect(res.json()).toMatchObject({ name: 'shop', pull_url: `${github.webUrl}/acme/shop.git`, default_branch: 'master' });
    // GitHub was asked with a token for that one repository.
    expect([...github.tokens.values()].map((t) => t.repositoryIds)).toEqual([[501]]);
    expect((await h.admin('POST', `/api/v1/orgs/${org}/github-apps/${appId}/repos`, { site_repo_id: 501 })).json().id).toBe(repo.id);
    const missing = await h.admin('POST', `/api/v1/orgs/${org}/github-apps/${appId}/repos`, { site_repo_id: 999 });
    expect([missing.statusCode, missing.json().field]).toEqual([404, 'site_repo_id']);
    expect((await h.admin('GET', `/api/v1/repos/${repo.id}/github-app`)).json()).toMatchObject({ site_repo_id: 501, full_name: 'acme/shop', app: { id: appId } });
  });

  it('does the same from the command line: lists the apps and their repositories, activates, deactivates, writes the manifest’s page', async () => {
    const apps = await sluice(['repos', 'apps', org]);
    expect(apps).toMatchObject({ code: 0, stderr: '' });
    expect(apps.stdout).toMatch(new RegExp(`${appId}\\s+Sluice ${org}\\s+${github.webUrl}\\s+acme`));
    const listed = await sluice(['repos', 'app', org, String(appId)]);
    expect(listed.stdout).toMatch(/501\s+acme\/shop\s+acme\s+shop/);
    expect(listed.stdout).toMatch(/503\s+acme\/docs\s+acme\s+can activate/);
    const activated = await sluice(['repos', 'app-activate', org, String(appId), '503', '--name', 'handbook']);
    expect(activated).toMatchObject({ code: 0 });
    expect(activated.stdout).toContain(`activated ${org}/handbook`);
    expect(await sluice(['repos', 'app-deactivate', `${org}/handbook`])).toMatchObject({ code: 0, stdout: `${org}/handbook no longer builds through its GitHub App\n` });
    const html = path.join(tmp, 'manifest.html');
    expect(await sluice(['repos', 'app-manifest', org, '--web-url', github.webUrl, '--html', html])).toMatchObject({ code: 0 });
    const page = await readFile(html, 'utf8');
    expect(page).toContain(`action="${github.webUrl}/settings/apps/new?state=`);
    expect(page).toContain('name="manifest" value="{&quot;name&quot;');
  });

  it('a push through the app’s webhook builds; one of a repository Sluice does not build is answered, not built', async () => {
    expect((await h.admin('POST', `/api/v1/repos/${repo.id}/suites`, { branch: 'master', test_pattern: 'test/*.sh' })).statusCode).toBe(201);
    const before = h.enqueued.length;
    expect(await github.push(501, { ref: 'refs/heads/master', before: '1'.repeat(40), after: '2'.repeat(40) })).toBe(200);
    expect(h.enqueued.length).toBe(before + 1);
    await eventually('the hook’s arrival', async () => (await h.admin('GET', `/api/v1/repos/${repo.id}/github-app`)).json().last_hook_at, 5_000);
    expect(await github.push(502, { ref: 'refs/heads/main', before: '1'.repeat(40), after: '3'.repeat(40) })).toBe(200);
    expect(h.enqueued.length).toBe(before + 1);
  });

  it('checks out over HTTP with a read-only token minted for that repository alone', async () => {
    const head = await pushCommit(bare, { 'test/b_test.sh': { content: 'exit 0\n' } }, 'second');
    const token = await checkoutTokens({ pool: h.db.pool, config: h.config })(repo.id);
    expect(token).toMatch(/^ghs_/);
    expect(github.tokens.get(token!)).toMatchObject({ repositoryIds: [501], permissions: { contents: 'read' } });
    const workdir = path.join(tmp, 'tree');
    const got = await fetchRepository({ pullUrl: repo.pull_url, privateKey: '', httpToken: token, workdir, branch: 'master', head: 'HEAD' });
    expect(got.commitId).toBe(head);
    expect(github.clones.map((c) => c.repo)).toContain('acme/shop');
    // A wrong token is refused by the site, and the error never shows the token.
    await expect(fetchRepository({ pullUrl: repo.pull_url, privateKey: '', httpToken: 'ghs_wrong0000000000000000000', workdir: path.join(tmp, 'tree2'), branch: 'master', head: 'HEAD' })).rejects.toThrow(
      expect.objectContaining({ message: expect.not.stringContaining('ghs_wrong') }),
    );
    // Nor does a token make git take an SSH or file URL.
    await expect(fetchRepository({ pullUrl: `file://${bare}`, privateKey: '', httpToken: token, workdir: path.join(tmp, 'tree3'), branch: 'master', head: 'HEAD' })).rejects.toMatchObject({ reason: 'invalid-input' });
  });

  it('a runner that holds only a token gets a checkout token with its job’s repository, minted for it', async () => {
    const made = (await h.admin('POST', '/api/v1/runner-tokens', { name: 'keyless' })).json() as { token: string };
    const sessionId = h.enqueued.at(-1)!.sessionId;
    await insertJob(h.db.pool, { queue: 'q1', kind: 'checkout', activityId: 'a1', runId: 'run-1', attempt: 1, workflowId: `wf-${sessionId}`, sessionId, input: { tree: { sessionId } } }, 10_000);
    const call = (url: string, body: unknown) =>
      fetch(`${h.url}/api/v1/runner${url}`, { method: 'POST', headers: { authorization: `Bearer ${made.token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const job = ((await (await call('/jobs/next', { runner: 'host-1', version: 'test', queues: ['q1'], wait_ms: 0 })).json()) as { job: { id: number } }).job.id;
    const res = await call(`/jobs/${job}/records/pullSource`, { args: [repo.id] });
    expect(res.status).toBe(200);
    const source = JSON.stringify(await res.json());
    const minted = [...github.tokens.entries()].at(-1)!;
    expect(source).toContain(minted[0]);
    expect(minted[1]).toMatchObject({ repositoryIds: [501], permissions: { contents: 'read' } });
  });

  it('reports through check runs: in progress, then completed with a summary and every failing test annotated, 50 a request', async () => {
    const sessionId = h.enqueued.at(-1)!.sessionId;
    const commitId = 'a'.repeat(40);
    await h.db.pool.query(`UPDATE sessions SET counts = '{"passed": 3, "failed": 1}' WHERE id = $1`, [sessionId]);
    for (let i = 1; i <= 60; i++) {
      await h.db.pool.query(
        `INSERT INTO test_cases (session_id, file, test_file, classname, name, status, message, failure_file, failure_line) VALUES ($1, '', 'test/bad.sh', 'bad', $2, 'failed', 'boom', 'test/bad.sh', $3)`,
        [sessionId, `case ${i}`, i],
      );
    }
    const deps = { pool: h.db.pool, secretKey: h.config.secretKey, allow: h.config.webhookAllow };
    const spec = { sessionId, commitId, context: 'sluice/default', targetUrl: 'https://ci.example.test/builds/1', ref: 'master', attempt: 1, maxAttempts: 3 };
    expect(await attemptStatus(deps, { ...spec, phase: 'running', description: `#${sessionId} running` })).toMatchObject({ outcome: 'delivered', state: 'in_progress' });
    expect(await attemptStatus(deps, { ...spec, phase: 'failed', description: `#${sessionId} failed: 1 of 4 test files failed` })).toMatchObject({ outcome: 'delivered', state: 'failure' });

    expect(github.checkRuns).toHaveLength(1);
    const run = github.checkRuns[0]!;
    expect(run).toMatchObject({ repo: 'acme/shop', name: 'sluice/default', head_sha: commitId, status: 'completed', conclusion: 'failure', details_url: spec.targetUrl, external_id: String(sessionId) });
    expect(run.output!.summary).toContain('| failed | 1 |');
    expect(run.output!.summary).toContain(`[The build on Sluice](${spec.targetUrl})`);
    expect(run.annotations).toHaveLength(60);
    expect(run.annotations[59]).toEqual({ path: 'test/bad.sh', start_line: 60, end_line: 60, annotation_level: 'failure', title: 'bad case 60', message: 'boom' });
    // One POST (in progress), one PATCH completing it with 50 annotations, one PATCH with the last 10.
    expect(run.requests.map((r) => [r.status ?? null, ((r.output as { annotations?: unknown[] } | undefined)?.annotations ?? []).length])).toEqual([
      ['in_progress', 0],
      ['completed', 50],
      [null, 10],
    ]);
    // Each request had its own token, for checks only, on that repository.
    const checkTokens = [...github.tokens.values()].filter((t) => t.permissions.checks);
    expect(checkTokens).toHaveLength(2);
    expect(checkTokens.every((t) => t.repositoryIds.join() === '501' && t.permissions.checks === 'write' && !t.permissions.contents)).toBe(true);
    // In the log with the statuses.
    const log = (await h.admin('GET', `/api/v1/repos/${repo.id}/statuses`)).json() as { provider: string; state: string; outcome: string }[];
    expect(log.map((a) => [a.provider, a.state, a.outcome])).toEqual([
      ['github-app', 'failure', 'delivered'],
      ['github-app', 'in_progress', 'delivered'],
    ]);
  });

  it('deactivating stops the tokens; forgetting the app removes it', async () => {
    expect((await h.admin('DELETE', `/api/v1/repos/${repo.id}/github-app`)).statusCode).toBe(204);
    expect(await checkoutTokens({ pool: h.db.pool, config: h.config })(repo.id)).toBeUndefined();
    expect((await h.admin('GET', `/api/v1/repos/${repo.id}/github-app`)).statusCode).toBe(404);
    expect((await h.admin('DELETE', `/api/v1/orgs/${org}/github-apps/${appId}`)).statusCode).toBe(204);
    expect((await h.admin('GET', `/api/v1/orgs/${org}/github-apps`)).json()).toEqual([]);
    const logs = h.logs.join('\n');
    for (const t of github.tokens.keys()) expect(logs).not.toContain(t);
    expect(logs).not.toContain(github.app()!.webhookSecret);
  });
});
