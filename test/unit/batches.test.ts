/** Batches (core/batches.ts): the command a batch runs, how long batches are, which file a failure is pinned on. */
import {
  batchBudgetMs,
  batchRestBelowMs,
  batchStride,
  batchCommandLine,
  batchFileOf,
  isBatchCommand,
  MAX_BATCH_MS,
  medianMs,
  MIN_BATCH_MS,
  pinFailures,
  reportedSeconds,
  shareDuration,
  shellQuote,
} from '../../src/core/batches';
import { parseJUnit } from '../../src/core/junit';

describe('the batch command', () => {
  it('is a test command holding {files}', () => {
    expect(isBatchCommand('npx mocha {files}')).toBe(true);
    expect(isBatchCommand('npx mocha')).toBe(false);
    expect(isBatchCommand(null)).toBe(false);
  });

  it('gets the paths as single-quoted words, every {files} replaced, none read as an option', () => {
    expect(batchCommandLine('mocha --reporter xunit {files}', ['test/a.js', "test/it's.js", '-rf.js'])).toBe(
      `mocha --reporter xunit 'test/a.js' 'test/it'\\''s.js' './-rf.js'`,
    );
    expect(batchCommandLine('echo {files}; run {files}', ['a b'])).toBe(`echo 'a b'; run 'a b'`);
  });

  it('quotes what a shell would expand', () => {
    for (const path of ['$(touch pwned).js', '`id`.js', 'a;b.js', 'x*.js', '$HOME']) expect(shellQuote(path)).toBe(`'${path}'`);
  });
});

describe('how long a batch is', () => {
  it('is a lane’s share of the work left, running batches included, within its bounds', () => {
    expect(batchBudgetMs({ pendingMs: 20_000, runningMs: 0 }, 2)).toBe(10_000);
    expect(batchBudgetMs({ pendingMs: 10_000, runningMs: 10_000 }, 2)).toBe(10_000);
    expect(batchBudgetMs({ pendingMs: 3_000, runningMs: 0 }, 2)).toBe(1_500);
    expect(batchBudgetMs({ pendingMs: 1_500, runningMs: 0 }, 2)).toBe(MIN_BATCH_MS);
    expect(batchBudgetMs({ pendingMs: 10 * 60_000, runningMs: 0 }, 1)).toBe(MAX_BATCH_MS);
    expect(batchBudgetMs({ pendingMs: 8_000, runningMs: 0 }, 0)).toBe(8_000);
  });

  it('strides across the list by the shares the untaken work holds', () => {
    expect(batchStride(20_000, 10_000)).toBe(2); // the first of two lanes: every other file
    expect(batchStride(10_000, 10_000)).toBe(1); // the second: the rest
    expect(batchStride(30_000, 7_500)).toBe(4);
    expect(batchStride(500, MIN_BATCH_MS)).toBe(1);
    expect(batchStride(0, 0)).toBe(1);
  });

  // Lanes that claim in turn, each as its last batch ends: how many batches each one runs.
  function plan(totalMs: number, lanes: number, starts: number[]): number[][] {
    let pending = totalMs;
    const busyUntil = starts.slice(0, lanes);
    const running = new Array<{ end: number; ms: number } | null>(lanes).fill(null);
    const batches: number[][] = Array.from({ length: lanes }, () => []);
    while (pending > 0) {
      const lane = busyUntil.indexOf(Math.min(...busyUntil));
      const now = busyUntil[lane]!;
      const runningMs = running.reduce((sum, r, i) => sum + (r && i !== lane ? Math.max(0, r.end - now) : 0), 0);
      const b = Math.min(pending, batchBudgetMs({ pendingMs: pending, runningMs }, lanes));
      pending -= b;
      batches[lane]!.push(b);
      running[lane] = { end: now + b, ms: b };
      busyUntil[lane] = now + b;
    }
    return batches;
  }

  it('gives lanes that start together a process each for a suite of seconds', () => {
    // Sluice's own unit tests, about 22 s of lane time by history, on 2 lanes.
    expect(plan(22_000, 2, [0, 0])).toEqual([[11_000], [11_000]]);
  });

  it('gives a lane that starts late a smaller share, so both finish together', () => {
    const [early, late] = plan(22_000, 2, [0, 4_000]);
    expect(early![0]).toBe(11_000);
    expect(late![0]).toBe(9_000); // (11 s untaken + 7 s of the first batch left) ÷ 2
    expect(early!.reduce((a, b) => a + b, 0)).toBe(13_000);
    expect(4_000 + late!.reduce((a, b) => a + b, 0)).toBe(13_000);
  });

  it('still takes at least a few seconds a batch of a long suite, and at most its cap', () => {
    const lanes = plan(10 * 60_000, 4, [0, 0, 0, 0]);
    for (const l of lanes) for (const b of l) expect(b).toBeLessThanOrEqual(MAX_BATCH_MS);
    expect(lanes.flat().reduce((a, b) => a + b, 0)).toBe(10 * 60_000);
  });

  it('splits a short suite across the lanes on their first batches, and only there', () => {
    // Two `node --test` files of 0.7 s each on two lanes (issue 49): each lane takes one.
    const start = { pendingMs: 1_400, runningMs: 0 };
    expect(batchBudgetMs(start, 2, true)).toBe(700);
    expect(batchRestBelowMs(start, 2, true)).toBe(0); // the other lane is there for the rest
    expect(batchBudgetMs({ pendingMs: 700, runningMs: 700 }, 2, true)).toBe(700);
    // A lane's second batch is a second process start in a row: worth at least MIN_BATCH_MS,
    // and it leaves nothing shorter than one behind.
    expect(batchBudgetMs(start, 2, false)).toBe(MIN_BATCH_MS);
    expect(batchRestBelowMs(start, 2, false)).toBe(MIN_BATCH_MS);
    // A suite of seconds is not short: its first batches are the shares they always were.
    expect(batchBudgetMs({ pendingMs: 3_000, runningMs: 0 }, 2, true)).toBe(1_500);
    expect(batchRestBelowMs({ pendingMs: 3_000, runningMs: 0 }, 2, true)).toBe(MIN_BATCH_MS);
  });

  it('takes the median of the recorded durations for a file never run', () => {
    expect(medianMs([300, 100, 200])).toBe(200);
    expect(medianMs([100, 200, 300, 1000])).toBe(250);
    expect(medianMs([])).toBeNull();
  });
});

describe('pinning a failed batch’s failures on its files', () => {
  const tree = '/ws/session-9';
  const batch = ['test/a.js', 'test/b.js', 'test/c.js', 'test/d.js'];
  // mocha's xunit reporter, with its file attribute (absolute), one suite per file.
  const report = parseJUnit(`<testsuite name="Mocha Tests" tests="4">
    <testcase classname="a" name="adds" time="0.01" file="/ws/session-9/test/a.js"/>
    <testcase classname="b" name="subtracts" time="0.2" file="/ws/session-9/test/b.js"><failure message="expected 1">stack</failure></testcase>
    <testcase classname="b" name="divides" time="0.05" file="/ws/session-9/test/b.js"/>
    <testcase classname="c" name="crashes" time="0" file="./test/c.js"><error message="boom"/></testcase>
  </testsuite>`);

  it('reads the file of each case from the report', () => {
    expect(report.cases.map((c) => c.file)).toEqual(['/ws/session-9/test/a.js', '/ws/session-9/test/b.js', '/ws/session-9/test/b.js', './test/c.js']);
  });

  it('fails the files with a failing case, passes those whose cases passed, and knows nothing of the others', () => {
    expect(pinFailures(batch, report.cases, tree)).toEqual([
      { path: 'test/a.js', status: 'passed', seconds: 0.01 },
      { path: 'test/b.js', status: 'failed', seconds: 0.25 },
      { path: 'test/c.js', status: 'error', seconds: 0 },
      { path: 'test/d.js', status: null, seconds: null },
    ]);
  });

  it('takes a file from the enclosing testsuite (jest-junit with its file attribute)', () => {
    const jest = parseJUnit('<testsuites><testsuite name="d" file="test/d.js"><testcase name="x" time="1"/></testsuite></testsuites>');
    expect(pinFailures(batch, jest.cases, tree)[3]).toEqual({ path: 'test/d.js', status: 'passed', seconds: 1 });
  });

  it('maps only files of the batch: another path, or one outside the tree, pins nothing', () => {
    expect(batchFileOf('/ws/session-9/test/a.js', tree, batch)).toBe('test/a.js');
    expect(batchFileOf('test/e.js', tree, batch)).toBeNull();
    expect(batchFileOf('/elsewhere/test/a.js', tree, batch)).toBeNull();
    expect(batchFileOf('/ws/session-91/test/a.js', tree, batch)).toBeNull();
  });
});

describe('a batch’s time shared out to its files', () => {
  it('gives each what its cases took and the rest by the estimates', () => {
    const shared = shareDuration(
      3_000,
      [
        { path: 'a', estimateMs: 100 },
        { path: 'b', estimateMs: 300 },
      ],
      new Map([['a', 1]]),
    );
    // 1 s of a's cases; the other 2 s split 1:3.
    expect(shared).toEqual(new Map([['a', 1_500], ['b', 1_500]]));
  });
});

describe('a file’s seconds by its report', () => {
  const tree = '/ws/session-7';
  const batch = ['test/a.test.ts', 'test/b.test.ts'];
  // jest-junit with JEST_JUNIT_ADD_FILE_ATTRIBUTE: a testsuite per file, whose time holds the
  // file's loading (1.5 s here) that its cases' own times (0.1 s) leave out.
  const jest = `<testsuites name="jest tests" tests="3" time="2.4">
  <testsuite name="a.test.ts" tests="2" time="1.5"><testcase classname="a one" name="one" time="0.05" file="/ws/session-7/test/a.test.ts"/><testcase classname="a two" name="two" time="0.05" file="/ws/session-7/test/a.test.ts"/></testsuite>
  <testsuite name="b.test.ts" tests="1" time="0.9"><testcase classname="b" name="three" time="0.2" file="/ws/session-7/test/b.test.ts"/></testsuite>
</testsuites>`;

  it('counts a one-file testsuite’s whole time for its file', () => {
    const seconds = reportedSeconds(batch, parseJUnit(jest, { suites: true }).cases, tree);
    expect(seconds).toEqual(new Map([['test/a.test.ts', 1.5], ['test/b.test.ts', 0.9]]));
  });

  it('counts the cases’ own times where a testsuite spans files, or suites are not read', () => {
    const mixed = `<testsuite name="all" time="9"><testcase name="one" time="0.25" file="test/a.test.ts"/><testcase name="two" time="0.5" file="test/b.test.ts"/></testsuite>`;
    expect(reportedSeconds(batch, parseJUnit(mixed, { suites: true }).cases, tree)).toEqual(new Map([['test/a.test.ts', 0.25], ['test/b.test.ts', 0.5]]));
    expect(reportedSeconds(batch, parseJUnit(jest).cases, tree)).toEqual(new Map([['test/a.test.ts', 0.1], ['test/b.test.ts', 0.2]]));
  });
});
