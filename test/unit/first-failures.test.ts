import { FIRST_SHARE, orderFirstFailures, type FirstFailureHints, type ListedFile } from '../../src/core/firstFailures';

const none: FirstFailureHints = { changed: new Set(), affectedBy: new Map(), failures: new Map() };
const hints = (h: Partial<FirstFailureHints>): FirstFailureHints => ({ ...none, ...h });

/** 88 files as the timing history orders them, longest first (express-like: 50–500 ms each). */
const usual: ListedFile[] = Array.from({ length: 88 }, (_, i) => ({ path: `test/f${String(i).padStart(2, '0')}.js`, estimateMs: 500 - i * 5 }));
const paths = (files: Array<{ path: string }>) => files.map((f) => f.path);

it('keeps the usual order, nothing first, when nothing points at a file', () => {
  const out = orderFirstFailures(usual, none);
  expect(paths(out)).toEqual(paths(usual));
  expect(out.every((f) => f.first === null)).toBe(true);
});

it('runs a changed test file first, then one the map says read a changed file, then one that failed lately, most often first', () => {
  const out = orderFirstFailures(
    usual,
    hints({
      changed: new Set(['lib/router/index.js', 'test/f80.js']),
      affectedBy: new Map([['test/f70.js', ['lib/router/index.js']]]),
      failures: new Map([
        ['test/f60.js', { failed: 1, builds: 10 }],
        ['test/f75.js', { failed: 3, builds: 10 }],
      ]),
    }),
  );
  expect(out.slice(0, 4).map((f) => [f.path, f.first])).toEqual([
    ['test/f80.js', 'changed'],
    ['test/f70.js', 'affected by lib/router/index.js'],
    ['test/f75.js', 'failed in 3 of the last 10 builds'],
    ['test/f60.js', 'failed in 1 of the last 10 builds'],
  ]);
  // The rest as they were.
  expect(paths(out.slice(4))).toEqual(paths(usual).filter((p) => !['test/f80.js', 'test/f70.js', 'test/f75.js', 'test/f60.js'].includes(p)));
  expect(out).toHaveLength(usual.length);
});

it('gives every reason a file has, and names at most three changed files it read', () => {
  const out = orderFirstFailures(
    usual,
    hints({
      changed: new Set(['test/f87.js']),
      affectedBy: new Map([['test/f87.js', ['a.js', 'b.js', 'c.js', 'd.js', 'e.js']]]),
      failures: new Map([['test/f87.js', { failed: 1, builds: 1 }]]),
    }),
  );
  expect(out[0]).toEqual({ path: 'test/f87.js', estimateMs: 65, first: 'changed, affected by a.js, b.js, c.js and 2 more, failed in 1 of the last 1 build' });
});

it(`moves at most ${FIRST_SHARE * 100} % of the estimated test time ahead of the usual order, the likeliest first`, () => {
  const failures = new Map(usual.map((f, i) => [f.path, { failed: 1 + (i % 3), builds: 10 }]));
  const out = orderFirstFailures(usual, hints({ failures }));
  const total = usual.reduce((sum, f) => sum + f.estimateMs!, 0);
  const moved = out.filter((f) => f.first !== null);
  expect(moved.length).toBeGreaterThan(1);
  expect(moved.reduce((sum, f) => sum + f.estimateMs!, 0)).toBeLessThanOrEqual(FIRST_SHARE * total);
  // The most often failed first, the shortest of them first (a less likely file may fill what the bound leaves).
  const keys = moved.map((f) => [-failures.get(f.path)!.failed, f.estimateMs!]);
  expect(keys).toEqual([...keys].sort((a, b) => a[0]! - b[0]! || a[1]! - b[1]!));
  expect(moved[0]!.first).toBe('failed in 3 of the last 10 builds');
});

it('always moves the top file, even one longer than the bound: one file first costs at most its own time', () => {
  const files: ListedFile[] = [
    { path: 'a', estimateMs: 1000 },
    { path: 'b', estimateMs: 900 },
    { path: 'c', estimateMs: 800 },
  ];
  const out = orderFirstFailures(files, hints({ changed: new Set(['c', 'b']) }));
  expect(out.map((f) => [f.path, f.first])).toEqual([
    ['c', 'changed'],
    ['a', null],
    ['b', null],
  ]);
});

it('moves nothing in a list of one file: it runs first anyway', () => {
  expect(orderFirstFailures([{ path: 'a', estimateMs: 10 }], hints({ changed: new Set(['a']) }))).toEqual([{ path: 'a', estimateMs: 10, first: null }]);
});

it('counts a file of unknown length as the middle one, and every file alike when none is known', () => {
  const unknown: ListedFile[] = Array.from({ length: 40 }, (_, i) => ({ path: `t${i}`, estimateMs: null }));
  const out = orderFirstFailures(unknown, hints({ changed: new Set(['t5', 't9', 't30']) }));
  // 5 % of 40 equal files is two of them.
  expect(out.filter((f) => f.first !== null).map((f) => f.path)).toEqual(['t5', 't9']);
});
