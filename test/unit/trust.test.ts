/** What a build is trusted with, by what triggered it (core/trust.ts). */
import { buildTrust } from '../../src/core/trust';

describe('build trust', () => {
  it('a push to the branch (or its creation) gets the secrets and may be pushed', () => {
    expect(buildTrust({ kind: 'push' })).toEqual({ secrets: true, push: true, cache: true });
    expect(buildTrust({ kind: 'branch-create' })).toEqual({ secrets: true, push: true, cache: true });
    expect(buildTrust({})).toEqual({ secrets: true, push: true, cache: true }); // a generic trigger without a changeset
  });

  it('a pull request, from any provider or generic with a changeset, gets neither', () => {
    expect(buildTrust({ kind: 'pull-request' })).toEqual({ secrets: false, push: false, cache: false });
    expect(buildTrust({ changeset: { kind: 'github', id: '42' } })).toEqual({ secrets: false, push: false, cache: false });
  });

  it('a pull request from the repository itself gets the secrets only where the repository trusts such pull requests; never pushed', () => {
    const trusting = { trustSameRepoPullRequests: true };
    expect(buildTrust({ kind: 'pull-request', sameRepository: true })).toEqual({ secrets: false, push: false, cache: false });
    expect(buildTrust({ kind: 'pull-request', sameRepository: true }, trusting)).toEqual({ secrets: true, push: false, cache: false });
    // A fork's, or one whose provider did not say: never.
    expect(buildTrust({ kind: 'pull-request' }, trusting)).toEqual({ secrets: false, push: false, cache: false });
    expect(buildTrust({ changeset: { kind: 'generic', id: '1' } }, trusting)).toEqual({ secrets: false, push: false, cache: false });
  });

  it('a push that brings its own env may not write cache entries: the env could change what an install does', () => {
    expect(buildTrust({ kind: 'push', env: { FEATURE: 'on' } })).toEqual({ secrets: true, push: true, cache: false });
    expect(buildTrust({ kind: 'push', env: {} })).toEqual({ secrets: true, push: true, cache: true });
  });

  it('a tag build keeps its secrets but is not pushed to a branch', () => {
    expect(buildTrust({ kind: 'tag' })).toEqual({ secrets: true, push: false, cache: false });
  });
});
