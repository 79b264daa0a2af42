/**
 * What becomes of a delivery (core/intake.ts): the rules per ref, and which carrier records
 * what. The rules themselves are selection.test.ts's; here, the records they leave.
 */
import { intakesOf, planDelivery, type DeliveryKnowledge } from '../../src/core/intake';
import type { TriggerEvent } from '../../src/core/types';

const event = (over: Partial<TriggerEvent>): TriggerEvent => ({ provider: 'builds', branch: 'master', head: 'HEAD', force: false, queuePosition: 'tail', env: {}, ...over }) as TriggerEvent;

const known = (over: Partial<DeliveryKnowledge> = {}): DeliveryKnowledge => ({
  repo: { id: 7, pullRequestOnly: false, branchBlacklist: [] },
  suiteFor: (branch) => ({ master: { id: 1, workers: 2 }, dev: { id: 2, workers: 1 } })[branch],
  branchState: () => ({ enabled: true, hidden: false, lockedVisible: false }),
  ...over,
});

const delivery = (...events: TriggerEvent[]) => ({ guid: 'g-1', provider: 'builds', acceptedAt: 1_000, events: events as [TriggerEvent, ...TriggerEvent[]] });

describe('planDelivery', () => {
  it('a build: one ci_event, a session keyed by the guid and its ref, with the suite’s workers', () => {
    const plan = planDelivery(delivery(event({ force: true, queuePosition: 'head', profileName: 'fast' })), known());
    expect(plan).toEqual({
      decision: 'build',
      record: { guid: 'g-1', repoId: 7, provider: 'builds', decision: 'build', reason: null, trigger: expect.objectContaining({ branch: 'master' }), acceptedAt: 1_000 },
      branchUpdates: [],
      sessions: [{ key: 'g-1:0', suiteId: 1, branch: 'master', ref: null, head: 'HEAD', force: true, profileName: 'fast', workers: 2, queuePosition: 'head' }],
    });
  });

  it('several refs: one ci_event, a session per ref that builds, the others named in the reason', () => {
    const plan = planDelivery(delivery(event({ branch: 'dev', ref: 'refs/heads/dev' }), event({ branch: 'nosuite', ref: 'refs/heads/nosuite' }), event({ ref: 'refs/heads/master' })), known());
    if (plan.decision === 'drop') throw new Error('dropped');
    expect(plan.sessions.map((s) => [s.key, s.suiteId])).toEqual([
      ['g-1:0', 2],
      ['g-1:2', 1],
    ]);
    expect(plan.record.reason).toContain('refs/heads/nosuite: drop');
  });

  it('a drop that shows a branch seen for the first time still carries that update', () => {
    const plan = planDelivery(delivery(event({ branch: 'feature' })), known({ branchState: () => null }));
    expect(plan).toEqual({ decision: 'drop', reasons: ['no suite for branch "feature"'], branchUpdates: [{ branch: 'feature', hidden: false }] });
  });
});

describe('intakesOf', () => {
  it('gives each suite the record and its own session', () => {
    const plan = planDelivery(delivery(event({ branch: 'dev', ref: 'refs/heads/dev' }), event({ ref: 'refs/heads/master' })), known());
    const carried = intakesOf(plan, 7, 1_000);
    expect(carried.repo).toBeNull();
    expect(carried.suites.map((c) => [c.session.suiteId, c.intake.sessions.map((s) => s.key), c.intake.record?.guid])).toEqual([
      [2, ['g-1:0'], 'g-1'],
      [1, ['g-1:1'], 'g-1'],
    ]);
  });

  it('gives a delivery that builds nothing to the repository’s intake, and nothing at all to record to nobody', () => {
    const skipped = planDelivery(delivery(event({ kind: 'branch-delete', branch: 'dev' })), known());
    expect(intakesOf(skipped, 7, 1_000)).toEqual({ suites: [], repo: expect.objectContaining({ record: expect.objectContaining({ decision: 'skip' }), branchUpdates: [{ branch: 'dev', hidden: true }], sessions: [] }) });
    const dropped = planDelivery(delivery(event({ branch: 'nosuite' })), known());
    expect(intakesOf(dropped, 7, 1_000)).toEqual({ suites: [], repo: null });
  });
});
