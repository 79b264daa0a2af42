import { branchNameProblem } from '../../../src/core/names';
import type { TriggerEvent } from '../../../src/core/types';
import { parseDelivery } from '../../../src/providers/parse';
import { eventProblem, fromProviderTrigger, MAX_TRIGGER_COMMITS } from '../../../src/providers/event';
import { generic } from '../../../src/providers/generic';
import type { ProviderTrigger } from '../../../src/providers/types';

const SHA = '0123456789abcdef0123456789abcdef01234567';

const t = (over: Partial<ProviderTrigger> = {}): ProviderTrigger => ({
  event: 'push',
  kind: 'push',
  branch: 'dev',
  head: SHA,
  ref: 'refs/heads/dev',
  scm: 'git',
  commits: [],
  ...over,
});

function converted(trigger: ProviderTrigger, scm: 'git' | 'hg' = 'git'): TriggerEvent {
  const r = fromProviderTrigger('github', trigger, scm);
  if (!r.ok || !('event' in r)) throw new Error(`expected an event, got ${JSON.stringify(r)}`);
  return r.event;
}

describe('fromProviderTrigger', () => {
  it('a push', () => {
    const commits = [{ id: SHA, message: 'Fix', author: 'dev@example.com' }];
    expect(converted(t({ commits }))).toEqual({
      provider: 'github',
      op: 'push',
      branch: 'dev',
      head: SHA,
      ref: 'refs/heads/dev',
      scm: 'git',
      force: false,
      queuePosition: 'tail',
      env: {},
      kind: 'push',
      event: 'push',
      commits,
    });
  });

  it('no head: the tip of the branch (git HEAD, hg tip)', () => {
    expect(converted(t({ kind: 'branch-create', event: 'create', head: null })).head).toBe('HEAD');
    const hg = converted(t({ kind: 'push', head: null, ref: null, scm: 'hg', branch: 'default' }), 'hg');
    expect(hg).toMatchObject({ head: 'tip', scm: 'hg', branch: 'default' });
    expect(hg.ref).toBeUndefined();
  });

  it('a tag addresses the suite named after it, and builds its ref when no commit is given', () => {
    expect(converted(t({ kind: 'tag', event: 'create', branch: null, head: null, ref: 'refs/tags/v1.2' }))).toMatchObject({
      branch: 'v1.2',
      head: 'refs/tags/v1.2',
      ref: 'refs/tags/v1.2',
      kind: 'tag',
    });
    expect(converted(t({ kind: 'tag', branch: 'master', ref: 'refs/tags/v1.2' }))).toMatchObject({ branch: 'v1.2', head: SHA });
    expect(converted(t({ kind: 'tag-delete', event: 'delete', branch: null, head: null, ref: 'refs/tags/v1.2' })).branch).toBe('v1.2');
  });

  it('a tag without a readable name is ignored', () => {
    expect(fromProviderTrigger('bitbucket', t({ kind: 'tag', event: 'repo:push', ref: null, scm: 'hg' }), 'hg')).toEqual({
      ok: true,
      ignore: 'repo:push: a tag without a name Sluice can read',
    });
  });

  it('a pull request: in its target branch\'s suite, with changeset, action, and its private ref fetched as a refspec', () => {
    const e = converted(
      t({
        event: 'pull_request',
        kind: 'pull-request',
        branch: 'feature',
        ref: 'refs/pull/7/head',
        pullRequest: {
          id: '7',
          url: 'https://github.com/a/b/pull/7',
          action: 'updated',
          providerAction: 'synchronize',
          targetBranch: 'master',
          changesetKind: 'github',
          sameRepository: false,
        },
      }),
    );
    expect(e).toMatchObject({
      branch: 'master',
      sourceBranch: 'feature',
      head: SHA,
      ref: 'refs/pull/7/head',
      refspec: ['+refs/pull/7/head:refs/pull/7/head'],
      changeset: { kind: 'github', id: '7', url: 'https://github.com/a/b/pull/7' },
      action: 'updated',
      kind: 'pull-request',
    });
    expect(e.sameRepository).toBeUndefined();
  });

  it('a pull request without a commit id builds its own ref, or its source branch; never the target\'s tip', () => {
    const pr = { id: '7', action: 'opened', providerAction: 'opened', targetBranch: 'master', changesetKind: 'generic', sameRepository: true } as const;
    const withRef = converted(t({ kind: 'pull-request', branch: 'feature', head: null, ref: 'refs/pull/7/head', pullRequest: pr }));
    expect(withRef).toMatchObject({ branch: 'master', head: 'refs/pull/7/head', sameRepository: true });
    const withoutRef = converted(t({ kind: 'pull-request', branch: 'feature', head: null, ref: null, pullRequest: pr }));
    expect(withoutRef).toMatchObject({ branch: 'master', head: 'feature' });
  });

  it('a fork\'s pull request whose branch is named like the target still builds in the target\'s suite, untrusted', () => {
    const e = converted(
      t({
        kind: 'pull-request',
        branch: 'master',
        ref: 'refs/pull/9/head',
        pullRequest: { id: '9', action: 'opened', providerAction: 'opened', targetBranch: 'release', changesetKind: 'github', sameRepository: false },
      }),
    );
    expect(e).toMatchObject({ branch: 'release', sourceBranch: 'master', head: SHA });
    expect(e.sameRepository).toBeUndefined();
  });

  it('a pull request on a branch ref needs no refspec; one without a URL has none', () => {
    const e = converted(
      t({
        kind: 'pull-request',
        ref: 'refs/heads/dev',
        pullRequest: { id: '3', action: 'opened', providerAction: 'opened', targetBranch: null, changesetKind: 'generic', sameRepository: false },
      }),
    );
    expect(e.refspec).toBeUndefined();
    expect(e.changeset).toEqual({ kind: 'generic', id: '3' });
  });

  it('keeps the newest commits, messages cut at 16 KiB', () => {
    const commits = Array.from({ length: MAX_TRIGGER_COMMITS + 5 }, (_, i) => ({ id: `${i}`.padStart(40, '0'), message: `m${i}`, author: 'a' }));
    commits.push({ id: SHA, message: 'x'.repeat(20_000), author: 'b'.repeat(300) });
    const e = converted(t({ commits }));
    expect(e.commits).toHaveLength(MAX_TRIGGER_COMMITS);
    expect(e.commits!.at(-1)!.id).toBe(SHA);
    expect(e.commits!.at(-1)!.message).toHaveLength(16 * 1024);
    expect(e.commits!.at(-1)!.author).toHaveLength(255);
  });

  it('a hook of the other SCM is a 400', () => {
    expect(fromProviderTrigger('bitbucket', t({ scm: 'hg' }), 'git')).toEqual({
      ok: false,
      status: 400,
      field: 'scm',
      message: 'this is a hg hook; this repository uses git',
    });
  });

  it('checks what reaches git by the generic rules', () => {
    expect(fromProviderTrigger('gerrit', t({ ref: 'refs/changes/01/1/1 x' }), 'git')).toMatchObject({ ok: false, status: 400, field: 'ref' });
    expect(fromProviderTrigger('gerrit', t({ head: '-x' }), 'git')).toMatchObject({ ok: false, status: 400, field: 'head' });
    expect(
      fromProviderTrigger(
        'gerrit',
        t({ kind: 'pull-request', pullRequest: { id: 'a\u0000', action: 'opened', providerAction: 'x', targetBranch: null, changesetKind: 'gerrit', sameRepository: false } }),
        'git',
      ),
    ).toMatchObject({ ok: false, field: 'changeset.id' });
    expect(
      fromProviderTrigger(
        'gerrit',
        t({ kind: 'pull-request', pullRequest: { id: '1', url: 'https://x.example/\ud800', action: 'opened', providerAction: 'x', targetBranch: null, changesetKind: 'gerrit', sameRepository: false } }),
        'git',
      ),
    ).toMatchObject({ ok: false, field: 'changeset.url' });
  });
});

describe('eventProblem', () => {
  const base: TriggerEvent = { provider: 'x', op: 'push', branch: 'dev', head: 'HEAD', scm: 'git', force: false, queuePosition: 'tail', env: {} };
  it('is undefined for a good event', () => {
    expect(eventProblem(base)).toBeUndefined();
  });
  it.each<[Partial<TriggerEvent>, string]>([
    [{ branch: 'a..b' }, 'branch'],
    [{ branch: '' }, 'branch'],
    [{ head: 'a b' }, 'head'],
    [{ ref: '\u0001' }, 'ref'],
    [{ profileName: '-p' }, 'profile_name'],
    [{ refspec: ['ok', 'not ok'] }, 'refspec.1'],
    [{ changeset: { kind: 'generic', id: 'x'.repeat(256) } }, 'changeset.id'],
    [{ changeset: { kind: 'generic', url: 'javascript:alert(1)' } }, 'changeset.url'],
  ])('%j: names %s', (over, field) => {
    expect(eventProblem({ ...base, ...over })?.field).toBe(field);
  });
});

describe('invalid Unicode never reaches the database', () => {
  const JSON_CT = 'application/json';
  // JSON may spell a lone surrogate as an escape; such a string has no UTF-8 form.
  const lone = '"\\ud800"';
  it.each([
    [`{"branch":${lone}}`, 'branch'],
    [`{"head":${lone}}`, 'head'],
    [`{"ref":${lone}}`, 'ref'],
    [`{"profile_name":${lone}}`, 'profile_name'],
    [`{"refspec":[${lone}]}`, 'refspec.0'],
    [`{"env":{"A":${lone}}}`, 'env.A'],
    [`{"changeset":{"id":${lone}}}`, 'changeset.id'],
    [`{"changeset":{"url":"https://x.example/\\udc00"}}`, 'changeset.url'],
  ])('%s: 400 naming %s', (body, field) => {
    const r = parseDelivery(generic, { contentType: JSON_CT, body });
    expect(r).toMatchObject({ ok: false, status: 400, field });
  });

  it('branch names', () => {
    expect(branchNameProblem('a\udc00b')).toBe('must be valid Unicode');
    expect(branchNameProblem('emoji-😀')).toBeUndefined();
  });
});
