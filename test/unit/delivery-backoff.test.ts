import { backoffDelay, jittered } from '../../src/delivery/backoff';

describe('backoffDelay', () => {
  const policy = { initialIntervalMs: 1_000, backoffCoefficient: 2, maximumIntervalMs: 3_600_000 };
  it('doubles from the initial interval and stops at the maximum', () => {
    expect([1, 2, 3, 4].map((a) => backoffDelay(a, policy))).toEqual([1_000, 2_000, 4_000, 8_000]);
    expect(backoffDelay(30, policy)).toBe(3_600_000);
  });
  it("fills in Temporal's defaults", () => {
    expect(backoffDelay(1, {})).toBe(1_000);
    expect(backoffDelay(20, {})).toBe(100_000);
  });
  it('with the default schedule (36 attempts, 1 h cap), gives up about a day after the first attempt', () => {
    let total = 0;
    for (let attempt = 1; attempt < 36; attempt++) total += backoffDelay(attempt, policy);
    expect(total / 3_600_000).toBeGreaterThan(20);
    expect(total / 3_600_000).toBeLessThan(30);
  });
});

describe('jittered', () => {
  it('spreads a delay evenly over ±25%', () => {
    expect(jittered(1_000, () => 0)).toBe(750);
    expect(jittered(1_000, () => 0.5)).toBe(1_000);
    expect(jittered(1_000, () => 0.999999)).toBe(1_250);
  });
  it('varies from call to call', () => {
    const seen = new Set(Array.from({ length: 50 }, () => jittered(10_000)));
    expect(seen.size).toBeGreaterThan(10);
  });
});
