import { changeRef, gerrit } from '../../../src/providers/gerrit';
import { fixture, ignoredBy, problemOf, run, setPath, triggerOf, ZERO } from './helpers';

const load = (name: string) => fixture('gerrit', name);
// Gerrit sends no event header: the body tells.
const hook = (body: unknown, query = {}) => run(gerrit, {}, body, query);

const REV = '4a8b3c2d1e0f9a8b7c6d5e4f3a2b1c0d9e8f7a6b';
const CHANGE_ID = 'I5e2b8f4a7c9d1e3f5a7b9c1d3e5f7a9b1c3d5e7f';
const URL = 'https://review.example.com/c/sluice-sample/+/1234';

const review = (action: string) => ({
  id: '1234',
  url: URL,
  action,
  providerAction: 'patchset-created',
  targetBranch: 'master',
  changesetKind: 'gerrit',
  sameRepository: false,
});

describe('gerrit: stream-events patchset-created', () => {
  it('a later patch set is an updated review of its branch, built from its change ref', () => {
    expect(triggerOf(hook(load('stream-patchset-created')))).toEqual({
      event: 'patchset-created',
      kind: 'pull-request',
      branch: 'master',
      head: REV,
      ref: 'refs/changes/34/1234/2',
      scm: 'git',
      commits: [{ id: REV, message: `Parse config lazily\n\nSpeeds up start by 300ms.\n\nChange-Id: ${CHANGE_ID}\n`, author: 'jane@example.com' }],
      pullRequest: review('updated'),
    });
  });

  it('patch set 1 opens the review', () => {
    expect(triggerOf(hook(load('stream-patchset-created-first'))).pullRequest!.action).toBe('opened');
  });

  it('older Gerrit: subject instead of commitMessage, string numbers, no ref', () => {
    const body = load('stream-patchset-created');
    setPath(body, 'change.commitMessage', undefined);
    setPath(body, 'change.number', '1234');
    setPath(body, 'patchSet.number', '2');
    setPath(body, 'patchSet.ref', undefined);
    const t = triggerOf(hook(body));
    expect(t.commits[0]!.message).toBe('Parse config lazily');
    expect(t.ref).toBe('refs/changes/34/1234/2');
  });

  it('without number or URL the Change-Id names the review', () => {
    const body = load('stream-patchset-created');
    setPath(body, 'change.number', undefined);
    setPath(body, 'change.url', undefined);
    const t = triggerOf(hook(body));
    expect(t.pullRequest).toMatchObject({ id: CHANGE_ID });
    expect(t.pullRequest).not.toHaveProperty('url');
    expect(t.ref).toBe('refs/changes/34/1234/2');
  });
});

describe('gerrit: stream-events ref-updated', () => {
  it('a direct push or submit to a branch is a push', () => {
    expect(triggerOf(hook(load('stream-ref-updated')))).toEqual({
      event: 'ref-updated',
      kind: 'push',
      branch: 'master',
      head: REV,
      ref: 'refs/heads/master',
      scm: 'git',
      commits: [],
    });
  });

  it('older Gerrit names the branch without refs/heads/', () => {
    const body = setPath(load('stream-ref-updated'), 'refUpdate.refName', 'stable-2.1');
    expect(triggerOf(hook(body))).toMatchObject({ branch: 'stable-2.1', ref: 'refs/heads/stable-2.1' });
  });

  it('a new branch, a deleted branch, a tag', () => {
    expect(triggerOf(hook(setPath(load('stream-ref-updated'), 'refUpdate.oldRev', ZERO))).kind).toBe('branch-create');
    expect(triggerOf(hook(setPath(load('stream-ref-updated'), 'refUpdate.newRev', ZERO))).kind).toBe('branch-delete');
    const tag = setPath(load('stream-ref-updated'), 'refUpdate.refName', 'refs/tags/v2.0');
    expect(triggerOf(hook(tag, { branch: 'master' }))).toMatchObject({ kind: 'tag', branch: 'master', ref: 'refs/tags/v2.0' });
  });

  it.each(['refs/changes/34/1234/2', 'refs/changes/34/1234/meta', 'refs/meta/config', 'refs/cache-automerge/4a/8b3c'])('%s is Gerrit bookkeeping', (ref) => {
    const body = setPath(load('stream-ref-updated-change'), 'refUpdate.refName', ref);
    expect(ignoredBy(hook(body))).toContain(ref);
  });

  it('other refs are neither branch nor tag', () => {
    expect(ignoredBy(hook(setPath(load('stream-ref-updated'), 'refUpdate.refName', 'refs/notes/review')))).toMatch(/neither/);
  });
});

describe('gerrit: hook arguments posted as JSON', () => {
  it('patchset-created: the change number comes from the change URL', () => {
    expect(triggerOf(hook(load('hook-patchset-created')))).toEqual({
      event: 'patchset-created',
      kind: 'pull-request',
      branch: 'master',
      head: REV,
      ref: 'refs/changes/34/1234/2',
      scm: 'git',
      commits: [],
      pullRequest: review('updated'),
    });
  });

  it('accepts change_url and --change-url spellings', () => {
    const body = load('hook-patchset-created');
    const url = body['change-url'];
    delete body['change-url'];
    expect(triggerOf(hook({ ...body, change_url: url })).pullRequest!.id).toBe('1234');
    expect(triggerOf(hook({ ...body, '--change-url': url })).pullRequest!.id).toBe('1234');
  });

  it('old-style change URLs (https://host/1234) work too', () => {
    const body = Object.assign(load('hook-patchset-created'), { 'change-url': 'https://review.example.com/7', patchset: '1' });
    expect(triggerOf(hook(body))).toMatchObject({ ref: 'refs/changes/07/7/1', pullRequest: { id: '7', action: 'opened' } });
  });

  it('without a change URL: the Change-Id names it, and there is no change ref to fetch', () => {
    const body = load('hook-patchset-created');
    delete body['change-url'];
    const t = triggerOf(hook(body));
    expect(t.ref).toBeNull();
    expect(t.pullRequest!.id).toBe(`sluice-sample~master~${CHANGE_ID}`);
  });

  it('ref-updated hook arguments are a push', () => {
    expect(triggerOf(hook(load('hook-ref-updated')))).toMatchObject({ event: 'ref-updated', kind: 'push', branch: 'master', head: REV });
  });
});

describe('gerrit: events not acted on → 422', () => {
  it.each(['comment-added', 'change-merged', 'change-abandoned', 'reviewer-added', 'topic-changed'])('%s', (type) => {
    const p = problemOf(hook(Object.assign(load('stream-comment-added'), { type })), 422);
    expect(p.field).toBe('type');
    expect(p.message).toContain(JSON.stringify(type));
  });
});

describe('gerrit: malformed bodies → 400 naming the field', () => {
  const cases: Array<[name: string, make: () => unknown, field: string, message: RegExp]> = [
    ['body not an object', () => [], 'body', /JSON object/],
    ['type not a string', () => ({ type: 3 }), 'type', /expected string/],
    ['patchset-created without patchSet', () => setPath(load('stream-patchset-created'), 'patchSet', undefined), 'patchSet', /required/],
    ['patchset-created without branch', () => setPath(load('stream-patchset-created'), 'change.branch', undefined), 'change.branch', /required/],
    ['a revision that is not a commit', () => setPath(load('stream-patchset-created'), 'patchSet.revision', 'HEAD'), 'patchSet.revision', /commit id/],
    ['a patch set ref elsewhere', () => setPath(load('stream-patchset-created'), 'patchSet.ref', 'refs/heads/master'), 'patchSet.ref', /refs\/changes/],
    ['a non-numeric patch set', () => setPath(load('stream-patchset-created'), 'patchSet.number', 'two'), 'patchSet.number', /number/],
    ['no number, URL or Change-Id', () => setPath(setPath(setPath(load('stream-patchset-created'), 'change.number', undefined), 'change.url', undefined), 'change.id', undefined), 'change', /Change-Id/],
    ['ref-updated without refUpdate', () => setPath(load('stream-ref-updated'), 'refUpdate', undefined), 'refUpdate', /required/],
    ['ref-updated to a bad branch name', () => setPath(load('stream-ref-updated'), 'refUpdate.refName', 'refs/heads/a@{b'), 'refUpdate.refName', /@\{/],
    ['ref-updated to something not a commit', () => setPath(load('stream-ref-updated'), 'refUpdate.newRev', 'tip'), 'refUpdate.newRev', /commit id/],
    ['hook ref-updated to something not a commit', () => setPath(load('hook-ref-updated'), 'newrev', 'tip'), 'newrev', /commit id/],
    ['hook without commit', () => setPath(load('hook-patchset-created'), 'commit', undefined), 'commit', /required/],
    ['hook without branch', () => setPath(load('hook-patchset-created'), 'branch', undefined), 'branch', /required/],
    ['hook ref-updated without newrev', () => setPath(load('hook-ref-updated'), 'newrev', undefined), 'newrev', /required/],
    ['an empty object', () => ({}), 'branch', /required/],
  ];

  it.each(cases)('%s', (_name, make, field, message) => {
    const p = problemOf(hook(make()), 400);
    expect(p.field).toBe(field);
    expect(p.message).toMatch(message);
  });
});

describe('gerrit: changeRef', () => {
  it.each([
    ['1234', '2', 'refs/changes/34/1234/2'],
    ['5', '1', 'refs/changes/05/5/1'],
    ['100', '3', 'refs/changes/00/100/3'],
  ])('%s patch set %s → %s', (change, patchset, ref) => {
    expect(changeRef(change, patchset)).toBe(ref);
  });
});
