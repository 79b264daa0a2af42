/**
 * The build page's timeline (src/api/web/timeline.ts): the steps as a waterfall from the timing
 * keys, each worker's hooks, batches and files as bars, failures and flakes marked, idle time at
 * the end of a lane, a picture that stays a few hundred shapes for 5,000 files, and markup that
 * escapes whatever a repository named its files.
 */
import { buildTimeline, svgMarkup, type SvgNode, type TimelineInput } from '../../src/api/web/timeline';

const T0 = 1_700_000_000;
const at = (s: number) => new Date((T0 + s) * 1000);

function input(over: Partial<TimelineInput> = {}): TimelineInput {
  return {
    session: 7,
    timing: { ci_received_at: T0, queue_first_allowed_at: T0 + 0.5, setup: T0 + 2, worker_rendezvous: T0 + 3, exec: T0 + 3.1, post_build: T0 + 13, done: T0 + 13.5 },
    running: false,
    now: (T0 + 100) * 1000,
    hooks: [],
    batches: [],
    tests: [],
    open: [],
    workers: [
      { worker: 1, runner: 'host-1' },
      { worker: 2, runner: 'host-2' },
    ],
    ...over,
  };
}

const file = (path: string, worker: number, from: number, seconds: number, over: Partial<TimelineInput['tests'][number]> = {}): TimelineInput['tests'][number] => ({
  path,
  status: 'passed',
  duration_ms: seconds * 1000,
  started_at: at(from),
  finished_at: at(from + seconds),
  worker,
  batch: null,
  attempts: 1,
  flaky: false,
  ...over,
});

/** Every element of the picture, flattened, with its tooltip. */
function shapes(node: SvgNode): { tag: string; attrs: SvgNode[1]; title: string; text: string }[] {
  const [tag, attrs, ...children] = node;
  const title = children.find((c): c is SvgNode => Array.isArray(c) && c[0] === 'title');
  const text = (n: SvgNode | string): string => (typeof n === 'string' ? n : n.slice(2).map((c) => text(c as SvgNode | string)).join(''));
  return [
    { tag, attrs, title: title ? text(title) : '', text: text(node) },
    ...children.filter((c): c is SvgNode => Array.isArray(c)).flatMap(shapes),
  ];
}

it('draws the steps as a waterfall: each key ends the step since the key before it', () => {
  const { picture, keys } = buildTimeline(input());
  const steps = shapes(picture).filter((s) => s.tag === 'rect' && String(s.attrs.class) === 'tl-step');
  expect(steps.map((s) => s.title.replace(/:.*/, ''))).toEqual([
    'queue (until queue_first_allowed_at)',
    'checkout (until setup)',
    'rendezvous (until worker_rendezvous)',
    'test start (until exec)',
    'tests (until post_build)',
    'results (until done)',
  ]);
  const tests = steps[4]!;
  // From exec (3.1 s of 13.5 s) to post_build (13 s).
  expect(Number.parseFloat(String(tests.attrs.x))).toBeCloseTo((3.1 / 13.5) * 100, 2);
  expect(Number.parseFloat(String(tests.attrs.width))).toBeCloseTo((9.9 / 13.5) * 100, 2);
  expect(tests.title).toBe('tests (until post_build): 9.9 s, +3.1 s to +13.0 s');
  // The numbers, one click away.
  expect(keys.map((k) => [k.key, k.at, k.took])).toEqual([
    ['ci_received_at', '+0 ms', ''],
    ['queue_first_allowed_at', '+500 ms', '500 ms'],
    ['setup', '+2.0 s', '1.5 s'],
    ['worker_rendezvous', '+3.0 s', '1.0 s'],
    ['exec', '+3.1 s', '100 ms'],
    ['post_build', '+13.0 s', '9.9 s'],
    ['done', '+13.5 s', '500 ms'],
  ]);
});

it('a running build ends now, its current step running', () => {
  const { timing } = input();
  const { picture } = buildTimeline(input({ timing: { ci_received_at: timing.ci_received_at!, setup: timing.setup!, exec: timing.exec! }, running: true, now: (T0 + 20) * 1000 }));
  const running = shapes(picture).find((s) => s.tag === 'rect' && s.attrs.class === 'tl-running');
  expect(running?.title).toBe('tests: 16.9 s so far, +3.1 s to +20.0 s');
  expect(Number.parseFloat(String(running!.attrs.x)) + Number.parseFloat(String(running!.attrs.width))).toBeCloseTo(100, 1);
});

it('draws a batch as one bar with its file count, the files it ran again after it as files, failures and flakes marked, and idle lanes', () => {
  const batch = { id: 31, worker: 1, files: 3, status: 'failed', exit_code: 1, duration_ms: 4000, note: 'the batch failed (exit code 1): 1 file by its JUnit results, 2 run again one by one', started_at: at(3.2).toISOString(), finished_at: at(9).toISOString() };
  const tests = [
    // Pinned by the batch's JUnit results: drawn as the batch.
    file('a.sh', 1, 3.2, 1, { batch: 31, status: 'failed' }),
    // Run again alone after the batch.
    file('b.sh', 1, 7.3, 0.8, { batch: 31 }),
    file('c.sh', 1, 8.2, 0.7, { batch: 31, flaky: true, attempts: 2 }),
    file('d.sh', 2, 3.2, 9.5),
  ];
  const hooks = [{ name: 'package_setup', worker: 2, status: 'passed', started_at: at(2).toISOString(), finished_at: at(2.9).toISOString(), duration_ms: 900 }];
  const { picture, lanes } = buildTimeline(input({ batches: [batch], tests, hooks }));
  const all = shapes(picture);
  const bars = all.filter((s) => s.tag === 'rect' && s.title);
  expect(bars.find((s) => String(s.attrs.class).includes('tl-batch'))).toMatchObject({
    attrs: expect.objectContaining({ class: 'tl-failed tl-batch' }),
    title: 'batch 31 on worker 1: 3 files, failed (exit code 1), 4.0 s. the batch failed (exit code 1): 1 file by its JUnit results, 2 run again one by one (+3.2 s to +7.2 s)',
  });
  expect(all.some((s) => s.tag === 'text' && s.text === '3 files')).toBe(true);
  expect(bars.map((s) => s.title).filter((t) => /^[a-d]\.sh/.test(t))).toEqual([
    'b.sh: passed, 800 ms (+7.3 s to +8.1 s)',
    'c.sh: passed (flaky), 2 runs, 700 ms (+8.2 s to +8.9 s)',
    'd.sh: passed, 9.5 s (+3.2 s to +12.7 s)',
  ]);
  expect(bars.find((s) => s.title.startsWith('package_setup'))?.title).toBe('package_setup hook on worker 2: passed, 900 ms (+2.0 s to +2.9 s)');
  // A mark over the failed batch and over the flaky file.
  expect(all.filter((s) => s.tag === 'use').map((s) => s.attrs.class)).toEqual(['tl-mark-failed', 'tl-mark-flaky']);
  // Worker 1 ended 3.8 s before worker 2: idle, drawn and counted.
  expect(all.find((s) => s.attrs.class === 'tl-idle')?.title).toBe('worker 1 idle for 3.8 s while the last worker still ran tests');
  expect(all.filter((s) => s.attrs.class === 'tl-label').map((s) => s.text)).toEqual(expect.arrayContaining(['tests 5.7 s · idle 3.8 s', 'tests 9.5 s · last']));
  expect(lanes).toEqual([
    { worker: '1', runner: 'host-1', files: 3, batches: 1, failed: 1, flaky: 1, from: '+3.2 s', to: '+8.9 s', took: '5.7 s', idle: '3.8 s' },
    { worker: '2', runner: 'host-2', files: 1, batches: 0, failed: 0, flaky: 0, from: '+3.2 s', to: '+12.7 s', took: '9.5 s', idle: '0 ms' },
  ]);
  // Described for those who cannot see it.
  expect(all.find((s) => s.tag === 'desc')?.text).toMatch(/2 workers: worker 1 3 files in 5\.7 s, worker 2 1 file in 9\.5 s\. 1 file failed\. 1 file flaky\./);
});

it('stays a few hundred shapes for 5,000 files, keeping every failure visible', () => {
  const tests: TimelineInput['tests'][number][] = [];
  for (let lane = 1; lane <= 2; lane += 1) {
    let t = 3.1;
    for (let i = 0; i < 2500; i += 1) {
      const seconds = 0.003 + (i % 5) * 0.001;
      tests.push(file(`lane${lane}/t${i}.sh`, lane, t, seconds, i === 1000 && lane === 2 ? { status: 'failed' } : i === 2000 && lane === 1 ? { flaky: true, attempts: 2 } : {}));
      t += seconds + 0.0003;
    }
  }
  const { picture, lanes } = buildTimeline(input({ tests }));
  const all = shapes(picture);
  const fileBars = all.filter((s) => s.tag === 'rect' && /^tl-(passed|failed|flaky)$/.test(String(s.attrs.class)));
  expect(fileBars.length).toBeLessThan(20);
  expect(fileBars.filter((s) => s.attrs.class === 'tl-failed')).toHaveLength(1);
  expect(fileBars.filter((s) => s.attrs.class === 'tl-flaky')).toHaveLength(1);
  // Merged segments say what they hold.
  expect(fileBars.find((s) => s.attrs.class === 'tl-passed')?.title).toMatch(/^\d+ files passed, .*: lane1\/t0\.sh, lane1\/t1\.sh, .* and \d+ more$/);
  expect(JSON.stringify(picture).length).toBeLessThan(20_000);
  expect(lanes.map((l) => l.files)).toEqual([2500, 2500]);
});

it('bins a lane whose outcomes keep changing, a few pixels a bin, each bin its worst outcome', () => {
  // 2,500 files a lane, every other one failing: no two neighbours share an outcome.
  const tests: TimelineInput['tests'][number][] = [];
  for (let lane = 1; lane <= 2; lane += 1) {
    for (let i = 0; i < 2500; i += 1) tests.push(file(`lane${lane}/t${i}.sh`, lane, 3.1 + i * 0.004, 0.003, i % 2 === 1 ? { status: 'failed' } : {}));
  }
  const all = shapes(buildTimeline(input({ tests })).picture);
  const bars = all.filter((s) => s.tag === 'rect' && /^tl-(passed|failed)$/.test(String(s.attrs.class)));
  // 1,000 pixels of time, three a bin: at most 334 bars a lane; and each bin held a failure.
  expect(bars.length).toBeLessThanOrEqual(2 * 334);
  expect(bars.every((s) => s.attrs.class === 'tl-failed')).toBe(true);
  expect(bars[0]!.title).toMatch(/^\d+ files failed, /);
});

it('escapes names in the markup and draws only its own tags and attributes', () => {
  const { picture } = buildTimeline(input({ tests: [file('<script>alert(1)</script>&.sh', 1, 3.2, 1, { status: 'failed' })] }));
  const markup = svgMarkup(picture);
  expect(markup).not.toContain('<script');
  expect(markup).toContain('&lt;script&gt;alert(1)&lt;/script&gt;&amp;.sh');
  expect(markup).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg" class="tl" width="100%" height="\d+" role="img" aria-labelledby="tl-title tl-desc"><title id="tl-title">Timeline of build #7<\/title>/);
  expect(svgMarkup(['svg', { onload: 'alert(1)', class: 'x' }, ['script', {}, 'alert(2)'], ['use', { href: 'https://evil.test/x.svg#a' }]])).toBe('<svg class="x"><use></use></svg>');
});
