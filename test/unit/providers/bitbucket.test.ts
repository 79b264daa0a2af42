import { bitbucket } from '../../../src/providers/bitbucket';
import { fixture, ignoredBy, problemOf, run, setPath, triggerOf, triggersOf } from './helpers';

const load = (name: string) => fixture('bitbucket', name);
const hook = (event: string | undefined, body: unknown, query = {}) => run(bitbucket, { 'x-event-key': event }, body, query);

const H1 = 'a7d0f3c2e1b4a5968778695a4b3c2d1e0f9a8b7c';
const H2 = 'f4e3d2c1b0a99887766554433221100ffeeddccb';
const COMMITS = [
  { id: H1, message: 'Parse config lazily\n', author: 'jane@example.com' },
  { id: H2, message: 'Fix flaky retry test [no ci]\n', author: 'jane@example.com' },
];

describe('bitbucket: repo:push (git)', () => {
  it('an update of a branch: commits turned oldest first', () => {
    expect(triggerOf(hook('repo:push', load('repo-push')))).toEqual({
      event: 'repo:push',
      kind: 'push',
      branch: 'main',
      head: H2,
      ref: 'refs/heads/main',
      scm: 'git',
      commits: COMMITS,
    });
  });

  it('old null: a branch-create', () => {
    expect(triggerOf(hook('repo:push', load('repo-push-branch-create')))).toMatchObject({
      kind: 'branch-create',
      branch: 'release/1.2',
      head: H2,
      ref: 'refs/heads/release/1.2',
      commits: COMMITS,
    });
  });

  it('new null: a branch-delete', () => {
    expect(triggerOf(hook('repo:push', load('repo-push-branch-delete')))).toEqual({
      event: 'repo:push',
      kind: 'branch-delete',
      branch: 'release/1.2',
      head: null,
      ref: 'refs/heads/release/1.2',
      scm: 'git',
      commits: [],
    });
  });

  it('a branch and a tag pushed together are two triggers', () => {
    const [branch, tag] = triggersOf(hook('repo:push', load('repo-push-branch-and-tag'), { branch: 'main' }));
    expect(branch).toMatchObject({ kind: 'push', branch: 'main', head: H2, ref: 'refs/heads/main' });
    expect(tag).toMatchObject({ kind: 'tag', branch: 'main', head: H2, ref: 'refs/tags/v1.2.0' });
  });

  it('a tag takes its branch from ?branch=, or none', () => {
    expect(triggersOf(hook('repo:push', load('repo-push-branch-and-tag')))[1]!.branch).toBeNull();
  });

  it('a deleted tag is a tag-delete', () => {
    expect(triggerOf(hook('repo:push', load('repo-push-tag-delete')))).toMatchObject({ kind: 'tag-delete', head: null, ref: 'refs/tags/v1.1.0' });
  });

  it('without commits the new target is the one commit', () => {
    const body = setPath(load('repo-push'), 'push.changes.0.commits', undefined);
    expect(triggerOf(hook('repo:push', body)).commits).toEqual([COMMITS[1]]);
  });

  it('a push that changed nothing is answered without building', () => {
    const body = setPath(load('repo-push'), 'push.changes', []);
    expect(ignoredBy(hook('repo:push', body))).toMatch(/no branch or tag/);
  });

  it('takes the name from author.raw without an address', () => {
    const body = setPath(load('repo-push'), 'push.changes.0.commits.0.author.raw', 'jane');
    expect(triggerOf(hook('repo:push', body)).commits[1]!.author).toBe('jane');
  });
});

describe('bitbucket: repo:push (Mercurial)', () => {
  it('a named branch: scm hg, no git ref', () => {
    expect(triggerOf(hook('repo:push', load('repo-push-hg')))).toEqual({
      event: 'repo:push',
      kind: 'push',
      branch: 'default',
      head: '6d2f0e8b1c3a5f7e9d0b2c4a6e8f0a1b3c5d7e9f',
      ref: null,
      scm: 'hg',
      commits: [{ id: '6d2f0e8b1c3a5f7e9d0b2c4a6e8f0a1b3c5d7e9f', message: 'Add Windows build notes @wip\n', author: 'marcus@example.com' }],
    });
  });

  it('a bookmark is built as a branch', () => {
    const body = load('repo-push-hg');
    setPath(body, 'push.changes.0.new.type', 'bookmark');
    setPath(body, 'push.changes.0.new.name', 'feature-x');
    expect(triggerOf(hook('repo:push', body))).toMatchObject({ kind: 'push', branch: 'feature-x', scm: 'hg', ref: null });
  });

  it('a closed named branch is a branch-delete', () => {
    const body = setPath(load('repo-push-hg'), 'push.changes.0.new', null);
    expect(triggerOf(hook('repo:push', body))).toMatchObject({ kind: 'branch-delete', branch: 'default', scm: 'hg', head: null });
  });
});

describe('bitbucket: pull requests', () => {
  const pullRequest = (action: string, providerAction: string) => ({
    id: '7',
    url: 'https://bitbucket.org/atlassian-demo/sluice-sample/pull-requests/7',
    action,
    providerAction,
    targetBranch: 'main',
    changesetKind: 'generic',
    sameRepository: true,
  });

  it.each([
    ['pullrequest:created', 'pullrequest-created', 'opened', 'e5f6a7b8c9d0'],
    ['pullrequest:updated', 'pullrequest-updated', 'updated', 'b8c9d0e1f2a3'],
    ['pullrequest:fulfilled', 'pullrequest-fulfilled', 'merged', 'e5f6a7b8c9d0'],
    ['pullrequest:rejected', 'pullrequest-rejected', 'closed', 'e5f6a7b8c9d0'],
  ])('%s → %s', (event, name, action, head) => {
    expect(triggerOf(hook(event, load(name)))).toEqual({
      event,
      kind: 'pull-request',
      branch: 'feature/lazy-config',
      // Bitbucket sends 12-digit abbreviations here.
      head,
      ref: null,
      scm: 'git',
      commits: [],
      pullRequest: pullRequest(action, event),
    });
  });

  it('a pull request from a fork is answered without building (its branch is not here)', () => {
    expect(ignoredBy(hook('pullrequest:created', load('pullrequest-created-fork')))).toMatch(/fork "contributor\/sluice-sample"/);
  });

  it('a pull request on a Mercurial repository is hg', () => {
    const body = setPath(load('pullrequest-created'), 'repository.scm', 'hg');
    expect(triggerOf(hook('pullrequest:created', body)).scm).toBe('hg');
  });
});

describe('bitbucket: events not acted on → 422', () => {
  it.each(['pullrequest:approved', 'pullrequest:unapproved', 'pullrequest:comment_created', 'repo:fork', 'repo:updated', 'issue:created', 'repo:commit_status_updated'])(
    '%s',
    (event) => {
      const p = problemOf(hook(event, load('repo-push')), 422);
      expect(p.field).toBe('headers.x-event-key');
      expect(p.message).toContain(JSON.stringify(event));
    },
  );

  it.each(['repo:refs_changed', 'pr:opened'])('%s points at the stash path', (event) => {
    expect(problemOf(hook(event, load('repo-push')), 422).message).toMatch(/\/1\/stash\//);
  });

  it('no X-Event-Key header', () => {
    expect(problemOf(hook(undefined, load('repo-push')), 422).message).toMatch(/X-Event-Key/);
  });
});

describe('bitbucket: malformed bodies → 400 naming the field', () => {
  const cases: Array<[name: string, event: string | undefined, make: () => unknown, field: string, message: RegExp]> = [
    ['body not an object', 'repo:push', () => [1, 2], 'body', /JSON object/],
    ['push without changes', 'repo:push', () => setPath(load('repo-push'), 'push.changes', undefined), 'push.changes', /required/],
    ['push without repository', 'repo:push', () => setPath(load('repo-push'), 'repository', undefined), 'repository', /required/],
    ['unknown scm', 'repo:push', () => setPath(load('repo-push'), 'repository.scm', 'svn'), 'repository.scm', /"git", "hg"/],
    ['change with neither new nor old', 'repo:push', () => setPath(setPath(load('repo-push'), 'push.changes.0.new', null), 'push.changes.0.old', null), 'push.changes.0', /new or old/],
    ['ref of an unknown type', 'repo:push', () => setPath(load('repo-push'), 'push.changes.0.new.type', 'commit'), 'push.changes.0.new.type', /expected one of/],
    ['target without hash', 'repo:push', () => setPath(load('repo-push'), 'push.changes.0.new.target.hash', undefined), 'push.changes.0.new.target.hash', /required/],
    ['branch name with a space', 'repo:push', () => setPath(load('repo-push'), 'push.changes.0.new.name', 'my branch'), 'push.changes.0.new.name', /whitespace/],
    ['pull request without source branch', 'pullrequest:created', () => setPath(load('pullrequest-created'), 'pullrequest.source.branch', undefined), 'pullrequest.source.branch', /required/],
    ['pull request with a string id', 'pullrequest:created', () => setPath(load('pullrequest-created'), 'pullrequest.id', '7'), 'pullrequest.id', /expected number/],
  ];

  it.each(cases)('%s', (_name, event, make, field, message) => {
    const p = problemOf(hook(event, make()), 400);
    expect(p.field).toBe(field);
    expect(p.message).toMatch(message);
  });
});
