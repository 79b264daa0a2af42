import { fromWire, toWire } from '../../src/core/wire';

describe('values across the runner API (core/wire.ts)', () => {
  it('bring back what JSON has no form for: Date, Map, Set, undefined in arrays', () => {
    const value = {
      at: new Date('2026-11-26T17:00:00.123Z'),
      durations: new Map([['test/a.js', 1200], ['test/b.js', 30]]),
      held: new Set(['test/a.js']),
      nested: [{ when: new Date(0), gone: undefined }, undefined, null, 'text', 4],
    };
    const back = fromWire(JSON.parse(JSON.stringify(toWire(value))));
    expect(back).toEqual({ ...value, nested: [{ when: new Date(0) }, undefined, null, 'text', 4] });
    expect((back as typeof value).durations).toBeInstanceOf(Map);
    expect((back as typeof value).held).toBeInstanceOf(Set);
    expect((back as typeof value).at.getTime()).toBe(value.at.getTime());
  });

  it('leaves plain JSON as it is', () => {
    const plain = { a: [1, 'two', { three: true }], b: null };
    expect(fromWire(JSON.parse(JSON.stringify(toWire(plain))))).toEqual(plain);
  });
});
