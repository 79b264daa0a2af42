import { stash } from '../../../src/providers/stash';
import { fixture, ignoredBy, problemOf, run, setPath, triggerOf, triggersOf, ZERO } from './helpers';

const load = (name: string) => fixture('stash', name);
const hook = (event: string | undefined, body: unknown, query = {}) => run(stash, { 'x-event-key': event }, body, query);

const TO = '178864a7d521b6f5e720b386b2c2b0ef8563e0dc';

describe('stash: repo:refs_changed', () => {
  it('UPDATE of a branch is a push (no commit messages in this event)', () => {
    expect(triggerOf(hook('repo:refs_changed', load('repo-refs-changed')))).toEqual({
      event: 'repo:refs_changed',
      kind: 'push',
      branch: 'master',
      head: TO,
      ref: 'refs/heads/master',
      scm: 'git',
      commits: [],
    });
  });

  it('one trigger per change: ADD branch, ADD tag, DELETE branch', () => {
    const [added, tag, deleted] = triggersOf(hook('repo:refs_changed', load('repo-refs-changed-multi'), { branch: 'master' }));
    expect(added).toMatchObject({ kind: 'branch-create', branch: 'feature/search', head: TO, ref: 'refs/heads/feature/search' });
    expect(tag).toMatchObject({ kind: 'tag', branch: 'master', head: 'b82dd854c413d8e09aaf68c3c286f11ec6780be6', ref: 'refs/tags/0.1.0' });
    expect(deleted).toMatchObject({ kind: 'branch-delete', branch: 'old-experiment', head: null, ref: 'refs/heads/old-experiment' });
  });

  it('a deleted tag is a tag-delete', () => {
    expect(triggerOf(hook('repo:refs_changed', load('repo-refs-changed-tag-delete')))).toMatchObject({ kind: 'tag-delete', head: null, branch: null });
  });

  it('an UPDATE to all zeros is still a delete', () => {
    const body = setPath(load('repo-refs-changed'), 'changes.0.toHash', ZERO);
    expect(triggerOf(hook('repo:refs_changed', body)).kind).toBe('branch-delete');
  });

  it('reads refId when the ref object is missing (older servers)', () => {
    const body = setPath(load('repo-refs-changed'), 'changes.0.ref', undefined);
    expect(triggerOf(hook('repo:refs_changed', body)).branch).toBe('master');
  });
});

describe('stash: the post-receive webhook plugin (no X-Event-Key)', () => {
  it('refChanges with their changesets, oldest first', () => {
    expect(triggerOf(hook(undefined, load('legacy-post-receive')))).toEqual({
      event: 'refChanges',
      kind: 'push',
      branch: 'master',
      head: 'f259e9032cdeb1e28d073e8a79a1fd6f9587f233',
      ref: 'refs/heads/master',
      scm: 'git',
      commits: [
        { id: '7c3b1e2a9d8f6e5d4c3b2a1908f7e6d5c4b3a291', message: 'Prepare release branch', author: 'jane@example.com' },
        {
          id: 'f259e9032cdeb1e28d073e8a79a1fd6f9587f233',
          message: "Updating poms for branch'release/3.0.0' with snapshot versions",
          author: 'jhocman@atlassian.com',
        },
      ],
    });
  });

  it('with several refs the changesets cannot be placed and are left out', () => {
    const body = load('legacy-post-receive');
    (body.refChanges as unknown[]).push({ refId: 'refs/tags/v3', fromHash: ZERO, toHash: TO, type: 'ADD' });
    const [branch, tag] = triggersOf(hook(undefined, body));
    expect(branch!.commits).toEqual([]);
    expect(tag).toMatchObject({ kind: 'tag', ref: 'refs/tags/v3' });
  });

  it('no header and no refChanges → 422', () => {
    expect(problemOf(hook(undefined, load('repo-refs-changed')), 422).field).toBe('headers.x-event-key');
  });
});

describe('stash: pull requests', () => {
  const pullRequest = (action: string, providerAction: string) => ({
    id: '1',
    url: 'https://bitbucket.example.com/projects/PROJ/repos/sluice-sample/pull-requests/1',
    action,
    providerAction,
    targetBranch: 'master',
    changesetKind: 'generic',
    sameRepository: true,
  });

  it.each([
    ['pr:opened', 'pr-opened', 'opened', 'ef8755f06ee4b28c96a847a95cb8ec8ed6ddd1ca'],
    ['pr:from_ref_updated', 'pr-from-ref-updated', 'updated', 'aab847db57e1e8c1f2fcb1bc8d8e8f7e9bd8b3ea'],
    ['pr:merged', 'pr-merged', 'merged', 'aab847db57e1e8c1f2fcb1bc8d8e8f7e9bd8b3ea'],
    ['pr:declined', 'pr-declined', 'closed', 'aab847db57e1e8c1f2fcb1bc8d8e8f7e9bd8b3ea'],
  ])('%s → %s', (event, name, action, head) => {
    expect(triggerOf(hook(event, load(name)))).toEqual({
      event,
      kind: 'pull-request',
      branch: 'feature/search',
      head,
      ref: 'refs/pull-requests/1/from',
      scm: 'git',
      commits: [],
      pullRequest: pullRequest(action, event),
    });
  });
});

describe('stash: a pull request from a fork', () => {
  it('comes from another repository: not from the same repository', () => {
    const body = load('pr-opened');
    ((body.pullRequest as Record<string, Record<string, Record<string, unknown>>>).fromRef!.repository!).id = 4242;
    expect(triggerOf(hook('pr:opened', body)).pullRequest!.sameRepository).toBe(false);
  });
});

describe('stash: other events', () => {
  it('diagnostics:ping ("Test connection") is answered without building', () => {
    expect(ignoredBy(hook('diagnostics:ping', load('diagnostics-ping')))).toMatch(/ping/);
  });

  it.each(['pr:reviewer:approved', 'pr:comment:added', 'pr:modified', 'repo:modified', 'repo:forked', 'mirror:repo_synchronized'])('%s → 422', (event) => {
    const p = problemOf(hook(event, load('pr-reviewer-approved')), 422);
    expect(p.field).toBe('headers.x-event-key');
    expect(p.message).toContain(JSON.stringify(event));
  });

  it.each(['repo:push', 'pullrequest:created'])('%s points at the bitbucket path', (event) => {
    expect(problemOf(hook(event, load('repo-refs-changed')), 422).message).toMatch(/\/1\/bitbucket\//);
  });
});

describe('stash: malformed bodies → 400 naming the field', () => {
  const cases: Array<[name: string, event: string | undefined, make: () => unknown, field: string, message: RegExp]> = [
    ['body not an object', 'repo:refs_changed', () => 'x', 'body', /JSON object/],
    ['no changes', 'repo:refs_changed', () => setPath(load('repo-refs-changed'), 'changes', undefined), 'changes', /required/],
    ['change without refId', 'repo:refs_changed', () => setPath(load('repo-refs-changed'), 'changes.0.refId', undefined), 'changes.0.refId', /required/],
    ['unknown change type', 'repo:refs_changed', () => setPath(load('repo-refs-changed'), 'changes.0.type', 'MOVE'), 'changes.0.type', /"ADD", "UPDATE", "DELETE"/],
    ['toHash not a commit', 'repo:refs_changed', () => setPath(load('repo-refs-changed'), 'changes.0.toHash', 'tip'), 'changes.0.toHash', /commit id/],
    ['a ref that is neither branch nor tag', 'repo:refs_changed', () => setPath(load('repo-refs-changed'), 'changes.0.refId', 'refs/notes/x'), 'changes.0.refId', /refs\/heads/],
    ['a bad branch name', 'repo:refs_changed', () => setPath(load('repo-refs-changed'), 'changes.0.refId', 'refs/heads/x.lock'), 'changes.0.refId', /\.lock/],
    ['pull request without fromRef', 'pr:opened', () => setPath(load('pr-opened'), 'pullRequest.fromRef', undefined), 'pullRequest.fromRef', /required/],
    ['pull request without latestCommit', 'pr:opened', () => setPath(load('pr-opened'), 'pullRequest.fromRef.latestCommit', undefined), 'pullRequest.fromRef.latestCommit', /required/],
    ['legacy refChanges not an array', undefined, () => ({ refChanges: {} }), 'refChanges', /expected array/],
  ];

  it.each(cases)('%s', (_name, event, make, field, message) => {
    const p = problemOf(hook(event, make()), 400);
    expect(p.field).toBe(field);
    expect(p.message).toMatch(message);
  });
});
