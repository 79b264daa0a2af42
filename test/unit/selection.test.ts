import {
  blacklistEntry,
  combineSelections,
  headCommit,
  selectTrigger,
  triggerKind,
  type BranchState,
  type Selection,
  type SelectionInput,
} from '../../src/core/selection';
import { TRIGGER_KINDS, type TriggerKind } from '../../src/core/types';

const SHA = 'a'.repeat(40);

type Trigger = SelectionInput['trigger'];

const trigger = (over: Partial<Trigger> = {}): Trigger => ({ branch: 'master', head: 'HEAD', ...over });
const repo = (over: Partial<SelectionInput['repo']> = {}): SelectionInput['repo'] => ({ pullRequestOnly: false, branchBlacklist: [], ...over });
const row = (over: Partial<BranchState> = {}): BranchState => ({ enabled: true, hidden: false, lockedVisible: false, ...over });

function select(over: { trigger?: Partial<Trigger>; repo?: Partial<SelectionInput['repo']>; branch?: BranchState | null; hasSuite?: boolean } = {}): Selection {
  return selectTrigger({
    trigger: trigger(over.trigger),
    repo: repo(over.repo),
    branch: over.branch === undefined ? null : over.branch,
    hasSuite: over.hasSuite ?? true,
  });
}

describe('triggerKind', () => {
  it('is the kind when given', () => {
    for (const kind of TRIGGER_KINDS) expect(triggerKind({ kind })).toBe(kind);
  });
  it('is push for a generic trigger, pull-request with a changeset', () => {
    expect(triggerKind({})).toBe('push');
    expect(triggerKind({ changeset: { kind: 'generic', id: '4' } })).toBe('pull-request');
  });
});

describe('build', () => {
  it('a push to a branch with a suite builds, and creates the branch row when there is none', () => {
    expect(select()).toEqual({ decision: 'build', reason: null, branchUpdate: { hidden: false } });
  });

  it('a push to a known, shown branch changes no row', () => {
    expect(select({ branch: row() })).toEqual({ decision: 'build', reason: null });
  });

  it('a generic trigger (no kind) builds like a push', () => {
    expect(select({ trigger: { kind: undefined }, branch: row() })).toEqual({ decision: 'build', reason: null });
  });

  it('a branch-create builds like a push', () => {
    expect(select({ trigger: { kind: 'branch-create' }, branch: row() })).toEqual({ decision: 'build', reason: null });
  });

  it.each(['opened', 'updated', 'reopened', 'assigned', 'labeled', undefined])('a pull request (%s) builds and touches no row', (action) => {
    expect(select({ trigger: { kind: 'pull-request', action } })).toEqual({ decision: 'build', reason: null });
  });

  it('a generic trigger with a changeset is a pull request', () => {
    expect(select({ trigger: { changeset: { kind: 'generic', id: '9' } }, repo: { pullRequestOnly: true } })).toEqual({
      decision: 'build',
      reason: null,
    });
  });
});

describe('skip tags (head commit)', () => {
  const commits = (...messages: string[]) => messages.map((message, i) => ({ id: i === messages.length - 1 ? SHA : `${i}`.repeat(40), message, author: '' }));

  it.each([
    ['[no ci] docs', 'skip tag [no ci] in the first line'],
    ['Fix typo [no-ci]', 'skip tag [no-ci] in the first line'],
    ['[NO CI] shouting', 'skip tag [no ci] in the first line'],
    ['@wip refactor', 'skip tag @wip'],
    ['Refactor\n\nstill @wip', 'skip tag @wip'],
  ])('%j is skipped', (message, reason) => {
    const s = select({ trigger: { head: SHA, commits: commits(message) }, branch: row() });
    expect(s.decision).toBe('skip');
    expect(s.reason).toContain(reason);
    expect(s.reason).toContain(SHA.slice(0, 12));
    expect(s.branchUpdate).toBeUndefined();
  });

  it('only the head commit counts', () => {
    expect(select({ trigger: { head: SHA, commits: commits('[no ci] older', 'newer') }, branch: row() }).decision).toBe('build');
    expect(select({ trigger: { head: SHA, commits: commits('older', '[no ci] newer') }, branch: row() }).decision).toBe('skip');
  });

  it('[no ci] below the first line does not skip', () => {
    expect(select({ trigger: { head: SHA, commits: commits('Docs\n\n[no ci]') }, branch: row() }).decision).toBe('build');
  });

  it('a skip tag on a commit that is not the head does not skip', () => {
    const other = [{ id: 'b'.repeat(40), message: '[no ci]', author: '' }];
    expect(select({ trigger: { head: SHA, commits: other }, branch: row() }).decision).toBe('build');
  });

  it('a skipped push still shows a hidden branch', () => {
    expect(select({ trigger: { head: SHA, commits: commits('[no ci]') }, branch: row({ hidden: true }) })).toEqual({
      decision: 'skip',
      reason: expect.stringContaining('[no ci]'),
      branchUpdate: { hidden: false },
    });
  });

  it('applies to pull requests and to tags with a suite', () => {
    expect(select({ trigger: { kind: 'pull-request', action: 'updated', head: SHA, commits: commits('@wip') } }).decision).toBe('skip');
    expect(select({ trigger: { kind: 'tag', branch: 'v1', head: SHA, commits: commits('[no ci]') } }).decision).toBe('skip');
  });
});

describe('headCommit', () => {
  const c = (id: string, message = id) => ({ id, message, author: '' });
  it('is the commit whose id is head, abbreviated either way', () => {
    expect(headCommit({ head: SHA, commits: [c(SHA, 'x'), c('b'.repeat(40))] })?.message).toBe('x');
    expect(headCommit({ head: SHA.slice(0, 12), commits: [c(SHA, 'x')] })?.message).toBe('x');
    expect(headCommit({ head: SHA, commits: [c(SHA.slice(0, 12), 'x')] })?.message).toBe('x');
    expect(headCommit({ head: SHA.toUpperCase(), commits: [c(SHA, 'x')] })?.message).toBe('x');
  });
  it('is the last commit when head is symbolic', () => {
    expect(headCommit({ head: 'HEAD', commits: [c('1'.repeat(40), 'a'), c('2'.repeat(40), 'b')] })?.message).toBe('b');
    expect(headCommit({ head: 'refs/tags/v1', commits: [c('1'.repeat(40), 'a')] })?.message).toBe('a');
  });
  it('is undefined without commits, or when head is not among them', () => {
    expect(headCommit({ head: SHA })).toBeUndefined();
    expect(headCommit({ head: SHA, commits: [] })).toBeUndefined();
    expect(headCommit({ head: SHA, commits: [c('b'.repeat(40))] })).toBeUndefined();
    expect(headCommit({ head: SHA, commits: [c('', 'empty id')] })).toBeUndefined();
  });
});

describe('pull-request-only', () => {
  it.each<TriggerKind>(['push', 'branch-create'])('a %s is skipped, and still shows the branch', (kind) => {
    expect(select({ trigger: { kind }, repo: { pullRequestOnly: true }, branch: row({ hidden: true }) })).toEqual({
      decision: 'skip',
      reason: `pull-request-only: the repository builds pull requests only, and this is a ${kind}`,
      branchUpdate: { hidden: false },
    });
  });
  it('a generic trigger without a changeset is skipped', () => {
    expect(select({ repo: { pullRequestOnly: true }, branch: row() }).decision).toBe('skip');
  });
  it('a tag with a suite is skipped', () => {
    expect(select({ trigger: { kind: 'tag', branch: 'v1' }, repo: { pullRequestOnly: true } }).reason).toMatch(/^pull-request-only/);
  });
  it('a pull request builds', () => {
    expect(select({ trigger: { kind: 'pull-request', action: 'opened' }, repo: { pullRequestOnly: true } }).decision).toBe('build');
  });
  it('a branch without a suite is still dropped, not skipped', () => {
    expect(select({ repo: { pullRequestOnly: true }, hasSuite: false }).decision).toBe('drop');
  });
});

describe('pull requests closed or merged', () => {
  it.each(['closed', 'merged'])('%s is skipped', (action) => {
    expect(select({ trigger: { kind: 'pull-request', action } })).toEqual({ decision: 'skip', reason: `pull request ${action}: nothing new to build` });
  });
});

describe('branch blacklist', () => {
  it.each([
    ['gh-pages', ['gh-pages'], 'gh-pages'],
    ['gh-pages', ['refs/heads/gh-pages'], 'refs/heads/gh-pages'],
    ['dependabot/npm/x', ['dependabot/**'], 'dependabot/**'],
    ['release/1.2', ['release/*'], 'release/*'],
    ['wip-1', ['wip-?'], 'wip-?'],
    ['a', ['{a,b}'], '{a,b}'],
    ['feature/x', ['docs', 'feature/*'], 'feature/*'],
  ])('%s matches %j', (branch, list, entry) => {
    expect(blacklistEntry(branch, list)).toBe(entry);
  });

  it.each([
    ['release/1/2', ['release/*']],
    ['master', ['!master']],
    ['master', ['!x']],
    ['gh-pages2', ['gh-pages']],
    ['Master', ['master']],
    ['master', []],
    ['master', ['[']],
    ['x', ['feature/*']],
  ])('%s does not match %j', (branch, list) => {
    expect(blacklistEntry(branch, list)).toBeUndefined();
  });

  it('an exact name wins over an earlier pattern', () => {
    expect(blacklistEntry('docs', ['d*', 'docs'])).toBe('docs');
  });

  it('drops a blacklisted branch whatever the event, touching no row', () => {
    for (const kind of ['push', 'branch-create', 'branch-delete', 'pull-request', undefined] as const) {
      for (const branch of [null, row({ hidden: true }), row()]) {
        expect(select({ trigger: { kind, branch: 'gh-pages' }, repo: { branchBlacklist: ['gh-*'] }, branch })).toEqual({
          decision: 'drop',
          reason: 'branch "gh-pages" is blacklisted (matches "gh-*")',
        });
      }
    }
  });

  it('names the entry only when it is a pattern', () => {
    expect(select({ repo: { branchBlacklist: ['master'] } }).reason).toBe('branch "master" is blacklisted');
  });

  it('does not apply to tags', () => {
    expect(select({ trigger: { kind: 'tag', branch: 'v1' }, repo: { branchBlacklist: ['*'] } }).decision).toBe('build');
  });
});

describe('branch toggles', () => {
  it('a branch switched off is dropped, and a push still shows it', () => {
    expect(select({ branch: row({ enabled: false, hidden: true }) })).toEqual({
      decision: 'drop',
      reason: 'branch "master" is switched off',
      branchUpdate: { hidden: false },
    });
    expect(select({ branch: row({ enabled: false }) })).toEqual({ decision: 'drop', reason: 'branch "master" is switched off' });
  });
  it('a pull request into the suite of a branch switched off is dropped', () => {
    expect(select({ trigger: { kind: 'pull-request', action: 'opened' }, branch: row({ enabled: false }) })).toEqual({
      decision: 'drop',
      reason: 'branch "master" is switched off',
    });
  });
});

describe('branch hiding', () => {
  const del = (branch: BranchState | null, hasSuite = true) => select({ trigger: { kind: 'branch-delete' }, branch, hasSuite });

  it('a branch-delete hides the branch and builds nothing', () => {
    const expected = { decision: 'skip', reason: 'branch "master" deleted: nothing to build; branch hidden', branchUpdate: { hidden: true } };
    expect(del(row())).toEqual(expected);
    expect(del(null)).toEqual(expected);
    expect(del(row(), false)).toEqual(expected);
    expect(del(row({ enabled: false }))).toEqual(expected);
  });

  it('an already hidden branch needs no change', () => {
    expect(del(row({ hidden: true }))).toEqual({ decision: 'skip', reason: 'branch "master" deleted: nothing to build; branch hidden' });
  });

  it('a branch locked visible stays visible', () => {
    expect(del(row({ lockedVisible: true }))).toEqual({
      decision: 'skip',
      reason: 'branch "master" deleted: nothing to build; it stays visible (locked visible)',
    });
  });

  it('a later push shows it again', () => {
    expect(select({ branch: row({ hidden: true }) })).toEqual({ decision: 'build', reason: null, branchUpdate: { hidden: false } });
    expect(select({ trigger: { kind: 'branch-create' }, branch: row({ hidden: true }) }).branchUpdate).toEqual({ hidden: false });
  });

  it('a pull request does not show a hidden branch', () => {
    expect(select({ trigger: { kind: 'pull-request', action: 'updated' }, branch: row({ hidden: true }) })).toEqual({ decision: 'build', reason: null });
  });
});

describe('no suite', () => {
  it('a branch without a suite is dropped (and a push still records the branch)', () => {
    expect(select({ hasSuite: false })).toEqual({ decision: 'drop', reason: 'no suite for branch "master"', branchUpdate: { hidden: false } });
    expect(select({ hasSuite: false, branch: row() })).toEqual({ decision: 'drop', reason: 'no suite for branch "master"' });
  });
  it('a pull request without a suite is dropped', () => {
    expect(select({ trigger: { kind: 'pull-request', action: 'opened' }, hasSuite: false }).decision).toBe('drop');
  });
});

describe('tags', () => {
  it('a tag without a suite named after it is skipped, not dropped', () => {
    expect(select({ trigger: { kind: 'tag', branch: 'v1.0' }, hasSuite: false })).toEqual({
      decision: 'skip',
      reason: 'tag "v1.0": tags build only in a suite named after the tag, and there is none',
    });
  });
  it('a tag with a suite named after it builds', () => {
    expect(select({ trigger: { kind: 'tag', branch: 'v1.0' } })).toEqual({ decision: 'build', reason: null });
  });
  it('a tag-delete is skipped', () => {
    expect(select({ trigger: { kind: 'tag-delete', branch: 'v1.0' } })).toEqual({ decision: 'skip', reason: 'tag "v1.0" deleted: nothing to build' });
  });
  it('a huge name is cut short in the reason', () => {
    const name = 'x'.repeat(200);
    expect(select({ trigger: { kind: 'tag-delete', branch: name } }).reason!.length).toBeLessThan(130);
  });
});

describe('every combination', () => {
  const rows: (BranchState | null)[] = [null];
  for (const enabled of [true, false]) for (const hidden of [true, false]) for (const lockedVisible of [true, false]) rows.push(row({ enabled, hidden, lockedVisible }));
  const messages = [undefined, 'plain', '[no ci] x', 'x @wip'];
  const cases: { input: SelectionInput; blacklisted: boolean; kind: TriggerKind; message?: string; action?: string }[] = [];
  for (const kind of TRIGGER_KINDS)
    for (const blacklisted of [false, true])
      for (const branch of rows)
        for (const hasSuite of [true, false])
          for (const pullRequestOnly of [false, true])
            for (const message of messages)
              for (const action of kind === 'pull-request' ? ['opened', 'updated', 'closed', 'merged', 'labeled'] : [undefined]) {
                cases.push({
                  kind,
                  blacklisted,
                  message,
                  action,
                  input: {
                    trigger: trigger({ kind, action, head: SHA, commits: message === undefined ? undefined : [{ id: SHA, message, author: '' }] }),
                    repo: repo({ pullRequestOnly, branchBlacklist: blacklisted ? ['mas*'] : ['other'] }),
                    branch,
                    hasSuite,
                  },
                });
              }

  it(`holds the rules over all ${cases.length} combinations`, () => {
    expect(cases.length).toBeGreaterThan(2000);
    for (const { input, blacklisted, kind, message, action } of cases) {
      const s = selectTrigger(input);
      const isTag = kind === 'tag' || kind === 'tag-delete';
      const b = input.branch;
      const ctx = JSON.stringify({ kind, blacklisted, b, hasSuite: input.hasSuite, pr: input.repo.pullRequestOnly, message, action });
      try {
        // A reason exactly when not building.
        expect(s.reason === null).toBe(s.decision === 'build');
        // Tags are never dropped and never touch branch rows.
        if (isTag) {
          expect(s.decision).not.toBe('drop');
          expect(s.branchUpdate).toBeUndefined();
        }
        if (blacklisted && !isTag) expect(s).toEqual({ decision: 'drop', reason: expect.any(String) });
        if (kind === 'branch-delete' || kind === 'tag-delete') expect(s.decision).not.toBe('build');
        if (kind === 'branch-delete' && !blacklisted) {
          expect(s.decision).toBe('skip');
          const shouldHide = !(b?.lockedVisible ?? false) && !(b?.hidden ?? false);
          expect(s.branchUpdate).toEqual(shouldHide ? { hidden: true } : undefined);
        }
        if (kind === 'pull-request') expect(s.branchUpdate).toBeUndefined();
        if ((kind === 'push' || kind === 'branch-create') && !blacklisted) {
          expect(s.branchUpdate).toEqual(b === null || b.hidden ? { hidden: false } : undefined);
        }
        if (!isTag && !blacklisted && kind !== 'branch-delete' && (b?.enabled === false || !input.hasSuite)) expect(s.decision).toBe('drop');
        const skipTag = message !== undefined && message !== 'plain';
        const buildable =
          input.hasSuite &&
          !(blacklisted && !isTag) &&
          kind !== 'branch-delete' &&
          kind !== 'tag-delete' &&
          (isTag || b?.enabled !== false) &&
          (!input.repo.pullRequestOnly || kind === 'pull-request') &&
          action !== 'closed' &&
          action !== 'merged' &&
          !skipTag;
        expect(s.decision === 'build').toBe(buildable);
      } catch (err) {
        throw new Error(`${ctx}\n${(err as Error).message}`, { cause: err });
      }
    }
  });
});

describe('combineSelections', () => {
  const build: Selection = { decision: 'build', reason: null };
  const skip: Selection = { decision: 'skip', reason: 'tag deleted' };
  const drop: Selection = { decision: 'drop', reason: 'no suite' };

  it('one ref: its own decision and reason', () => {
    expect(combineSelections([{ label: 'a', selection: build }])).toEqual({ decision: 'build', reason: null });
    expect(combineSelections([{ label: 'a', selection: skip }])).toEqual({ decision: 'skip', reason: 'tag deleted' });
    expect(combineSelections([{ label: 'a', selection: drop }])).toEqual({ decision: 'drop', reason: 'no suite' });
  });

  it('several: build beats skip beats drop; the reason lists the refs not built', () => {
    expect(combineSelections([{ label: 'a', selection: build }, { label: 'b', selection: build }])).toEqual({ decision: 'build', reason: null });
    expect(
      combineSelections([
        { label: 'refs/heads/a', selection: drop },
        { label: 'refs/heads/b', selection: build },
        { label: 'refs/tags/v1', selection: skip },
      ]),
    ).toEqual({ decision: 'build', reason: 'refs/heads/a: drop: no suite; refs/tags/v1: skip: tag deleted' });
    expect(combineSelections([{ label: 'a', selection: drop }, { label: 'b', selection: skip }])).toEqual({
      decision: 'skip',
      reason: 'a: drop: no suite; b: skip: tag deleted',
    });
    expect(combineSelections([{ label: 'a', selection: drop }, { label: 'b', selection: drop }]).decision).toBe('drop');
  });
});
