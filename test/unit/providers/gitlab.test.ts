import { gitlab } from '../../../src/providers/gitlab';
import { fixture, ignoredBy, problemOf, run, setPath, triggerOf } from './helpers';

const load = (name: string) => fixture('gitlab', name);
const hook = (event: string | undefined, body: unknown, query = {}) => run(gitlab, { 'x-gitlab-event': event }, body, query);

const HEAD = 'da1560886d4f094c3e6c9ef40349f7d38b5d27d7';

describe('gitlab: Push Hook', () => {
  it('a push to a branch, commits oldest first', () => {
    expect(triggerOf(hook('Push Hook', load('push')))).toEqual({
      event: 'Push Hook',
      kind: 'push',
      branch: 'master',
      head: HEAD,
      ref: 'refs/heads/master',
      scm: 'git',
      commits: [
        {
          id: 'b6568db1bc1dcd7f8b4d5a946b0b91f9dacd7327',
          message: 'Update Catalan translation to e38cb41.\n\nSee https://gitlab.com/gitlab-org/gitlab for more information',
          author: 'jordi@softcatala.org',
        },
        // `gitlabdev@dv6700.(none)` is what git makes of an unset address; it is still the address.
        { id: HEAD, message: 'fixed readme', author: 'gitlabdev@dv6700.(none)' },
      ],
    });
  });

  it('before all zeros: a branch-create', () => {
    expect(triggerOf(hook('Push Hook', load('push-branch-create')))).toEqual({
      event: 'Push Hook',
      kind: 'branch-create',
      branch: 'feature/login',
      head: '3c1ad7e0c5f4c6b2b9d5b61e1b9f6a4c0d2e8f71',
      ref: 'refs/heads/feature/login',
      scm: 'git',
      commits: [{ id: '3c1ad7e0c5f4c6b2b9d5b61e1b9f6a4c0d2e8f71', message: 'Add login form [no ci]\n', author: 'jane@example.com' }],
    });
  });

  it('after all zeros: a branch-delete without head', () => {
    expect(triggerOf(hook('Push Hook', load('push-branch-delete')))).toEqual({
      event: 'Push Hook',
      kind: 'branch-delete',
      branch: 'feature/login',
      head: null,
      ref: 'refs/heads/feature/login',
      scm: 'git',
      commits: [],
    });
  });

  it('uses the name when GitLab redacts the email', () => {
    const body = setPath(load('push'), 'commits.0.author.email', '[REDACTED]');
    expect(triggerOf(hook('Push Hook', body)).commits[0]!.author).toBe('Jordi Mallach');
  });

  it('a payload branch wins over ?branch=', () => {
    expect(triggerOf(hook('Push Hook', load('push'), { branch: 'other' })).branch).toBe('master');
  });
});

describe('gitlab: Tag Push Hook', () => {
  it('an annotated tag builds the commit it points at (checkout_sha)', () => {
    expect(triggerOf(hook('Tag Push Hook', load('tag-push')))).toEqual({
      event: 'Tag Push Hook',
      kind: 'tag',
      branch: null,
      head: HEAD,
      ref: 'refs/tags/v1.0.0',
      scm: 'git',
      commits: [],
    });
  });

  it('without checkout_sha the tag object itself', () => {
    const body = setPath(load('tag-push'), 'checkout_sha', null);
    expect(triggerOf(hook('Tag Push Hook', body)).head).toBe('82b3d5ae55f7080f1e6022629cdb57bfae7cccc7');
  });

  it('the branch comes from ?branch=', () => {
    expect(triggerOf(hook('Tag Push Hook', load('tag-push'), { branch: 'main' })).branch).toBe('main');
  });

  it('a deleted tag is a tag-delete', () => {
    expect(triggerOf(hook('Tag Push Hook', load('tag-push-delete')))).toMatchObject({ kind: 'tag-delete', head: null, ref: 'refs/tags/v1.0.0' });
  });
});

describe('gitlab: Merge Request Hook', () => {
  const pullRequest = (action: string, providerAction: string) => ({
    id: '1',
    url: 'http://example.com/diaspora/merge_requests/1',
    action,
    providerAction,
    targetBranch: 'master',
    changesetKind: 'generic',
    sameRepository: true,
  });

  it('open → opened, building the last commit of the source branch', () => {
    expect(triggerOf(hook('Merge Request Hook', load('merge-request-open')))).toEqual({
      event: 'Merge Request Hook',
      kind: 'pull-request',
      branch: 'ms-viewport',
      head: HEAD,
      ref: 'refs/merge-requests/1/head',
      scm: 'git',
      commits: [{ id: HEAD, message: 'fixed readme', author: 'gitlabdev@dv6700.(none)' }],
      pullRequest: pullRequest('opened', 'open'),
    });
  });

  it('update with oldrev (new commits) → updated', () => {
    const t = triggerOf(hook('Merge Request Hook', load('merge-request-update-commits')));
    expect(t.head).toBe('4e1c5a1f8d2b3a9e7c6f5d4b3a2918e7d6c5b4a3');
    expect(t.commits[0]!.author).toBe('jane@example.com');
    expect(t.pullRequest).toEqual(pullRequest('updated', 'update'));
  });

  it('a merge request from a fork (another project) is not from the same repository', () => {
    const body = load('merge-request-open');
    (body.object_attributes as Record<string, unknown>).source_project_id = 4242;
    expect(triggerOf(hook('Merge Request Hook', body)).pullRequest!.sameRepository).toBe(false);
  });

  it('update of labels → labeled', () => {
    expect(triggerOf(hook('Merge Request Hook', load('merge-request-update-labels'))).pullRequest!.action).toBe('labeled');
  });

  it('update of assignees → assigned', () => {
    const body = load('merge-request-update-labels');
    body.changes = { assignees: { previous: [], current: [{ id: 6, name: 'User1', username: 'user1' }] } };
    expect(triggerOf(hook('Merge Request Hook', body)).pullRequest!.action).toBe('assigned');
  });

  it('update of the title only is answered without building', () => {
    const body = load('merge-request-update-labels');
    body.changes = { title: { previous: 'MS', current: 'MS-Viewport' } };
    expect(ignoredBy(hook('Merge Request Hook', body))).toMatch(/update/);
  });

  it.each([
    ['merge-request-merge', 'merged', 'merge'],
    ['merge-request-close', 'closed', 'close'],
  ])('%s → %s', (name, action, providerAction) => {
    expect(triggerOf(hook('Merge Request Hook', load(name))).pullRequest).toEqual(pullRequest(action, providerAction));
  });

  it('reopen → reopened', () => {
    const body = setPath(load('merge-request-open'), 'object_attributes.action', 'reopen');
    expect(triggerOf(hook('Merge Request Hook', body)).pullRequest!.action).toBe('reopened');
  });

  it.each(['approved', 'unapproved', 'approval', 'unapproval'])('%s is answered without building', (action) => {
    const body = setPath(load('merge-request-approved'), 'object_attributes.action', action);
    expect(ignoredBy(hook('Merge Request Hook', body))).toContain(action);
  });
});

describe('gitlab: System Hook', () => {
  it.each([
    ['push', 'push', 'Push Hook'],
    ['tag-push', 'tag', 'Tag Push Hook'],
    ['merge-request-open', 'pull-request', 'Merge Request Hook'],
  ] as const)('%s is told by object_kind', (name, kind, event) => {
    expect(triggerOf(hook('System Hook', load(name)))).toMatchObject({ kind, event });
  });

  it('other system events → 422', () => {
    const body = { object_kind: 'repository_update', event_name: 'repository_update' };
    expect(problemOf(hook('System Hook', body), 422).field).toBe('object_kind');
  });

  it('without object_kind → 400', () => {
    expect(problemOf(hook('System Hook', {}), 400)).toEqual({ field: 'object_kind', message: 'required' });
  });
});

describe('gitlab: events not acted on → 422', () => {
  it.each(['Note Hook', 'Issue Hook', 'Pipeline Hook', 'Job Hook', 'Wiki Page Hook', 'Deployment Hook', 'Release Hook', 'push'])('%s', (event) => {
    const p = problemOf(hook(event, load('push')), 422);
    expect(p.field).toBe('headers.x-gitlab-event');
    expect(p.message).toContain(JSON.stringify(event));
  });

  it('no X-Gitlab-Event header', () => {
    expect(problemOf(hook(undefined, load('push')), 422).message).toMatch(/X-Gitlab-Event/);
  });
});

describe('gitlab: malformed bodies → 400 naming the field', () => {
  const cases: Array<[name: string, event: string | undefined, make: () => unknown, field: string, message: RegExp]> = [
    ['body not an object', 'Push Hook', () => 'ref=refs/heads/master', 'body', /JSON object/],
    ['push without ref', 'Push Hook', () => setPath(load('push'), 'ref', undefined), 'ref', /required/],
    ['push without before', 'Push Hook', () => setPath(load('push'), 'before', undefined), 'before', /required/],
    ['push with after not a commit', 'Push Hook', () => setPath(load('push'), 'after', 'main'), 'after', /commit id/],
    ['push with a bad commit', 'Push Hook', () => setPath(load('push'), 'commits.1.message', 42), 'commits.1.message', /expected string/],
    ['tag with a bad checkout_sha', 'Tag Push Hook', () => setPath(load('tag-push'), 'checkout_sha', 'zz'), 'checkout_sha', /commit id/],
    ['merge request without iid', 'Merge Request Hook', () => setPath(load('merge-request-open'), 'object_attributes.iid', undefined), 'object_attributes.iid', /required/],
    ['merge request without last_commit', 'Merge Request Hook', () => setPath(load('merge-request-open'), 'object_attributes.last_commit', undefined), 'object_attributes.last_commit', /required/],
    ['merge request without action', 'Merge Request Hook', () => setPath(load('merge-request-open'), 'object_attributes.action', undefined), 'object_attributes.action', /required/],
    ['merge request from a bad branch', 'Merge Request Hook', () => setPath(load('merge-request-open'), 'object_attributes.source_branch', 'x~1'), 'object_attributes.source_branch', /~/],
  ];

  it.each(cases)('%s', (_name, event, make, field, message) => {
    const p = problemOf(hook(event, make()), 400);
    expect(p.field).toBe(field);
    expect(p.message).toMatch(message);
  });
});
