// Provider hooks (`POST /1/<provider>/<KEY>`) and the commit-selection rules, through HTTP,
// against a real PostgreSQL; `enqueue` is the harness's recording stand-in.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import examples from '@octokit/webhooks-examples';
import { skipTagReason } from '../../src/core/skipTags';
import { getProvider, providers } from '../../src/providers';
import { countRows, seedRepo, startApiHarness, type ApiHarness, type Response } from '../support/apiApp';
import { reportPath } from '../support/reports';

let h: ApiHarness;

beforeAll(async () => {
  h = await startApiHarness();
});
afterAll(() => h?.close());
beforeEach(() => {
  h.enqueued.length = 0;
});

const FIXTURES = join(__dirname, '../fixtures/providers');
const fixture = (provider: string, name: string): Record<string, unknown> =>
  JSON.parse(readFileSync(join(FIXTURES, provider, `${name}.json`), 'utf8')) as Record<string, unknown>;

function github(event: string, pick: (e: Record<string, unknown>) => boolean = () => true): Record<string, unknown> {
  const found = (examples.find((d) => d.name === event)!.examples as unknown as Record<string, unknown>[]).find(pick);
  if (!found) throw new Error(`no ${event} example`);
  return structuredClone(found);
}

const SHA = '6113728f27ae82c7b1a177c8d03f9e96e0adf246';

/** A fixture whose commit messages hold no skip tag (several real ones do, on purpose). */
const withoutSkipTags = (body: Record<string, unknown>): Record<string, unknown> =>
  JSON.parse(JSON.stringify(body).replace(/\[no ci\]|\[no-ci\]|@wip/gi, '')) as Record<string, unknown>;

/** A GitHub push of one commit to `branch` (a real example, adjusted). */
function githubPush(branch: string, message = 'Adding a .gitignore file'): Record<string, unknown> {
  const body = github('push', (e) => e.ref === 'refs/heads/master');
  const head = { ...(body.head_commit as Record<string, unknown>), message };
  return { ...body, ref: `refs/heads/${branch}`, created: false, before: 'a10867b14bb761a232cd80139fbd4c0d33264240', head_commit: head, commits: [head] };
}

function hook(key: string, provider: string, headers: Record<string, string>, body: unknown, query = ''): Promise<Response> {
  return h.request({
    method: 'POST',
    url: `/1/${provider}/${key}${query}`,
    headers: { 'content-type': 'application/json', ...headers },
    payload: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

function accepted(res: Response): string {
  if (res.statusCode !== 200) throw new Error(`expected 200, got ${res.statusCode} ${res.body}`);
  const body = res.json();
  expect(body).toEqual({ status: 0, guid: expect.stringMatching(/^[0-9a-f-]{36}$/), status_uri: `https://ci.example.test/ci_events/${body.guid}/guid` });
  return body.guid as string;
}

async function ciEvent(guid: string) {
  const res = await h.request({ method: 'GET', url: `/ci_events/${guid}/guid` });
  expect(res.statusCode).toBe(200);
  return res.json();
}

async function storedTrigger(guid: string) {
  const { rows } = await h.db.pool.query('SELECT trigger FROM ci_events WHERE guid = $1', [guid]);
  return rows[0].trigger;
}

async function branchRow(repoId: number, name: string) {
  const { rows } = await h.db.pool.query('SELECT enabled, hidden, locked_visible FROM branches WHERE repo_id = $1 AND name = $2', [repoId, name]);
  return rows[0];
}

async function expectNothingStored(fn: () => Promise<void>) {
  const before = [await countRows(h, 'ci_events'), await countRows(h, 'sessions')];
  await fn();
  expect([await countRows(h, 'ci_events'), await countRows(h, 'sessions')]).toEqual(before);
  expect(h.enqueued).toEqual([]);
}

describe('every provider in the registry builds its push', () => {
  // provider, event header, fixture (a push to an existing branch)
  const cases: [string, Record<string, string>, () => Record<string, unknown>][] = [
    ['github', { 'x-github-event': 'push' }, () => githubPush('master')],
    ['gitlab', { 'x-gitlab-event': 'Push Hook' }, () => fixture('gitlab', 'push')],
    ['bitbucket', { 'x-event-key': 'repo:push' }, () => fixture('bitbucket', 'repo-push')],
    ['stash', { 'x-event-key': 'repo:refs_changed' }, () => fixture('stash', 'repo-refs-changed')],
    ['gitea', { 'x-gitea-event': 'push' }, () => fixture('gitea', 'push')],
    ['gogs', { 'x-gogs-event': 'push' }, () => fixture('gogs', 'push')],
    ['gerrit', {}, () => fixture('gerrit', 'stream-ref-updated')],
  ];

  it('covers the whole registry', () => {
    // `builds`, the generic format, has its own tests (api-triggers.test.ts).
    expect(cases.map((c) => c[0]).sort()).toEqual(Object.keys(providers).filter((p) => p !== 'builds').sort());
  });

  it.each(cases)('%s', async (provider, headers, body) => {
    // The branch the adapter reads from the fixture gets a suite.
    const result = getProvider(provider)!.parse({ headers, body: body(), query: {} });
    if (!result.ok || !('triggers' in result)) throw new Error(`fixture: ${JSON.stringify(result)}`);
    const t = result.triggers[0];
    const seeded = await seedRepo(h, { branches: [t.branch!] });
    const guid = accepted(await hook(seeded.repo.key, provider, headers, body()));
    expect(await storedTrigger(guid)).toMatchObject({ provider, kind: t.kind, event: t.event, head: t.head });
    expect(await branchRow(seeded.repo.id, t.branch!)).toEqual({ enabled: true, hidden: false, locked_visible: false });
    const view = await ciEvent(guid);

    // Some fixtures carry a skip tag in their head commit (real hooks do): then it is a skip.
    const skipTag = t.commits.length > 0 ? skipTagReason(t.commits.at(-1)!.message) : undefined;
    if (skipTag) {
      expect(h.enqueued).toEqual([]);
      expect(view).toMatchObject({ provider, decision: 'skip', reason: expect.stringContaining(skipTag), sessions: [] });
      // Without the tag, the same hook builds.
      accepted(await hook(seeded.repo.key, provider, headers, withoutSkipTags(body())));
    } else {
      expect(view).toMatchObject({ provider, decision: 'build', reason: null, branch: t.branch, sessions: [{ status: 'queued' }] });
    }
    expect(h.enqueued).toEqual([
      { suiteId: seeded.suites[0]!.id, sessionId: expect.any(Number), queuePosition: 'tail', repoLabel: expect.any(String), branch: t.branch },
    ]);
    const { rows } = await h.db.pool.query('SELECT head, ref, branch FROM sessions WHERE id = $1', [h.enqueued[0]!.sessionId]);
    expect(rows[0]).toEqual({ head: t.head, ref: t.ref, branch: t.branch });
  });
});

describe('github', () => {
  let key: string;
  let repoId: number;
  let suites: { id: number; branch: string }[];
  beforeAll(async () => {
    const seeded = await seedRepo(h, { branches: ['master', 'dev', 'changes', 'simple-tag'] });
    key = seeded.repo.key;
    repoId = seeded.repo.id;
    suites = seeded.suites;
  });
  const gh = (event: string, body: unknown, query = '') => hook(key, 'github', { 'x-github-event': event }, body, query);

  it('ping answers 200 without building or recording', async () => {
    await expectNothingStored(async () => {
      const res = await gh('ping', github('ping'));
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ status: 0, ignored: 'ping: the hook is set up; nothing to build' });
    });
  });

  it('a pull-request action Sluice does not build on answers 200 ignored', async () => {
    await expectNothingStored(async () => {
      const res = await gh('pull_request', github('pull_request', (e) => e.action === 'locked'));
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ status: 0, ignored: expect.stringContaining('locked') });
    });
  });

  it('an event Sluice does not act on is a 422 with a JSON reason', async () => {
    await expectNothingStored(async () => {
      const res = await gh('issues', { action: 'opened' });
      expect(res.statusCode).toBe(422);
      expect(res.json()).toEqual({ error: 'hook misconfigured', field: 'headers.x-github-event', message: expect.stringContaining('"issues"') });
    });
  });

  it('no event header is a 422', async () => {
    await expectNothingStored(async () => {
      const res = await hook(key, 'github', {}, githubPush('master'));
      expect(res.statusCode).toBe(422);
      expect(res.json()).toMatchObject({ error: 'hook misconfigured', field: 'headers.x-github-event' });
    });
  });

  it('a malformed payload is a 400 naming the field', async () => {
    await expectNothingStored(async () => {
      const res = await gh('push', { ...githubPush('master'), ref: 7 });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({ error: 'invalid trigger', field: 'ref', message: 'expected string' });
    });
  });

  it('bad JSON, an unsupported content type, bad UTF-8 and a repeated form field are 400s', async () => {
    await expectNothingStored(async () => {
      let res = await gh('push', '{"ref":');
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ field: 'body', message: expect.stringMatching(/^invalid JSON/) });
      res = await hook(key, 'github', { 'x-github-event': 'push', 'content-type': 'text/plain' }, 'hello');
      expect(res.json()).toMatchObject({ field: 'content-type', message: expect.stringMatching(/unsupported content type "text\/plain"/) });
      res = await h.request({ method: 'POST', url: `/1/github/${key}`, headers: { 'x-github-event': 'push', 'content-type': 'application/json' }, payload: Buffer.from([0x7b, 0xff, 0x7d]) });
      expect(res.json()).toMatchObject({ field: 'body', message: 'not valid UTF-8' });
      res = await hook(key, 'github', { 'x-github-event': 'push', 'content-type': 'application/x-www-form-urlencoded' }, 'payload=1&payload=2');
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ field: 'payload', message: 'given more than once' });
    });
  });

  it('a form-encoded delivery (payload=<json>) builds', async () => {
    const payload = `payload=${encodeURIComponent(JSON.stringify(githubPush('dev')))}`;
    accepted(await hook(key, 'github', { 'x-github-event': 'push', 'content-type': 'application/x-www-form-urlencoded' }, payload));
    expect(h.enqueued).toEqual([expect.objectContaining({ branch: 'dev' })]);
  });

  it('a [no ci] head commit is skipped: 200 with a guid, recorded with the reason, nothing built', async () => {
    const sessions = await countRows(h, 'sessions');
    const guid = accepted(await gh('push', githubPush('master', '[no ci] Update the docs')));
    expect(h.enqueued).toEqual([]);
    expect(await countRows(h, 'sessions')).toBe(sessions);
    expect(await ciEvent(guid)).toMatchObject({
      decision: 'skip',
      reason: `skip tag [no ci] in the first line of the head commit's message (${SHA.slice(0, 12)})`,
      branch: 'master',
      sessions: [],
    });
  });

  it('@wip anywhere in the head commit skips', async () => {
    const guid = accepted(await gh('push', githubPush('master', 'Refactor\n\nstill @wip')));
    expect(h.enqueued).toEqual([]);
    expect((await ciEvent(guid)).reason).toMatch(/@wip/);
  });

  it('a pull request builds in its target branch\'s suite from refs/pull/<n>/head, with its changeset', async () => {
    const body = github('pull_request', (e) => e.action === 'opened');
    const pr = body.pull_request as { head: { ref: string; sha: string }; base: { ref: string }; number: number };
    const guid = accepted(await gh('pull_request', body));
    expect(h.enqueued).toEqual([expect.objectContaining({ suiteId: suites.find((s) => s.branch === pr.base.ref)!.id, branch: pr.base.ref })]);
    const { rows } = await h.db.pool.query('SELECT head, ref FROM sessions WHERE id = $1', [h.enqueued[0]!.sessionId]);
    expect(rows[0]).toEqual({ head: pr.head.sha, ref: `refs/pull/${body.number}/head` });
    expect(await storedTrigger(guid)).toMatchObject({
      kind: 'pull-request',
      action: 'opened',
      branch: pr.base.ref,
      sourceBranch: pr.head.ref,
      sameRepository: true,
      refspec: [`+refs/pull/${body.number}/head:refs/pull/${body.number}/head`],
      changeset: { kind: 'github', id: String(body.number), url: expect.stringMatching(/^https:\/\/github.com\//) },
    });
    const report = await h.request({ method: 'GET', url: await reportPath(h.db.pool, h.enqueued[0]!.sessionId), headers: { accept: 'application/json' } });
    expect(report.json().changeset).toMatchObject({ kind: 'github', id: String(body.number) });
  });

  it('a closed pull request is skipped', async () => {
    const guid = accepted(await gh('pull_request', github('pull_request', (e) => e.action === 'closed')));
    expect(h.enqueued).toEqual([]);
    expect((await ciEvent(guid)).reason).toMatch(/^pull request (closed|merged): nothing new to build$/);
  });

  it('a tag builds in the suite named after it; a tag without one is skipped', async () => {
    const create = github('create');
    accepted(await gh('create', create));
    expect(h.enqueued).toEqual([expect.objectContaining({ suiteId: suites.find((s) => s.branch === 'simple-tag')!.id, branch: 'simple-tag' })]);
    const { rows } = await h.db.pool.query('SELECT head, ref FROM sessions WHERE id = $1', [h.enqueued[0]!.sessionId]);
    expect(rows[0]).toEqual({ head: 'refs/tags/simple-tag', ref: 'refs/tags/simple-tag' });

    h.enqueued.length = 0;
    const guid = accepted(await gh('create', { ...create, ref: 'v9.9' }));
    expect(h.enqueued).toEqual([]);
    expect((await ciEvent(guid)).reason).toBe('tag "v9.9": tags build only in a suite named after the tag, and there is none');
    // A tag is no branch: no row.
    expect(await branchRow(repoId, 'v9.9')).toBeUndefined();
  });

  it('a tag delete is recorded as a skip', async () => {
    const guid = accepted(await gh('delete', github('delete')));
    expect(h.enqueued).toEqual([]);
    expect(await ciEvent(guid)).toMatchObject({ decision: 'skip', reason: 'tag "simple-tag" deleted: nothing to build' });
  });

  it('a branch delete hides the branch and builds nothing; a later push shows it again', async () => {
    accepted(await gh('push', githubPush('dev')));
    expect(await branchRow(repoId, 'dev')).toMatchObject({ hidden: false });
    h.enqueued.length = 0;

    const guid = accepted(await gh('delete', { ...github('delete'), ref: 'dev', ref_type: 'branch' }));
    expect(h.enqueued).toEqual([]);
    expect(await ciEvent(guid)).toMatchObject({ decision: 'skip', reason: 'branch "dev" deleted: nothing to build; branch hidden', sessions: [] });
    expect(await branchRow(repoId, 'dev')).toMatchObject({ hidden: true });
    const list = (await h.admin('GET', `/api/v1/repos/${repoId}/branches`)).json();
    expect(list).toContainEqual({ name: 'dev', enabled: true, hidden: true, locked_visible: false, has_suite: true });

    // A push with deleted: true is a delete too.
    accepted(await gh('push', { ...githubPush('dev'), deleted: true, after: '0000000000000000000000000000000000000000' }));
    expect(h.enqueued).toEqual([]);

    accepted(await gh('push', githubPush('dev')));
    expect(h.enqueued).toHaveLength(1);
    expect(await branchRow(repoId, 'dev')).toMatchObject({ hidden: false });
  });

  it('a branch locked visible stays visible through a delete', async () => {
    expect((await h.admin('PUT', `/api/v1/repos/${repoId}/branches/changes`, { locked_visible: true })).statusCode).toBe(200);
    const guid = accepted(await gh('delete', { ...github('delete'), ref: 'changes', ref_type: 'branch' }));
    expect((await ciEvent(guid)).reason).toBe('branch "changes" deleted: nothing to build; it stays visible (locked visible)');
    expect(await branchRow(repoId, 'changes')).toEqual({ enabled: true, hidden: false, locked_visible: true });
  });

  it('a branch-delete of a branch never seen creates its row hidden', async () => {
    accepted(await gh('delete', { ...github('delete'), ref: 'never-seen', ref_type: 'branch' }));
    expect(await branchRow(repoId, 'never-seen')).toEqual({ enabled: true, hidden: true, locked_visible: false });
  });

  it('a push to a branch without a suite is 422 DROPPED, recording nothing but the branch', async () => {
    await expectNothingStored(async () => {
      const res = await gh('push', githubPush('no-suite'));
      expect(res.statusCode).toBe(422);
      expect(res.body).toBe('DROPPED');
    });
    expect(await branchRow(repoId, 'no-suite')).toEqual({ enabled: true, hidden: false, locked_visible: false });
  });

  it('NUL and lone surrogates in a commit message are stored as U+FFFD, not a 500', async () => {
    const guid = accepted(await gh('push', githubPush('dev', 'odd \u0000 message \ud800 here')));
    const trigger = await storedTrigger(guid);
    expect(trigger.commits.at(-1).message).toBe('odd \ufffd message \ufffd here');
  });

  it('?branch= given twice is a 400', async () => {
    const res = await gh('push', githubPush('dev'), '?branch=a&branch=b');
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ field: 'query.branch', message: 'given more than once' });
  });
});

describe('repository settings', () => {
  it('branch blacklist: 422 DROPPED, nothing stored, no branch row', async () => {
    const seeded = await seedRepo(h, { branches: ['master', 'gh-pages', 'release/1'] });
    await h.admin('PATCH', `/api/v1/repos/${seeded.repo.id}`, { branch_blacklist: ['gh-pages', 'release/*'] });
    for (const branch of ['gh-pages', 'release/1']) {
      await expectNothingStored(async () => {
        const res = await hook(seeded.repo.key, 'github', { 'x-github-event': 'push' }, githubPush(branch));
        expect(res.statusCode).toBe(422);
        expect(res.body).toBe('DROPPED');
        const generic = await hook(seeded.repo.key, 'builds', {}, { branch });
        expect(generic.statusCode).toBe(422);
        expect(generic.body).toBe('DROPPED');
      });
      expect(await branchRow(seeded.repo.id, branch)).toBeUndefined();
    }
    accepted(await hook(seeded.repo.key, 'github', { 'x-github-event': 'push' }, githubPush('master')));
  });

  it('branch toggle: a branch switched off drops, switched on builds again', async () => {
    const seeded = await seedRepo(h, { branches: ['master'] });
    await h.admin('PUT', `/api/v1/repos/${seeded.repo.id}/branches/master`, { enabled: false });
    await expectNothingStored(async () => {
      const res = await hook(seeded.repo.key, 'builds', {}, { branch: 'master' });
      expect(res.statusCode).toBe(422);
      expect(res.body).toBe('DROPPED');
    });
    await h.admin('PUT', `/api/v1/repos/${seeded.repo.id}/branches/master`, { enabled: true });
    accepted(await hook(seeded.repo.key, 'builds', {}, { branch: 'master' }));
    expect(h.enqueued).toHaveLength(1);
  });

  it('pull-request-only: pushes are skipped (200, recorded), pull requests build', async () => {
    const seeded = await seedRepo(h, { branches: ['master', 'changes'] });
    await h.admin('PATCH', `/api/v1/repos/${seeded.repo.id}`, { pull_request_only: true });
    const guid = accepted(await hook(seeded.repo.key, 'github', { 'x-github-event': 'push' }, githubPush('master')));
    expect(await ciEvent(guid)).toMatchObject({ decision: 'skip', reason: 'pull-request-only: the repository builds pull requests only, and this is a push' });
    const generic = accepted(await hook(seeded.repo.key, 'builds', {}, {}));
    expect((await ciEvent(generic)).decision).toBe('skip');
    expect(h.enqueued).toEqual([]);

    accepted(await hook(seeded.repo.key, 'github', { 'x-github-event': 'pull_request' }, github('pull_request', (e) => e.action === 'opened')));
    accepted(await hook(seeded.repo.key, 'builds', {}, { branch: 'master', changeset: { kind: 'generic', id: '12' } }));
    expect(h.enqueued).toHaveLength(2);
  });

  it('a generic trigger shows a hidden branch again', async () => {
    const seeded = await seedRepo(h, { branches: ['master'] });
    accepted(await hook(seeded.repo.key, 'gitea', { 'x-gitea-event': 'delete' }, { ...fixture('gitea', 'delete-branch'), ref: 'master' }));
    expect(await branchRow(seeded.repo.id, 'master')).toMatchObject({ hidden: true });
    accepted(await hook(seeded.repo.key, 'builds', {}, {}));
    expect(await branchRow(seeded.repo.id, 'master')).toMatchObject({ hidden: false });
  });
});

describe('other providers', () => {
  it('bitbucket: a push of a branch and a tag is one ci_event; the branch builds and the reason names the tag', async () => {
    const body = withoutSkipTags(fixture('bitbucket', 'repo-push-branch-and-tag'));
    const result = getProvider('bitbucket')!.parse({ headers: { 'x-event-key': 'repo:push' }, body, query: {} });
    if (!result.ok || !('triggers' in result)) throw new Error('fixture');
    const branch = result.triggers.find((t) => t.kind !== 'tag')!;
    const tag = result.triggers.find((t) => t.kind === 'tag')!;
    const seeded = await seedRepo(h, { branches: [branch.branch!] });
    const guid = accepted(await hook(seeded.repo.key, 'bitbucket', { 'x-event-key': 'repo:push' }, body));
    expect(h.enqueued).toEqual([expect.objectContaining({ branch: branch.branch })]);
    const view = await ciEvent(guid);
    expect(view).toMatchObject({ decision: 'build', branch: branch.branch, sessions: [expect.any(Object)] });
    expect(view.reason).toBe(`${tag.ref}: skip: tag "${tag.ref!.slice('refs/tags/'.length)}": tags build only in a suite named after the tag, and there is none`);
  });

  it('bitbucket: a Mercurial hook for a git repository is a 400', async () => {
    const seeded = await seedRepo(h, { branches: ['default'] });
    const res = await hook(seeded.repo.key, 'bitbucket', { 'x-event-key': 'repo:push' }, fixture('bitbucket', 'repo-push-hg'));
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ field: 'scm' });
  });

  it('bitbucket: a Mercurial push builds on a Mercurial repository', async () => {
    const body = withoutSkipTags(fixture('bitbucket', 'repo-push-hg'));
    const result = getProvider('bitbucket')!.parse({ headers: { 'x-event-key': 'repo:push' }, body, query: {} });
    if (!result.ok || !('triggers' in result)) throw new Error('fixture');
    const seeded = await seedRepo(h, { scm: 'hg', branches: [result.triggers[0].branch!] });
    accepted(await hook(seeded.repo.key, 'bitbucket', { 'x-event-key': 'repo:push' }, body));
    expect(h.enqueued).toHaveLength(1);
  });

  it('gitlab: a merge request builds with its changeset', async () => {
    const body = fixture('gitlab', 'merge-request-open');
    const result = getProvider('gitlab')!.parse({ headers: { 'x-gitlab-event': 'Merge Request Hook' }, body, query: {} });
    if (!result.ok || !('triggers' in result)) throw new Error('fixture');
    const t = result.triggers[0];
    // Built in the suite of the branch it merges into.
    const seeded = await seedRepo(h, { branches: [t.pullRequest!.targetBranch!] });
    const guid = accepted(await hook(seeded.repo.key, 'gitlab', { 'x-gitlab-event': 'Merge Request Hook' }, body));
    expect(h.enqueued).toHaveLength(1);
    expect(await storedTrigger(guid)).toMatchObject({ kind: 'pull-request', action: 'opened', ref: t.ref, changeset: { id: t.pullRequest!.id } });
  });

  it('gerrit: a patchset-created hook builds the change ref in its branch suite', async () => {
    const body = fixture('gerrit', 'stream-patchset-created');
    const seeded = await seedRepo(h, { branches: ['master'] });
    const guid = accepted(await hook(seeded.repo.key, 'gerrit', {}, body));
    const trigger = await storedTrigger(guid);
    expect(trigger).toMatchObject({ kind: 'pull-request', changeset: { kind: 'gerrit' }, ref: 'refs/changes/34/1234/2', refspec: ['+refs/changes/34/1234/2:refs/changes/34/1234/2'] });
  });

  it('stash: diagnostics:ping is ignored', async () => {
    const seeded = await seedRepo(h, { branches: ['master'] });
    const res = await hook(seeded.repo.key, 'stash', { 'x-event-key': 'diagnostics:ping' }, fixture('stash', 'diagnostics-ping'));
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 0, ignored: expect.any(String) });
  });

  it('a provider path with an unknown key is a 404, an unknown provider too', async () => {
    const seeded = await seedRepo(h, { branches: ['master'] });
    expect((await hook('no-such-key-0000000000000000', 'github', { 'x-github-event': 'push' }, githubPush('master'))).statusCode).toBe(404);
    for (const p of ['nosuch', 'constructor', '__proto__', 'toString', 'GitHub']) {
      const res = await hook(seeded.repo.key, p, { 'x-github-event': 'push' }, githubPush('master'));
      expect(res.statusCode).toBe(404);
      expect(res.json()).toEqual({ error: 'unknown provider', message: 'no such provider' });
    }
  });

  it('an enqueue failure on a provider hook is a 503 and keeps nothing, branch rows included', async () => {
    const seeded = await seedRepo(h, { branches: ['fresh'] });
    h.failEnqueue(new Error('down'));
    try {
      await expectNothingStored(async () => {
        const res = await hook(seeded.repo.key, 'github', { 'x-github-event': 'push' }, githubPush('fresh'));
        expect(res.statusCode).toBe(503);
      });
      expect(await branchRow(seeded.repo.id, 'fresh')).toBeUndefined();
    } finally {
      h.failEnqueue(null);
    }
  });
});
