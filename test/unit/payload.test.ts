import { emptyCounts } from '../../src/core/counts';
import { buildPayload, epochSeconds, type PayloadContext, type SessionSnapshot } from '../../src/core/payload';

const ctx: PayloadContext = {
  sessionId: 42,
  guid: '6f1c1c52-1d2e-4c57-9a7e-0a4c7b0e1b11',
  parentSession: null,
  url: 'https://ci.example.com/1/reports/42',
  profileName: 'default',
  branch: 'master',
  ref: 'refs/heads/master',
  workers: 2,
  repo: { name: 'app', url: 'ssh://git@example.com/acme/app.git', orgName: 'acme' },
};

const snap: SessionSnapshot = {
  status: 'running',
  counts: { ...emptyCounts(), notstarted: 3 },
  commitId: 'a'.repeat(40),
  committers: ['dev@example.com'],
  timing: { ci_received_at: 1_700_000_000.25 },
  stoppedBy: null,
};

const at = new Date('2026-11-22T10:00:00.000Z');

describe('buildPayload', () => {
  it('has every field of spec §2 with the session as it is now', () => {
    expect(buildPayload('start', ctx, snap, 'xid-1', at)).toEqual({
      event: 'start',
      timestamp: '2026-11-22T10:00:00.000Z',
      session: 42,
      guid: ctx.guid,
      url: ctx.url,
      profile_name: 'default',
      commit_id: 'a'.repeat(40),
      committers: ['dev@example.com'],
      status: 'running',
      counts: { ...emptyCounts(), notstarted: 3 },
      workers: 2,
      timing: { ci_received_at: 1_700_000_000.25 },
      branch: 'master',
      ref: 'refs/heads/master',
      repository: { name: 'app', url: 'ssh://git@example.com/acme/app.git', org_name: 'acme' },
      xid: 'xid-1',
    });
  });

  it('leaves parent_session and stopped_by out unless they apply', () => {
    const p = buildPayload('received', ctx, snap, 'x', at);
    expect(p).not.toHaveProperty('parent_session');
    expect(p).not.toHaveProperty('stopped_by');
    const q = buildPayload('stop', { ...ctx, parentSession: 7 }, { ...snap, status: 'stopped', stoppedBy: 'ann@example.com' }, 'x', at);
    expect(q.parent_session).toBe(7);
    expect(q.stopped_by).toBe('ann@example.com');
  });

  it('copies the snapshot, so later changes to the session do not alter a queued payload', () => {
    const live: SessionSnapshot = { ...snap, counts: { ...snap.counts }, timing: { ...snap.timing }, committers: ['a'] };
    const p = buildPayload('test', ctx, live, 'x', at);
    live.counts.passed = 9;
    live.timing.exec = 1;
    (live.committers as string[]).push('b');
    expect(p.counts.passed).toBe(0);
    expect(p.timing).not.toHaveProperty('exec');
    expect(p.committers).toEqual(['a']);
  });
});

describe('epochSeconds', () => {
  it('keeps the fraction of a second', () => {
    expect(epochSeconds(1_700_000_000_250)).toBe(1_700_000_000.25);
  });
});
