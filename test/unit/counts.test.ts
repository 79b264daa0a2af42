import { countTests, emptyCounts, finalStatus, isFailure, planStatus, sumCounts } from '../../src/core/counts';
import { COUNT_KEYS } from '../../src/core/types';

describe('countTests', () => {
  it('has every key of spec §2, all zero, when nothing was found', () => {
    expect(Object.keys(emptyCounts()).sort()).toEqual([...COUNT_KEYS].sort());
    expect(countTests(0, 0, [])).toEqual(emptyCounts());
  });

  it('puts undiscovered work in notstarted and running work in started', () => {
    expect(countTests(5, 2, ['passed'])).toEqual({ ...emptyCounts(), notstarted: 2, started: 2, passed: 1 });
  });

  it('counts each finished status in its own bucket', () => {
    const c = countTests(5, 0, ['passed', 'failed', 'error', 'skipped', 'passed']);
    expect(c).toEqual({ ...emptyCounts(), passed: 2, failed: 1, error: 1, skipped: 1 });
  });

  it('always adds up to the number of test files', () => {
    for (let total = 0; total < 6; total++)
      for (let running = 0; running <= total; running++)
        for (let done = 0; done + running <= total; done++) {
          const c = countTests(total, running, Array(done).fill('failed'));
          expect(Object.values(c).reduce((a, b) => a + b, 0)).toBe(total);
        }
  });
});

describe('finalStatus', () => {
  it('is passed when everything passed or was skipped', () => {
    expect(finalStatus(['passed', 'skipped', 'passed'])).toBe('passed');
  });
  it('is failed as soon as one test failed, even beside errors', () => {
    expect(finalStatus(['passed', 'error', 'failed'])).toBe('failed');
  });
  it('is error when a test could not run properly and none failed', () => {
    expect(finalStatus(['passed', 'error'])).toBe('error');
  });
});

describe('isFailure', () => {
  it('treats failed and error as failures, passed and skipped not', () => {
    expect(['passed', 'failed', 'error', 'skipped'].map((s) => isFailure(s as never))).toEqual([false, true, true, false]);
  });
});

describe('sumCounts', () => {
  it('adds every key', () => {
    const a = { ...emptyCounts(), passed: 2, failed: 1 };
    const b = { ...emptyCounts(), passed: 1, error: 3, notstarted: 1 };
    expect(sumCounts([a, b])).toEqual({ ...emptyCounts(), passed: 3, failed: 1, error: 3, notstarted: 1 });
    expect(sumCounts([])).toEqual(emptyCounts());
  });
});

describe('planStatus', () => {
  it('is passed only when every session passed', () => {
    expect(planStatus(['passed', 'passed'])).toBe('passed');
  });
  it('is failed when one failed, error when one erred and none failed', () => {
    expect(planStatus(['passed', 'failed', 'error'])).toBe('failed');
    expect(planStatus(['passed', 'error'])).toBe('error');
  });
  it('is stopped when it was stopped, and error when nothing ran', () => {
    expect(planStatus(['stopped', 'failed'])).toBe('stopped');
    expect(planStatus([])).toBe('error');
  });
});
