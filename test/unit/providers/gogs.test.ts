import { gogs } from '../../../src/providers/gogs';
import { fixture, ignoredBy, problemOf, run, setPath, triggerOf } from './helpers';

const load = (name: string) => fixture('gogs', name);
const hook = (event: string | undefined, body: unknown, query = {}) => run(gogs, { 'x-gogs-event': event }, body, query);

const C1 = 'b0c3e8d7a6f5e4d3c2b1a0f9e8d7c6b5a4f3e2d1';
const C2 = 'd8fce16c72a2ff56a5afc8a08645a6ce45491794';

describe('gogs: push', () => {
  it('a push, commits turned oldest first', () => {
    expect(triggerOf(hook('push', load('push')))).toEqual({
      event: 'push',
      kind: 'push',
      branch: 'master',
      head: C2,
      ref: 'refs/heads/master',
      scm: 'git',
      commits: [
        { id: C1, message: 'Document the release steps\n', author: 'jane@example.com' },
        { id: C2, message: 'Webhook Test\n', author: 'john@example.com' },
      ],
    });
  });

  it('before all zeros: a branch-create', () => {
    expect(triggerOf(hook('push', load('push-branch-create')))).toMatchObject({ kind: 'branch-create', branch: 'docs', head: C1 });
  });

  it('a tag push', () => {
    expect(triggerOf(hook('push', load('push-tag')))).toMatchObject({ kind: 'tag', branch: null, head: C2, ref: 'refs/tags/v0.9.0', commits: [] });
  });
});

describe('gogs: create and delete', () => {
  it.each([
    ['create', 'create-branch', { kind: 'branch-create', branch: 'docs', head: C1, ref: 'refs/heads/docs' }],
    ['create', 'create-tag', { kind: 'tag', branch: 'master', head: C2, ref: 'refs/tags/v0.9.0' }],
    ['delete', 'delete-branch', { kind: 'branch-delete', branch: 'docs', head: null, ref: 'refs/heads/docs' }],
    ['delete', 'delete-tag', { kind: 'tag-delete', branch: 'master', head: null, ref: 'refs/tags/v0.9.0' }],
  ])('%s %s', (event, name, expected) => {
    expect(triggerOf(hook(event, load(name), { branch: 'master' }))).toMatchObject({ event, ...expected });
  });

  it('older Gogs sends no sha with create: no head', () => {
    const body = setPath(load('create-branch'), 'sha', undefined);
    expect(triggerOf(hook('create', body)).head).toBeNull();
  });
});

describe('gogs: pull_request', () => {
  it.each([
    ['pull-request-opened', 'opened', 'opened'],
    ['pull-request-synchronized', 'updated', 'synchronized'],
    ['pull-request-closed-merged', 'merged', 'closed'],
    ['pull-request-assigned', 'assigned', 'assigned'],
  ])('%s → %s, built from the pull request ref (Gogs sends no commit)', (name, action, providerAction) => {
    expect(triggerOf(hook('pull_request', load(name)))).toEqual({
      event: 'pull_request',
      kind: 'pull-request',
      branch: 'docs',
      head: null,
      ref: 'refs/pull/2/head',
      scm: 'git',
      commits: [],
      pullRequest: {
        id: '2',
        url: 'https://gogs.example.com/acme/sluice-sample/pulls/2',
        action,
        providerAction,
        targetBranch: 'master',
        changesetKind: 'generic',
        sameRepository: true,
      },
    });
  });

  it('closed without merging → closed', () => {
    const body = setPath(load('pull-request-closed-merged'), 'pull_request.merged', false);
    expect(triggerOf(hook('pull_request', body)).pullRequest!.action).toBe('closed');
  });

  it('label_updated → labeled; reopened → reopened', () => {
    expect(triggerOf(hook('pull_request', setPath(load('pull-request-opened'), 'action', 'label_updated'))).pullRequest!.action).toBe('labeled');
    expect(triggerOf(hook('pull_request', setPath(load('pull-request-opened'), 'action', 'reopened'))).pullRequest!.action).toBe('reopened');
  });

  it('milestoned is answered without building', () => {
    expect(ignoredBy(hook('pull_request', load('pull-request-milestoned')))).toContain('milestoned');
  });
});

describe('gogs: events not acted on → 422', () => {
  it.each(['issues', 'issue_comment', 'release', 'fork'])('%s', (event) => {
    expect(problemOf(hook(event, load('push')), 422)).toEqual({
      field: 'headers.x-gogs-event',
      message: `event "${event}" is not one Sluice acts on; trigger the hook on push, create, delete, pull_request events only`,
    });
  });

  it('no X-Gogs-Event header', () => {
    expect(problemOf(hook(undefined, load('push')), 422).message).toMatch(/X-Gogs-Event/);
  });
});

describe('gogs: malformed bodies → 400 naming the field', () => {
  const cases: Array<[name: string, event: string | undefined, make: () => unknown, field: string, message: RegExp]> = [
    ['body not an object', 'push', () => 'push', 'body', /JSON object/],
    ['push with a tree-ish ref', 'push', () => setPath(load('push'), 'ref', 'HEAD'), 'ref', /full ref/],
    ['push with a numeric commit message', 'push', () => setPath(load('push'), 'commits.0.message', 1), 'commits.0.message', /expected string/],
    ['create of a repository', 'create', () => setPath(load('create-branch'), 'ref_type', 'repository'), 'ref_type', /"branch", "tag"/],
    ['pull request without head_branch', 'pull_request', () => setPath(load('pull-request-opened'), 'pull_request.head_branch', undefined), 'pull_request.head_branch', /required/],
    ['pull request without number', 'pull_request', () => setPath(load('pull-request-opened'), 'number', undefined), 'number', /required/],
  ];

  it.each(cases)('%s', (_name, event, make, field, message) => {
    const p = problemOf(hook(event, make()), 400);
    expect(p.field).toBe(field);
    expect(p.message).toMatch(message);
  });
});
