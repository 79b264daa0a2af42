import { gitea } from '../../../src/providers/gitea';
import { fixture, ignoredBy, problemOf, run, setPath, triggerOf, ZERO } from './helpers';

const load = (name: string) => fixture('gitea', name);
// Gitea sends its event under three names; the adapter reads X-Gitea-Event.
const hook = (event: string | undefined, body: unknown, query = {}) =>
  run(gitea, { 'x-gitea-event': event, 'x-gogs-event': event, 'x-github-event': event }, body, query);

const C1 = '6cb1701c8b0114ad716f4cd49153076e7109cb85';
const C2 = '2ec0c971d04723523aa20f2b378f8b419b47d4ec';
const COMMITS = [
  { id: C1, message: 'Parse config lazily\n', author: 'jane@example.com' },
  { id: C2, message: 'Retry on 503\n\n@wip still flaky\n', author: 'jane@example.com' },
];

describe('gitea: push', () => {
  it('a push: Gitea lists newest first, the trigger oldest first', () => {
    expect(triggerOf(hook('push', load('push')))).toEqual({
      event: 'push',
      kind: 'push',
      branch: 'main',
      head: C2,
      ref: 'refs/heads/main',
      scm: 'git',
      commits: COMMITS,
    });
  });

  it('before all zeros: a branch-create', () => {
    expect(triggerOf(hook('push', load('push-branch-create')))).toMatchObject({ kind: 'branch-create', branch: 'feature/lazy', head: C2, commits: COMMITS });
  });

  it('after all zeros: a branch-delete', () => {
    const body = Object.assign(load('push'), { after: ZERO, commits: null, head_commit: null });
    expect(triggerOf(hook('push', body))).toMatchObject({ kind: 'branch-delete', branch: 'main', head: null, commits: [] });
  });

  it('a tag push: the head commit is its one commit; branch from ?branch=', () => {
    expect(triggerOf(hook('push', load('push-tag'), { branch: 'main' }))).toEqual({
      event: 'push',
      kind: 'tag',
      branch: 'main',
      head: C2,
      ref: 'refs/tags/v1.2.0',
      scm: 'git',
      commits: [COMMITS[1]],
    });
  });

  it('commits: null (older Gitea) is no commits', () => {
    const body = Object.assign(load('push'), { commits: null, head_commit: null });
    expect(triggerOf(hook('push', body)).commits).toEqual([]);
  });

  it('Forgejo: X-Forgejo-Event alone is enough', () => {
    expect(triggerOf(run(gitea, { 'x-forgejo-event': 'push' }, load('push'), {})).kind).toBe('push');
  });
});

describe('gitea: create and delete', () => {
  it('create of a branch names its commit', () => {
    expect(triggerOf(hook('create', load('create-branch')))).toEqual({
      event: 'create',
      kind: 'branch-create',
      branch: 'feature/lazy',
      head: C2,
      ref: 'refs/heads/feature/lazy',
      scm: 'git',
      commits: [],
    });
  });

  it('create of a tag', () => {
    expect(triggerOf(hook('create', load('create-tag'), { branch: 'main' }))).toMatchObject({ kind: 'tag', branch: 'main', head: C2, ref: 'refs/tags/v1.2.0' });
  });

  it('delete of a branch', () => {
    expect(triggerOf(hook('delete', load('delete-branch')))).toMatchObject({ kind: 'branch-delete', branch: 'feature/lazy', head: null, ref: 'refs/heads/feature/lazy' });
  });

  it('delete of a tag', () => {
    expect(triggerOf(hook('delete', load('delete-tag')))).toMatchObject({ kind: 'tag-delete', branch: null, head: null, ref: 'refs/tags/v1.2.0' });
  });
});

describe('gitea: pull_request', () => {
  const pullRequest = (action: string, providerAction: string) => ({
    id: '4',
    url: 'https://gitea.example.com/acme/sluice-sample/pulls/4',
    action,
    providerAction,
    targetBranch: 'main',
    changesetKind: 'generic',
    sameRepository: true,
  });

  it.each([
    ['pull-request-opened', 'opened', 'opened', C1],
    ['pull-request-synchronized', 'updated', 'synchronized', C2],
    ['pull-request-closed-merged', 'merged', 'closed', C2],
    ['pull-request-closed', 'closed', 'closed', C2],
    ['pull-request-label-updated', 'labeled', 'label_updated', C2],
  ])('%s → %s', (name, action, providerAction, head) => {
    expect(triggerOf(hook('pull_request', load(name)))).toEqual({
      event: 'pull_request',
      kind: 'pull-request',
      branch: 'feature/lazy',
      head,
      ref: 'refs/pull/4/head',
      scm: 'git',
      commits: [],
      pullRequest: pullRequest(action, providerAction),
    });
  });

  it.each([
    ['reopened', 'reopened'],
    ['assigned', 'assigned'],
  ])('%s → %s', (providerAction, action) => {
    const body = setPath(load('pull-request-opened'), 'action', providerAction);
    expect(triggerOf(hook('pull_request', body)).pullRequest!.action).toBe(action);
  });

  it.each(['edited', 'unassigned', 'label_cleared', 'milestoned', 'demilestoned', 'review_requested'])('%s is answered without building', (action) => {
    const body = setPath(load('pull-request-edited'), 'action', action);
    expect(ignoredBy(hook('pull_request', body))).toContain(action);
  });
});

describe('gitea: events not acted on → 422', () => {
  it.each(['issues', 'issue_comment', 'release', 'repository', 'wiki', 'fork', 'pull_request_approved', 'pull_request_rejected', 'pull_request_comment'])(
    '%s',
    (event) => {
      const p = problemOf(hook(event, load('push')), 422);
      expect(p.field).toBe('headers.x-gitea-event');
      expect(p.message).toContain(JSON.stringify(event));
    },
  );

  it('no X-Gitea-Event header (a GitHub hook on the gitea path)', () => {
    expect(problemOf(run(gitea, { 'x-github-event': 'push' }, load('push'), {}), 422).message).toMatch(/X-Gitea-Event or X-Forgejo-Event/);
  });
});

describe('gitea: malformed bodies → 400 naming the field', () => {
  const cases: Array<[name: string, event: string | undefined, make: () => unknown, field: string, message: RegExp]> = [
    ['body not an object', 'push', () => null, 'body', /JSON object/],
    ['push without after', 'push', () => setPath(load('push'), 'after', undefined), 'after', /required/],
    ['push with a bad head_commit', 'push', () => setPath(load('push'), 'head_commit.id', 'nope'), 'head_commit.id', /commit id/],
    ['create with a bad sha', 'create', () => setPath(load('create-branch'), 'sha', 'v1'), 'sha', /commit id/],
    ['delete without ref', 'delete', () => setPath(load('delete-branch'), 'ref', undefined), 'ref', /required/],
    ['pull request without head', 'pull_request', () => setPath(load('pull-request-opened'), 'pull_request.head', undefined), 'pull_request.head', /required/],
    ['pull request with a bad base', 'pull_request', () => setPath(load('pull-request-opened'), 'pull_request.base.ref', 'main:x'), 'pull_request.base.ref', /:/],
  ];

  it.each(cases)('%s', (_name, event, make, field, message) => {
    const p = problemOf(hook(event, make()), 400);
    expect(p.field).toBe(field);
    expect(p.message).toMatch(message);
  });

  it('a form-encoded delivery (payload=...) is read', () => {
    expect(triggerOf(hook('push', { payload: JSON.stringify(load('push')) })).head).toBe(C2);
  });
});
