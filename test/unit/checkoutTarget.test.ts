import { checkoutTarget, REF_FETCHED } from '../../src/core/checkoutTarget';

const git = { scm: 'git' as const, branch: 'master' };

describe('checkoutTarget (git)', () => {
  it('builds the head when the trigger names no ref', () => {
    expect(checkoutTarget({ ...git, head: 'HEAD', ref: null })).toEqual({ head: 'HEAD', refspecs: [] });
    expect(checkoutTarget({ ...git, head: 'abc123', ref: null, refspecs: ['+refs/x/*:refs/x/*'] })).toEqual({ head: 'abc123', refspecs: ['+refs/x/*:refs/x/*'] });
  });

  it("fetches the ref and builds its tip when there is no head", () => {
    expect(checkoutTarget({ ...git, head: 'HEAD', ref: 'refs/review/42' })).toEqual({ head: REF_FETCHED, refspecs: [`+refs/review/42:${REF_FETCHED}`] });
    // A short name is resolved by the server, as git fetch does.
    expect(checkoutTarget({ ...git, head: 'HEAD', ref: 'feature' })).toEqual({ head: REF_FETCHED, refspecs: [`+feature:${REF_FETCHED}`] });
  });

  it('fetches the ref after the trigger\'s refspecs and builds the head it names', () => {
    expect(checkoutTarget({ ...git, head: 'f'.repeat(40), ref: 'refs/pull/7/head', refspecs: ['+refs/notes/*:refs/notes/*'] })).toEqual({
      head: 'f'.repeat(40),
      refspecs: ['+refs/notes/*:refs/notes/*', `+refs/pull/7/head:${REF_FETCHED}`],
    });
  });
});

describe('checkoutTarget (hg)', () => {
  const hg = { scm: 'hg' as const, branch: 'default' };
  it('builds a named bookmark or branch at its tip when no head is given', () => {
    expect(checkoutTarget({ ...hg, head: 'tip', ref: 'feature' })).toEqual({ head: 'feature', refspecs: [] });
  });
  it('keeps the head when given, or when the ref is the branch itself (the changegroup hook)', () => {
    expect(checkoutTarget({ ...hg, head: 'abcdef123456', ref: 'feature' })).toEqual({ head: 'abcdef123456', refspecs: [] });
    expect(checkoutTarget({ ...hg, head: 'tip', ref: 'default' })).toEqual({ head: 'tip', refspecs: [] });
  });
});
