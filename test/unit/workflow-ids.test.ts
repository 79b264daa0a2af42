import { idsOf, installationOf, workflowIds } from '../../src/core/workflowIds';

describe('workflow ids of an installation', () => {
  const ids = workflowIds('0a1b2c3d');

  it('carry the installation, so two installations never name the same workflow', () => {
    expect([ids.suite(7), ids.session(12), ids.squashed([40, 41])]).toEqual([
      'sluice-0a1b2c3d-suite-7',
      'sluice-0a1b2c3d-session-12',
      'sluice-0a1b2c3d-squashed-40',
    ]);
    expect(workflowIds('ffffffff').session(12)).not.toBe(ids.session(12));
  });

  it('tell the installation back from any id, and nothing from an id of another kind', () => {
    expect(installationOf(ids.session(12))).toBe('0a1b2c3d');
    expect(idsOf(ids.suite(7)).session(3)).toBe('sluice-0a1b2c3d-session-3');
    for (const other of ['suite-7', 'session-12', 'sluice-xyz-suite-1', 'sluice-0a1b2c3d']) expect(installationOf(other)).toBeNull();
    expect(() => idsOf('sluice-xyz-suite-1')).toThrow('not a workflow id of a Sluice installation');
    expect(() => idsOf('deploy-12')).toThrow('not a workflow id of a Sluice installation');
  });

  it('let a workflow started before installations talk to its own kind, so it finishes after an upgrade', () => {
    const legacy = idsOf('session-12');
    expect([legacy.suite(7), legacy.session(3), legacy.squashed([40, 41])]).toEqual(['suite-7', 'session-3', 'squashed-40']);
    expect(idsOf('suite-7').session(12)).toBe('session-12');
  });
});
