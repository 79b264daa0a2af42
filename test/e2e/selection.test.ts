/**
 * Commit selection end to end (spec §1): real GitHub hook payloads (from
 * @octokit/webhooks-examples, adjusted to the repository's branch and commits) through the real
 * API, Temporal, worker and SSH git server.
 */
import examples from '@octokit/webhooks-examples';
import { git, pushCommit } from '../support/gitRepo';
import { eventually } from '../support/sluice';
import { script, World, type Repo } from '../support/world';

let w: World;
beforeAll(async () => {
  w = await World.start();
});
afterAll(() => w?.stop());

function example(event: string, pick: (e: Record<string, unknown>) => boolean): Record<string, unknown> {
  const found = (examples.find((d) => d.name === event)!.examples as unknown as Record<string, unknown>[]).find(pick);
  if (!found) throw new Error(`no ${event} example`);
  return structuredClone(found);
}

/** GitHub's push example, made to say that `head` (with `message`) was pushed to `branch`. */
function pushHook(branch: string, head: string, message: string): Record<string, unknown> {
  const body = example('push', (e) => e.ref === 'refs/heads/master');
  const commit = { ...(body.head_commit as Record<string, unknown>), id: head, message, author: { name: 'Dev One', email: 'dev1@acme.test', username: 'dev1' } };
  return { ...body, ref: `refs/heads/${branch}`, before: '1'.repeat(40), after: head, created: false, deleted: false, head_commit: commit, commits: [commit] };
}

function deleteHook(branch: string): Record<string, unknown> {
  return { ...example('delete', () => true), ref: branch, ref_type: 'branch' };
}

async function github(repo: Repo, event: string, body: unknown): Promise<{ status: number; text: string }> {
  const res = await fetch(repo.webhook_url.replace('/1/builds/', '/1/github/'), {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-github-event': event, 'x-github-delivery': crypto.randomUUID(), 'user-agent': 'GitHub-Hookshot/e2e' },
    body: JSON.stringify(body),
  });
  return { status: res.status, text: await res.text() };
}

function accepted(res: { status: number; text: string }): { guid: string; status_uri: string } {
  if (res.status !== 200) throw new Error(`hook answered ${res.status}: ${res.text}`);
  const body = JSON.parse(res.text) as { status: number; guid: string; status_uri: string };
  expect(body).toEqual({ status: 0, guid: expect.any(String), status_uri: `${w.sluice.url}/ci_events/${body.guid}/guid` });
  return body;
}

async function status(uri: string): Promise<{ decision: string; reason: string | null; recorded: boolean; sessions: { session: number; status: string }[] }> {
  return (await (await fetch(uri)).json()) as never;
}

async function sessionsOf(repo: Repo): Promise<number> {
  const { rows } = await w.sluice.pool.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM sessions s JOIN suites su ON su.id = s.suite_id WHERE su.repo_id = $1',
    [repo.id],
  );
  return rows[0]!.n;
}

async function branch(repo: Repo, name: string) {
  const list = await w.sluice.admin<Array<{ name: string; hidden: boolean; enabled: boolean; locked_visible: boolean; has_suite: boolean }>>(
    'GET',
    `/api/v1/repos/${repo.id}/branches`,
  );
  return list.find((b) => b.name === name);
}

const files = { 'tests/ok_test.sh': script('echo ok') };
const suite = (b: string) => ({ branch: b, test_pattern: 'tests/*_test.sh' });

describe('a GitHub push hook', () => {
  it('builds the pushed commit and reports it', async () => {
    const repo = await w.makeRepo(files, { suite: suite('master') });
    const head = await pushCommit(repo.bare, { 'tests/ok_test.sh': script('echo still ok') }, 'Add a feature', 'master', {
      author: { name: 'Dev One', email: 'dev1@acme.test' },
    });
    const { guid, status_uri } = accepted(await github(repo, 'push', pushHook('master', head, 'Add a feature')));
    const built = await eventually('the session to finish', async () => {
      const s = await status(status_uri);
      return s.sessions[0] && ['passed', 'failed', 'error', 'skipped'].includes(s.sessions[0].status) ? s : undefined;
    });
    expect(built).toMatchObject({ decision: 'build', reason: null, sessions: [{ status: 'passed' }] });
    const events = await w.eventsOf(built.sessions[0]!.session);
    expect(events.at(-1)).toMatchObject({ event: 'stop', guid, status: 'passed', commit_id: head, branch: 'master' });
  });
});

describe('skip tags', () => {
  it('a [no ci] commit is answered 200 with a guid, recorded as a skip with the reason, and not built', async () => {
    const repo = await w.makeRepo(files, { suite: suite('master') });
    const head = await pushCommit(repo.bare, { 'README.md': { content: 'docs' } }, '[no ci] Update the docs');
    const { status_uri } = accepted(await github(repo, 'push', pushHook('master', head, '[no ci] Update the docs')));
    expect(await status(status_uri)).toMatchObject({
      decision: 'skip',
      reason: `skip tag [no ci] in the first line of the head commit's message (${head.slice(0, 12)})`,
      sessions: [],
    });
    // A build that was queued would show up within moments; none does, and no receiver hears of one.
    await new Promise((r) => setTimeout(r, 1500));
    expect(await sessionsOf(repo)).toBe(0);
    const repoEvents = w.receiver.requests.filter((r) => (r.json as { repository?: { name?: string } })?.repository?.name === repo.name);
    expect(repoEvents).toEqual([]);
  });
});

describe('branch blacklist', () => {
  it('a blacklisted branch is dropped with 422 DROPPED, even with a suite', async () => {
    const repo = await w.makeRepo(files, { suite: suite('master') });
    await w.sluice.admin('POST', `/api/v1/repos/${repo.id}/suites`, suite('gh-pages'));
    await w.sluice.admin('PATCH', `/api/v1/repos/${repo.id}`, { branch_blacklist: ['gh-*'] });
    const head = await pushCommit(repo.bare, { 'index.html': { content: '<p>site</p>' } }, 'Publish', 'gh-pages');
    const res = await github(repo, 'push', pushHook('gh-pages', head, 'Publish'));
    expect(res).toEqual({ status: 422, text: 'DROPPED' });
    const generic = await w.trigger(repo, { branch: 'gh-pages' });
    expect(generic).toEqual({ status: 422, text: 'DROPPED' });
    expect(await sessionsOf(repo)).toBe(0);
  });
});

describe('branch hiding', () => {
  it('a branch-delete hides the branch without building; a later push shows it again and builds', async () => {
    const repo = await w.makeRepo(files, { suite: suite('master') });
    await w.sluice.admin('POST', `/api/v1/repos/${repo.id}/suites`, suite('feature'));
    expect(await branch(repo, 'feature')).toEqual({ name: 'feature', enabled: true, hidden: false, locked_visible: false, has_suite: true });

    const deleted = accepted(await github(repo, 'delete', deleteHook('feature')));
    expect(await status(deleted.status_uri)).toMatchObject({ decision: 'skip', reason: 'branch "feature" deleted: nothing to build; branch hidden', sessions: [] });
    // Recorded a moment after the answer, by the repository's intake workflow (issue 26).
    await eventually('the delete to be recorded', async () => (await status(deleted.status_uri)).recorded);
    expect(await branch(repo, 'feature')).toMatchObject({ hidden: true });
    expect(await sessionsOf(repo)).toBe(0);

    const head = await pushCommit(repo.bare, { 'tests/ok_test.sh': script('echo back') }, 'Bring feature back', 'feature');
    const pushed = accepted(await github(repo, 'push', { ...pushHook('feature', head, 'Bring feature back'), created: true, before: '0'.repeat(40) }));
    await eventually('the push to show the branch again', async () => (await branch(repo, 'feature'))?.hidden === false);
    const built = await eventually('the feature build to finish', async () => {
      const s = await status(pushed.status_uri);
      return s.sessions[0]?.status === 'passed' ? s : undefined;
    });
    expect(built.decision).toBe('build');
    const events = await w.eventsOf(built.sessions[0]!.session);
    expect(events.at(-1)).toMatchObject({ event: 'stop', status: 'passed', branch: 'feature', commit_id: head });
  });
});

describe('branch toggles and locks', () => {
  it('drops a switched-off branch with 422 DROPPED, builds it again once switched on', async () => {
    const repo = await w.makeRepo(files, { suite: suite('master') });
    const head = await pushCommit(repo.bare, { 'tests/ok_test.sh': script('echo on') }, 'Switch me', 'master');
    await w.sluice.admin('PUT', `/api/v1/repos/${repo.id}/branches/master`, { enabled: false });
    expect(await github(repo, 'push', pushHook('master', head, 'Switch me'))).toEqual({ status: 422, text: 'DROPPED' });
    expect(await sessionsOf(repo)).toBe(0);

    await w.sluice.admin('PUT', `/api/v1/repos/${repo.id}/branches/master`, { enabled: true });
    const { status_uri } = accepted(await github(repo, 'push', pushHook('master', head, 'Switch me')));
    expect((await status(status_uri)).decision).toBe('build');
  });

  it('keeps a branch locked visible when it is deleted', async () => {
    const repo = await w.makeRepo(files, { suite: suite('master') });
    await w.sluice.admin('POST', `/api/v1/repos/${repo.id}/suites`, suite('release'));
    await w.sluice.admin('PUT', `/api/v1/repos/${repo.id}/branches/release`, { locked_visible: true });
    const deleted = accepted(await github(repo, 'delete', deleteHook('release')));
    expect((await status(deleted.status_uri)).decision).toBe('skip');
    expect(await branch(repo, 'release')).toMatchObject({ hidden: false, locked_visible: true });
  });
});

describe('pull-request-only', () => {
  it('skips plain pushes and builds the pull request’s own head', async () => {
    // The suite of the branch pull requests merge into.
    const repo = await w.makeRepo(files, { suite: suite('master') });
    await w.sluice.admin('PATCH', `/api/v1/repos/${repo.id}`, { pull_request_only: true });
    const onMaster = await pushCommit(repo.bare, { 'tests/ok_test.sh': script('echo master') }, 'master work', 'master');
    const pushed = accepted(await github(repo, 'push', pushHook('master', onMaster, 'master work')));
    expect(await status(pushed.status_uri)).toMatchObject({ decision: 'skip', sessions: [] });
    expect(await sessionsOf(repo)).toBe(0);

    const head = await pushCommit(repo.bare, { 'tests/ok_test.sh': script('echo pr') }, 'PR work', 'feature');

    // GitHub keeps the pull request's head at refs/pull/<n>/head in the base repository.
    await git(repo.bare, ['update-ref', 'refs/pull/7/head', head]);
    const pr = example('pull_request', (e) => e.action === 'opened');
    const prBody = {
      ...pr,
      number: 7,
      pull_request: {
        ...(pr.pull_request as Record<string, unknown>),
        number: 7,
        merged: false,
        head: { ...((pr.pull_request as Record<string, Record<string, unknown>>).head), ref: 'feature', sha: head },
        base: { ...((pr.pull_request as Record<string, Record<string, unknown>>).base), ref: 'master' },
      },
    };
    const opened = accepted(await github(repo, 'pull_request', prBody));
    const built = await eventually('the pull request build to finish', async () => {
      const s = await status(opened.status_uri);
      return s.sessions[0]?.status === 'passed' ? s : undefined;
    });
    expect(built.decision).toBe('build');
    expect((await w.eventsOf(built.sessions[0]!.session)).at(-1)).toMatchObject({ status: 'passed', commit_id: head, branch: 'master' });
  });
});
