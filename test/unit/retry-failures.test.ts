/**
 * The retry model's numbers (core/retry.ts) and the one table of failure types
 * (activities/failures.ts) every activity throws by.
 */
import { DELIVERY_FAILURE_TYPES, FAILURE_TYPES } from '../../src/activities/failures';
import { FAILURE_TYPES as DELIVERY_TABLE } from '../../src/activities/delivery';
import { DEFAULT_POST_RETRY, isLastAttempt, retryDelayMs, type RetrySettings } from '../../src/core/retry';

/** The waits between the attempts a policy allows. */
const waits = (r: RetrySettings) => Array.from({ length: r.maximumAttempts - 1 }, (_, i) => retryDelayMs(i + 1, r));

describe('post-build retry policies', () => {
  it('default to 3 attempts, 2 s and 5 s apart, 2 s and 10 s for e-mail (docs/builds.md)', () => {
    expect(waits(DEFAULT_POST_RETRY.push)).toEqual([2_000, 5_000]);
    expect(waits(DEFAULT_POST_RETRY.chat)).toEqual([2_000, 5_000]);
    expect(waits(DEFAULT_POST_RETRY.email)).toEqual([2_000, 10_000]);
  });

  it('retryDelayMs grows by the coefficient up to the maximum interval, as Temporal computes it', () => {
    const r = { initialIntervalMs: 1_000, backoffCoefficient: 2, maximumIntervalMs: 5_000 };
    expect([1, 2, 3, 4, 5].map((a) => retryDelayMs(a, r))).toEqual([1_000, 2_000, 4_000, 5_000, 5_000]);
  });

  it('isLastAttempt: the policy’s maximumAttempts, 0 meaning unlimited', () => {
    expect(isLastAttempt(2, 3)).toBe(false);
    expect(isLastAttempt(3, 3)).toBe(true);
    expect(isLastAttempt(4, 3)).toBe(true);
    expect(isLastAttempt(1000, 0)).toBe(false);
  });
});

describe('FAILURE_TYPES', () => {
  it('names every failure type once', () => {
    const names = Object.values(FAILURE_TYPES);
    expect(new Set(names).size).toBe(names.length);
    for (const name of names) expect(name).toMatch(/^[A-Z][A-Za-z]+$/);
  });

  it("is what the delivery activity throws by, under the names workflows and the Temporal UI know", () => {
    expect(DELIVERY_TABLE).toBe(DELIVERY_FAILURE_TYPES);
    expect(DELIVERY_TABLE).toEqual({ retrying: 'WebhookDeliveryRetrying', gaveUp: 'WebhookDeliveryGaveUp', dropped: 'WebhookDeliveryDropped' });
  });
});
