/**
 * Commit statuses end to end (issue 13): real builds of repositories configured for GitHub's
 * status API, pointed at a local server that plays GitHub (it checks the documented request:
 * path, method, Bearer token, state, target_url, context). A build posts `pending` when its
 * tests start and its outcome when it ends, in that order, linking its report; a skipped
 * build posts nothing; a plan posts its own status and one per part; an API that is down
 * holds up neither the build nor its `stop`.
 */
import { pushCommit } from '../support/gitRepo';
import { startReceiver, type ReceivedRequest, type Receiver, type Reply } from '../support/receiver';
import { script, World, type Repo } from '../support/world';
import { eventually } from '../support/wait';

let w: World;
let github: Receiver;
const TOKEN = 'ghp_e2eStatusT0ken';
let down = new Set<string>();

/** GitHub's status API as documented, for any repository; 503 for those `down` names. */
function fakeGitHub(req: ReceivedRequest): Reply {
  const m = /^\/api\/v3\/repos\/([^/]+\/[^/]+)\/statuses\/([0-9a-f]{40})$/.exec(req.path);
  if (req.method !== 'POST' || !m) return { status: 404, body: '{"message":"Not Found"}' };
  if (down.has(m[1]!)) return { status: 503, body: 'unavailable' };
  if (req.headers.authorization !== `Bearer ${TOKEN}`) return { status: 401, body: '{"message":"Bad credentials"}' };
  const body = req.json as { state?: string; target_url?: string; context?: string } | undefined;
  if (!body || !['pending', 'success', 'failure', 'error'].includes(body.state ?? '')) return { status: 422, body: '{"message":"Validation Failed"}' };
  return { status: 201, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ state: body.state, context: body.context }) };
}

beforeAll(async () => {
  w = await World.start();
  github = await startReceiver();
  github.respondWith(fakeGitHub);
});
afterAll(async () => {
  await w?.stop();
  await github?.close();
});

/** A repository whose statuses go to the local GitHub as `acme/<name>`. */
async function githubRepo(files: Parameters<World['makeRepo']>[0], suite: Record<string, unknown> = { branch: 'master', test_pattern: '*_test.sh' }): Promise<Repo> {
  const repo = await w.makeRepo(files, { suite });
  const view = await w.sluice.admin('PATCH', `/api/v1/repos/${repo.id}`, {
    status_provider: 'github',
    status_api_url: `http://127.0.0.1:${github.port}/api/v3`,
    status_repo: `acme/${repo.name}`,
    status_token: TOKEN,
  });
  expect(view).toMatchObject({ status_provider: 'github', status_token_set: true });
  return repo;
}

interface Posted {
  state: string;
  context: string;
  target_url: string;
  description: string;
  sha: string;
  status: number | null;
}

/** The statuses the local GitHub got for a repository, in order of arrival. */
function postedFor(repo: Repo): Posted[] {
  return github.requests
    .filter((r) => r.path.startsWith(`/api/v3/repos/acme/${repo.name}/statuses/`))
    .map((r) => ({ ...(r.json as Omit<Posted, 'sha' | 'status'>), sha: r.path.split('/').at(-1)!, status: null }));
}

describe('commit statuses on GitHub', () => {
  it('a passing build: pending when its tests start, then success, each linking its report', async () => {
    const repo = await githubRepo({ 'a_test.sh': script('true') });
    const { session } = await w.build(repo);
    const stop = (await w.eventsOf(session)).at(-1)!;
    expect(stop.status).toBe('passed');

    const posted = await eventually('two statuses', async () => (postedFor(repo).length >= 2 ? postedFor(repo) : null), 30_000);
    expect(posted.map((p) => p.state)).toEqual(['pending', 'success']);
    for (const p of posted) {
      expect(p).toMatchObject({ context: 'sluice/default', target_url: stop.url, sha: stop.commit_id });
    }
    expect(posted[1]!.description).toBe(`#${session} passed: 1 test file`);

    // Logged like webhook deliveries, newest first, and on the session.
    // (Each row is written once the answer is in, a moment after the server saw the request.)
    const log = await eventually(
      'two log rows',
      async () => {
        const rows = await w.sluice.admin<Array<Record<string, unknown>>>('GET', `/api/v1/repos/${repo.id}/statuses`);
        return rows.length >= 2 ? rows : null;
      },
      10_000,
    );
    expect(log.map((r) => [r.state, r.outcome, r.status_code])).toEqual([
      ['success', 'delivered', 201],
      ['pending', 'delivered', 201],
    ]);
    expect(JSON.stringify(log)).not.toContain(TOKEN);
    expect((await w.session(session)).commit_statuses).toHaveLength(2);
  });

  it('a failing build: pending, then failure', async () => {
    const repo = await githubRepo({ 'a_test.sh': script('true'), 'b_test.sh': script('exit 1') });
    const { session } = await w.build(repo);
    const stop = (await w.eventsOf(session)).at(-1)!;
    expect(stop.status).toBe('failed');
    const posted = await eventually('two statuses', async () => (postedFor(repo).length >= 2 ? postedFor(repo) : null), 30_000);
    expect(posted.map((p) => [p.state, p.description])).toEqual([
      ['pending', `#${session} running`],
      ['failure', `#${session} failed: 1 of 2 test files failed`],
    ]);
    expect(posted.every((p) => p.target_url === stop.url && p.sha === stop.commit_id)).toBe(true);
  });

  it('a build skipped as already built leaves the commit’s status alone; a new commit gets its own', async () => {
    const repo = await githubRepo({ 'a_test.sh': script('true') });
    const first = await w.build(repo);
    await w.eventsOf(first.session);
    await eventually('the first build’s two statuses', async () => postedFor(repo).length >= 2, 30_000);

    const again = await w.build(repo);
    expect((await w.eventsOf(again.session)).at(-1)!.status).toBe('skipped');
    // Whatever the skipped session would post is scheduled before its `stop` goes out.
    await new Promise((r) => setTimeout(r, 1_000));
    expect(postedFor(repo)).toHaveLength(2);

    const commit = await pushCommit(repo.bare, { 'b_test.sh': script('true') }, 'second commit');
    const next = await w.build(repo);
    const stop = (await w.eventsOf(next.session)).at(-1)!;
    expect(stop).toMatchObject({ status: 'passed', commit_id: commit });
    const posted = await eventually('four statuses', async () => (postedFor(repo).length >= 4 ? postedFor(repo) : null), 30_000);
    expect(posted.slice(2).map((p) => [p.state, p.sha])).toEqual([
      ['pending', commit],
      ['success', commit],
    ]);
  });

  it('a plan: `sluice` for the whole build, `sluice/<profile>` for each part', async () => {
    const repo = await githubRepo(
      { 'unit/a_test.sh': script('true'), 'lint/l_test.sh': script('exit 1') },
      {
        branch: 'master',
        test_pattern: 'nothing/*',
        profiles: [
          { name: 'unit', test_pattern: 'unit/*_test.sh' },
          { name: 'lint', test_pattern: 'lint/*_test.sh' },
        ],
        plan: ['unit', 'lint'],
      },
    );
    const { session } = await w.build(repo);
    const stop = (await w.eventsOf(session)).at(-1)!;
    expect(stop.status).toBe('failed');
    const posted = await eventually('six statuses', async () => (postedFor(repo).length >= 6 ? postedFor(repo) : null), 30_000);
    const byContext = (context: string) => posted.filter((p) => p.context === context).map((p) => p.state);
    expect(byContext('sluice')).toEqual(['pending', 'failure']);
    expect(byContext('sluice/unit')).toEqual(['pending', 'success']);
    expect(byContext('sluice/lint')).toEqual(['pending', 'failure']);
    expect(posted.filter((p) => p.context === 'sluice').every((p) => p.target_url === stop.url)).toBe(true);
  });

  it('a status API that is down holds up neither the build nor its stop; the log says it is retrying', async () => {
    const repo = await githubRepo({ 'a_test.sh': script('true') });
    down = new Set([`acme/${repo.name}`]);
    try {
      const started = Date.now();
      const { session } = await w.build(repo);
      const stop = (await w.eventsOf(session)).at(-1)!;
      expect(stop.status).toBe('passed');
      expect(Date.now() - started).toBeLessThan(30_000);
      const log = await eventually(
        'a retrying attempt',
        async () => {
          const rows = await w.sluice.admin<Array<Record<string, unknown>>>('GET', `/api/v1/repos/${repo.id}/statuses`);
          return rows.some((r) => r.outcome === 'retrying') ? rows : null;
        },
        30_000,
      );
      expect(log[log.length - 1]).toMatchObject({ state: 'pending', status_code: 503, outcome: 'retrying', error: 'HTTP 503: unavailable' });
    } finally {
      down = new Set();
    }
  });
});
