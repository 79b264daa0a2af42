import examples from '@octokit/webhooks-examples';
import { github } from '../../../src/providers/github';
import { ignoredBy, problemOf, run, setPath, triggerOf, ZERO } from './helpers';

// Real payloads: the examples GitHub's own webhook documentation is built from.

function example(event: string, pick: (e: Record<string, unknown>) => boolean = () => true): Record<string, unknown> {
  const definition = examples.find((d) => d.name === event);
  if (!definition) throw new Error(`no examples for ${event}`);
  const found = (definition.examples as unknown as Record<string, unknown>[]).find(pick);
  if (!found) throw new Error(`no matching ${event} example`);
  return structuredClone(found);
}

const hook = (event: string | undefined, body: unknown, query = {}) => run(github, { 'x-github-event': event }, body, query);

const SHA = '6113728f27ae82c7b1a177c8d03f9e96e0adf246';
const PR_HEAD = 'ec26c3e57ca3a959ca5aad62de7213c562f8c821';

const branchPush = () => example('push', (e) => e.ref === 'refs/heads/master');
const tagPush = (deleted: boolean) => example('push', (e) => e.ref === 'refs/tags/simple-tag' && e.deleted === deleted);

describe('github: ping', () => {
  it('is answered without building, for every example', () => {
    const definition = examples.find((d) => d.name === 'ping')!;
    for (const body of definition.examples) expect(ignoredBy(hook('ping', body))).toMatch(/ping/);
  });
});

describe('github: push', () => {
  it('the first push to a branch is a branch-create with its commits', () => {
    expect(triggerOf(hook('push', branchPush()))).toEqual({
      event: 'push',
      kind: 'branch-create',
      branch: 'master',
      head: SHA,
      ref: 'refs/heads/master',
      scm: 'git',
      commits: [{ id: SHA, message: 'Initial commit', author: '21031067+Codertocat@users.noreply.github.com' }],
    });
  });

  it('a push to an existing branch is a push', () => {
    const body = branchPush();
    Object.assign(body, { created: false, before: 'a10867b14bb761a232cd80139fbd4c0d33264240' });
    const t = triggerOf(hook('push', body));
    expect(t.kind).toBe('push');
    expect(t.branch).toBe('master');
    expect(t.head).toBe(SHA);
  });

  it('lists commits oldest first with the head commit last', () => {
    const body = branchPush();
    const first = { ...(body.head_commit as object), id: 'a10867b14bb761a232cd80139fbd4c0d33264240', message: 'Older [no ci]' };
    body.commits = [first, body.head_commit];
    expect(triggerOf(hook('push', body)).commits.map((c) => c.id)).toEqual(['a10867b14bb761a232cd80139fbd4c0d33264240', SHA]);
  });

  it('adds head_commit when commits leave it out (a branch made from an existing commit)', () => {
    const body = branchPush();
    body.commits = [];
    expect(triggerOf(hook('push', body)).commits).toEqual([
      { id: SHA, message: 'Initial commit', author: '21031067+Codertocat@users.noreply.github.com' },
    ]);
  });

  it('falls back to the author name when there is no email', () => {
    const body = branchPush();
    setPath(body, 'commits.0.author.email', null);
    body.head_commit = null;
    expect(triggerOf(hook('push', body)).commits[0]!.author).toBe('Codertocat');
  });

  it('a deleted branch is a branch-delete with no head', () => {
    const body = branchPush();
    Object.assign(body, { created: false, deleted: true, before: SHA, after: ZERO, commits: [], head_commit: null });
    expect(triggerOf(hook('push', body))).toEqual({
      event: 'push',
      kind: 'branch-delete',
      branch: 'master',
      head: null,
      ref: 'refs/heads/master',
      scm: 'git',
      commits: [],
    });
  });

  it('a pushed tag is a tag; its branch comes from ?branch= when the payload has none', () => {
    const body = tagPush(false);
    expect(triggerOf(hook('push', body))).toMatchObject({ kind: 'tag', branch: null, head: SHA, ref: 'refs/tags/simple-tag' });
    expect(triggerOf(hook('push', body, { branch: 'release' })).branch).toBe('release');
    expect(triggerOf(hook('push', body, { branch: 'refs/heads/release' })).branch).toBe('release');
  });

  it('a tag pushed at a branch tip takes the branch from base_ref, before ?branch=', () => {
    const body = tagPush(false);
    body.base_ref = 'refs/heads/master';
    expect(triggerOf(hook('push', body, { branch: 'other' })).branch).toBe('master');
  });

  it.each(
    examples
      .find((d) => d.name === 'push')!
      .examples.map((e, i) => [i, e] as const)
      .filter(([, e]) => (e as { deleted?: boolean }).deleted === true),
  )('a deleted tag (example %i) is a tag-delete', (_i, body) => {
    expect(triggerOf(hook('push', structuredClone(body)))).toMatchObject({ kind: 'tag-delete', head: null, ref: 'refs/tags/simple-tag', commits: [] });
  });

  it('a payload branch wins over ?branch=', () => {
    expect(triggerOf(hook('push', branchPush(), { branch: 'other' })).branch).toBe('master');
  });

  it('ignores pushes to refs that are neither branches nor tags', () => {
    const body = branchPush();
    body.ref = 'refs/notes/commits';
    expect(ignoredBy(hook('push', body))).toMatch(/refs\/notes\/commits/);
  });
});

describe('github: create and delete', () => {
  it.each([
    ['create', 'tag', 'tag'],
    ['create', 'branch', 'branch-create'],
    ['delete', 'tag', 'tag-delete'],
    ['delete', 'branch', 'branch-delete'],
  ] as const)('%s of a %s is %s', (event, refType, kind) => {
    const body = example(event);
    Object.assign(body, { ref_type: refType, ref: refType === 'tag' ? 'simple-tag' : 'feature/x' });
    const t = triggerOf(hook(event, body));
    expect(t).toEqual({
      event,
      kind,
      branch: refType === 'branch' ? 'feature/x' : null,
      head: null,
      ref: refType === 'tag' ? 'refs/tags/simple-tag' : 'refs/heads/feature/x',
      scm: 'git',
      commits: [],
    });
  });

  it('every real create and delete example parses', () => {
    for (const event of ['create', 'delete'] as const) {
      for (const body of examples.find((d) => d.name === event)!.examples) {
        expect(triggerOf(hook(event, body)).ref).toBe('refs/tags/simple-tag');
      }
    }
  });

  it('a tag create takes ?branch=', () => {
    expect(triggerOf(hook('create', example('create'), { branch: 'main' })).branch).toBe('main');
  });
});

describe('github: pull_request', () => {
  const pr = (action: string) => example('pull_request', (e) => e.action === action);

  it.each([
    ['opened', 'opened'],
    ['synchronize', 'updated'],
    ['reopened', 'reopened'],
    ['closed', 'closed'],
    ['assigned', 'assigned'],
    ['labeled', 'labeled'],
  ] as const)('%s → %s', (action, normalized) => {
    expect(triggerOf(hook('pull_request', pr(action)))).toEqual({
      event: 'pull_request',
      kind: 'pull-request',
      branch: 'changes',
      head: PR_HEAD,
      ref: 'refs/pull/2/head',
      scm: 'git',
      commits: [],
      pullRequest: {
        id: '2',
        url: 'https://github.com/Codertocat/Hello-World/pull/2',
        action: normalized,
        providerAction: action,
        targetBranch: 'master',
        changesetKind: 'github',
        sameRepository: true,
      },
    });
  });

  it('a pull request from a fork, or whose fork was deleted, is not from the same repository', () => {
    const fork = pr('opened');
    setPath(fork, 'pull_request.head.repo.id', 999_999);
    setPath(fork, 'pull_request.head.repo.full_name', 'mallory/Hello-World');
    expect(triggerOf(hook('pull_request', fork)).pullRequest!.sameRepository).toBe(false);
    const gone = pr('opened');
    setPath(gone, 'pull_request.head.repo', null);
    expect(triggerOf(hook('pull_request', gone)).pullRequest!.sameRepository).toBe(false);
  });

  it('closed with merged: true is merged', () => {
    const body = pr('closed');
    setPath(body, 'pull_request.merged', true);
    expect(triggerOf(hook('pull_request', body)).pullRequest!.action).toBe('merged');
  });

  it.each(['converted_to_draft', 'ready_for_review', 'review_requested', 'review_request_removed', 'unassigned', 'unlabeled', 'locked', 'unlocked'])(
    '%s is answered without building',
    (action) => {
      expect(ignoredBy(hook('pull_request', pr(action)))).toContain(action);
    },
  );

  it('an action named like an Object property is not mistaken for one', () => {
    const body = pr('opened');
    body.action = 'constructor';
    expect(ignoredBy(hook('pull_request', body))).toContain('constructor');
  });

  it('leaves out a pull request URL that is not http(s)', () => {
    const body = pr('opened');
    setPath(body, 'pull_request.html_url', 'javascript:alert(1)');
    expect(triggerOf(hook('pull_request', body)).pullRequest).not.toHaveProperty('url');
  });
});

describe('github: events not acted on', () => {
  const acted = new Set(['push', 'create', 'delete', 'pull_request', 'ping']);
  const others = examples.filter((d) => !acted.has(d.name) && d.examples.length > 0).map((d) => [d.name, d.examples[0]] as const);

  it.each(others)('%s → 422 naming the event', (name, body) => {
    const p = problemOf(hook(name, body), 422);
    expect(p.field).toBe('headers.x-github-event');
    expect(p.message).toContain(JSON.stringify(name));
    expect(p.message).toMatch(/push, create, delete, pull_request/);
  });

  it('a delivery without X-GitHub-Event → 422 (wrong provider path)', () => {
    const p = problemOf(hook(undefined, branchPush()), 422);
    expect(p.field).toBe('headers.x-github-event');
    expect(p.message).toMatch(/X-GitHub-Event/);
  });
});

describe('github: form-encoded deliveries', () => {
  it('reads the JSON in the payload field', () => {
    expect(triggerOf(hook('push', { payload: JSON.stringify(branchPush()) })).branch).toBe('master');
  });

  it('invalid JSON in payload → 400 payload', () => {
    expect(problemOf(hook('push', { payload: '{nope' }), 400).field).toBe('payload');
  });
});

describe('github: malformed bodies → 400 naming the field', () => {
  it.each([
    ['a string', 'push'],
    ['an array', []],
    ['null', null],
    ['a number', 7],
  ] as const)('body that is %s', (_what, body) => {
    expect(problemOf(hook('push', body), 400)).toEqual({ field: 'body', message: 'expected a JSON object' });
  });

  const cases: Array<[string, () => [string, Record<string, unknown>], string, RegExp]> = [
    ['push without ref', () => ['push', setPath(branchPush(), 'ref', undefined)], 'ref', /required/],
    ['push with a numeric after', () => ['push', setPath(branchPush(), 'after', 5)], 'after', /expected string/],
    ['push with a non-hex after', () => ['push', setPath(branchPush(), 'after', 'HEAD')], 'after', /commit id/],
    ['push whose commit id is not hex', () => ['push', setPath(branchPush(), 'commits.0.id', 'xyz')], 'commits.0.id', /commit id/],
    ['push with commits not an array', () => ['push', setPath(branchPush(), 'commits', 'abc')], 'commits', /expected array/],
    ['push with a short ref', () => ['push', setPath(branchPush(), 'ref', 'master')], 'ref', /full ref/],
    ['push to a branch with ".."', () => ['push', setPath(branchPush(), 'ref', 'refs/heads/a..b')], 'ref', /\.\./],
    ['push to a branch with a control character', () => ['push', setPath(branchPush(), 'ref', 'refs/heads/a\u0001b')], 'ref', /control/],
    ['push to a branch named like an option', () => ['push', setPath(branchPush(), 'ref', 'refs/heads/-x')], 'ref', /"-"/],
    ['push to a huge branch name', () => ['push', setPath(branchPush(), 'ref', `refs/heads/${'a'.repeat(300)}`)], 'ref', /255/],
    ['create without ref_type', () => ['create', setPath(example('create'), 'ref_type', undefined)], 'ref_type', /required/],
    ['create with an odd ref_type', () => ['create', setPath(example('create'), 'ref_type', 'repository')], 'ref_type', /"branch", "tag"/],
    ['pull request without head sha', () => ['pull_request', setPath(example('pull_request'), 'pull_request.head.sha', undefined)], 'pull_request.head.sha', /required/],
    ['pull request with a string number', () => ['pull_request', setPath(example('pull_request'), 'number', '2')], 'number', /expected number/],
    ['pull request without action', () => ['pull_request', setPath(example('pull_request'), 'action', undefined)], 'action', /required/],
    ['pull request from a bad branch name', () => ['pull_request', setPath(example('pull_request'), 'pull_request.head.ref', 'a b')], 'pull_request.head.ref', /whitespace/],
  ];

  it.each(cases)('%s', (_name, make, field, message) => {
    const [event, body] = make();
    const p = problemOf(hook(event, body), 400);
    expect(p.field).toBe(field);
    expect(p.message).toMatch(message);
  });

  it('?branch= is checked like any branch name', () => {
    expect(problemOf(hook('push', tagPush(false), { branch: 'a..b' }), 400).field).toBe('query.branch');
    expect(problemOf(hook('push', tagPush(false), { branch: ['a', 'b'] as unknown as string }), 400)).toEqual({
      field: 'query.branch',
      message: 'given more than once',
    });
  });
});
