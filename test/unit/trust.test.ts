/** What a build is trusted with, by what triggered it (core/trust.ts). */
import { buildTrust } from '../../src/core/trust';

describe('build trust', () => {
  it('a push to the branch (or its creation) gets the secrets and may be pushed', () => {
    expect(buildTrust({ kind: 'push' })).toEqual({ secrets: true, push: true });
    expect(buildTrust({ kind: 'branch-create' })).toEqual({ secrets: true, push: true });
    expect(buildTrust({})).toEqual({ secrets: true, push: true }); // a generic trigger without a changeset
  });

  it('a pull request, from any provider or generic with a changeset, gets neither', () => {
    expect(buildTrust({ kind: 'pull-request' })).toEqual({ secrets: false, push: false });
    expect(buildTrust({ changeset: { kind: 'github', id: '42' } })).toEqual({ secrets: false, push: false });
  });

  it('a pull request from the repository itself gets the secrets only where the repository trusts such pull requests; never pushed', () => {
    const trusting = { trustSameRepoPullRequests: true };
    expect(buildTrust({ kind: 'pull-request', sameRepository: true })).toEqual({ secrets: false, push: false });
    expect(buildTrust({ kind: 'pull-request', sameRepository: true }, trusting)).toEqual({ secrets: true, push: false });
    // A fork's, or one whose provider did not say: never.
    expect(buildTrust({ kind: 'pull-request' }, trusting)).toEqual({ secrets: false, push: false });
    expect(buildTrust({ changeset: { kind: 'generic', id: '1' } }, trusting)).toEqual({ secrets: false, push: false });
  });

  it('a tag build keeps its secrets but is not pushed to a branch', () => {
    expect(buildTrust({ kind: 'tag' })).toEqual({ secrets: true, push: false });
  });
});
